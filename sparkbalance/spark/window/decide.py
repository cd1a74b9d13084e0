"""Whether a window group is split: the key and order columns, the first look, the payoff
rule and, when a split may pay, the statistics pass (the decision half of
:mod:`sparkbalance.spark.window.windows`, which builds what is decided here).

``decide`` returns a :class:`Taken` (the group's columns and statistics) or None after one
log line naming the columns and why they run as plain Spark runs them.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from sparkbalance.spark.sql import hash_columns as sqlhash
from sparkbalance.spark.window import frames, memory, payoff, sample, segments as sg

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame

_LOG = logging.getLogger("sparkbalance.window")
_BARE = re.compile(r"Column<'([A-Za-z_][A-Za-z0-9_]*)'>")


def bare(expr: "Column", columns: list[str]) -> str | None:
    """The name of the column of ``columns`` that ``expr`` merely references, else None."""
    m = _BARE.fullmatch(str(expr))
    return m.group(1) if m and m.group(1) in columns else None


def user(name: str, tmp: dict[str, str]) -> str:
    return next(u for u, t in tmp.items() if t == name)


@dataclass
class Taken:
    """A group's decision to split: its key and order columns (``hidden`` the expressions
    added as columns) and the statistics pass."""

    pcols: list
    ocols: list
    hidden: dict
    ptypes: list
    otypes: list
    order: tuple
    ks: Any
    hot_count: int
    #: per whole-partition summary (``<column>_<aggregate>``), its exact value for each
    #: hot key, from the statistics pass; None where the pass did not give them all
    totals: dict | None = None


def decide(df: "DataFrame", group: list[tuple[str, frames.Split]], n: int,
            tmp: dict[str, str]) -> Taken | None:
    """Whether ``group`` is split (its statistics then), else None (one log line why)."""
    from pyspark.sql import functions as F
    lead = next((s for _, s in group if s.kind != "whole"), group[0][1]).wc
    order = lead.order if any(s.kind != "whole" for _, s in group) else ()
    # A window without PARTITION BY is one partition of every row (Spark moves them all
    # to one task): one constant key, hot, cut like any other.
    partition = lead.partition or (F.lit(0),)
    # a key that is a column of df is used as it is; any other expression becomes a
    # hidden column (a copy of a column would be carried through the exchange and the sort)
    pcols = [bare(e, df.columns) or f"__sb_p{j}" for j, e in enumerate(partition)]
    ocols = [bare(k.expr, df.columns) or f"__sb_o{j}" for j, k in enumerate(order)]
    hidden = {**{c: e for c, e in zip(pcols, partition) if c.startswith("__sb_")},
              **{c: k.expr for c, k in zip(ocols, order) if c.startswith("__sb_")}}
    d = df.withColumns(hidden) if hidden else df    # Spark Connect refuses an empty map
    try:
        sqlhash.check_key_columns(d, pcols)
    except (TypeError, ValueError) as exc:  # a key type the balanced placement cannot hash
        for name, s in group:
            _LOG.warning("with_window_columns: column %r runs as plain Spark runs it: its "
                         "partition key cannot be placed (%s)", user(name, tmp), exc)
        return None
    mode = payoff.split_mode(df)
    p_cores = payoff.cores(df, n) if mode == "auto" else n
    # what a task can hold and a row takes: plain Spark's hot task spills the rest
    # one read of the plan's statistics: its rows (the first guess) and bytes per row
    rows_guess, bytes_per_row = memory.plan_size(d) if mode != "never" else (None, None)
    mem = ({"memory": memory.task_memory(df), "bytes_per_row": bytes_per_row}
           if mode == "auto" else {})
    split, why, guess, candidates = True, "", None, []
    if mode == "never":
        split, why = payoff.decide(np.zeros(0), 0.0, n, mode)
    elif mode == "auto":
        guess = rows_guess
        if guess is not None:   # not even a key holding every row could pay: no job at all
            split, why = payoff.decide(np.array([guess]), guess, n, mode, cores=p_cores,
                                       bound=True, **mem)
        if split:
            def could_pay(rows: float, total: float) -> bool:
                return rows > sg.HOT_SHARE * total / n and payoff.decide(
                    np.array([rows]), total, n, mode, cores=p_cores, bound=True, **mem)[0]
            # a bounded look at a few thousand keys: the full pass only when a key might pay
            look = (sample.bounded_look(d, pcols, n, could_pay, guess)
                    if guess is not None else sample.first_look(d, pcols))
            # the full pass is paid only when the look's own estimate of the hottest key
            # pays: its upper bound (which decided the spread above) would send every
            # marginal key to a pass that costs a read of every row and then runs plain
            top = float(np.max(look.counts)) if len(look.counts) else 0.0
            candidates = [look.keys[i] for i in range(min(len(look.keys), 4 * n))
                          if sample.top_bound(look, i) > sg.HOT_SHARE * look.total / n]
            hot = np.array([top]) if top > sg.HOT_SHARE * look.total / n else np.zeros(0)
            split, why = payoff.decide(hot, look.total, n, mode, cores=p_cores, **mem)
            guess = look.total
    else:   # always: no first look
        guess = rows_guess
    # the whole-partition columns' aggregates ride on the pass where the look named the
    # keys that can be hot (their exact values replace a branch over the input)
    summarised = [s for _, s in group if s.summaries]
    aggs = ([(f"{name}_{a}", agg, op) for name, s in group
             for a, (agg, op) in s.summaries.items()]
            if summarised and all(s.kind == "whole" for s in summarised) else [])
    if split:
        schema = {f.name: f.dataType for f in d.schema.fields}
        ks = sample.draw(d, pcols, ocols, order, n, rows_guess=guess,   # the full pass
                         candidates=candidates, ptypes=[schema[c] for c in pcols],
                         aggs=aggs)
        total = max(ks.total, 1.0)
        # heaviest first: the hot keys are a prefix, at most 4n of them (more would only
        # lengthen the query; the rest are placed whole like the cold keys)
        hot_count = min(4 * n, int(np.count_nonzero(ks.counts > sg.HOT_SHARE * total / n)))
        split, why = payoff.decide(ks.counts[:hot_count], total, n, mode, cores=p_cores,
                                   **mem)
    if not split:
        _LOG.info("with_window_columns: columns %s run as plain Spark runs them: %s",
                  ", ".join(repr(user(name, tmp)) for name, _ in group), why)
        return None
    hot_keys = ks.keys[:hot_count]
    totals = ({a: [ks.totals[k][a] for k in hot_keys] for a, _, _ in aggs}
              if aggs and all(k in ks.totals for k in hot_keys) else None)
    return Taken(pcols, ocols, hidden, [schema[c] for c in pcols],
                 [schema[c] for c in ocols], tuple(order), ks, hot_count, totals)
