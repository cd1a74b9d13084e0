"""``with_window_columns``: window functions over skewed partition keys, split exactly.

``Window.partitionBy(user).orderBy(ts)`` with one hot user puts all of that user's rows in
one task, and nothing in Spark splits it (adaptive execution splits join partitions only).
Here each spec's partition key is measured (:mod:`sparkbalance.spark.window.decide` with
:mod:`sparkbalance.spark.window.sample`: no job when the plan's row estimate shows no key
could pay, else a bounded look at a few thousand keys, and the full pass only when a key
might pay for the split); cold keys are placed whole
(:mod:`sparkbalance.spark.window.cold`: the heavier ones listed, the rest by Spark's hash),
hot keys cut into contiguous ranges of the order key spread over partitions
(:mod:`sparkbalance.spark.window.segments`), all in **one exchange**
(:func:`sparkbalance.spark.sql.placement.place`). Each column is computed over its range and
corrected from small per-range summaries (a whole-partition column's hot-key totals, where
the look named the keys that can be hot, exact from the statistics pass itself), or given a
halo of neighbouring rows (:mod:`sparkbalance.spark.window.frames`); what cannot be split exactly runs as plain Spark
runs it, with one log line naming the column and why. Columns whose specs share partition
and order expressions share the statistics, the cut and the exchange.

Only DataFrame expressions are used (no RDD, no py4j call that runs a job), so the same code
runs on a Spark Connect session.

Examples
--------
>>> w = Window.partitionBy("user").orderBy("ts")                        # doctest: +SKIP
>>> out = with_window_columns(df, rn=F.row_number().over(w),            # doctest: +SKIP
...                           total=F.sum("amount").over(w))
"""
from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from sparkbalance.routing.base import check_num_partitions
from sparkbalance.routing.hash import HashPartitioner
from sparkbalance.spark.session import conf
from sparkbalance.spark.sql.placement import place
from sparkbalance.spark.sql.route import PID_COL, with_partition_id
from sparkbalance.spark.window import cold, decide, frames, segments as sg
from sparkbalance.spark.window.halo import halo_targets
from sparkbalance.spark.window.spec import UNBOUNDED, WindowColumn, window_column

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame

__all__ = ["with_window_columns", "explain_split"]

_LOG = logging.getLogger("sparkbalance.window")
_HIDX, _SEG, _TSEG, _HALO, _HOT = "__sb_hidx", "__sb_seg", "__sb_tseg", "__sb_halo", "__sb_hot"


def _F():
    from pyspark.sql import functions as F
    return F


def _ref(name: str) -> "Column":
    return _F().col("`" + name.replace("`", "``") + "`")


def explain_split(df: "DataFrame", **columns: "Column") -> dict[str, str]:
    """How each window column would be computed: its kind, or ``plain: <why>``.

    Examples
    --------
    >>> explain_split(df, r=F.rank().over(w), s=F.stddev("x").over(w))    # doctest: +SKIP
    {'r': 'rank', 's': 'plain: stddev has no per-range summary to combine'}
    """
    splits = _splits(df, columns)
    return {n: (s.kind if s.kind != "plain" else f"plain: {s.reason}")
            for n, s in splits.items()}


def _splits(df: "DataFrame", columns: dict[str, "Column"]) -> dict[str, frames.Split]:
    parsed = {name: window_column(c) for name, c in columns.items()}
    wanted = []
    for wc in parsed.values():
        if wc is None:
            continue
        if wc.function in ("avg", "mean") and wc.args:
            wanted.append(wc.args[0])
        if wc.frame is not None and wc.frame.kind == "range" and len(wc.order) == 1:
            wanted.append(wc.order[0].expr)
    types: dict[str, str] = {}
    if wanted:  # one analysis for every type asked about
        fields = df.select(*wanted).schema.fields
        types = {str(c): f.dataType.simpleString() for c, f in zip(wanted, fields)}
    out = {}
    for name, wc in parsed.items():
        if wc is None and not _is_window(columns[name]):
            out[name] = frames.Split("expression", None)
        else:
            out[name] = frames.split_of(wc, types)
    return out


def _is_window(col: "Column") -> bool:
    text = str(col)
    return " OVER (" in text or "WindowExpression(" in text


def with_window_columns(df: "DataFrame", num_partitions: int | None = None,
                        **columns: "Column") -> "DataFrame":
    """What ``df.withColumns(columns)`` returns, row for row, with skewed windows split.

    Parameters
    ----------
    df : the DataFrame.
    num_partitions : partitions the windows are computed on (default
        ``spark.sql.shuffle.partitions``).
    columns : name -> Column; window Columns as users write them
        (``F.row_number().over(w)``, ``F.sum("x").over(w.rowsBetween(-5, 0))``, ...), any
        other Column computed as ``withColumns`` computes it.

    Returns
    -------
    DataFrame with ``df``'s columns (a name of ``columns`` already in ``df`` replaced in
    place) then the new ones, as ``df.withColumns(columns)``.

    Examples
    --------
    >>> w = Window.partitionBy("user").orderBy("ts")                     # doctest: +SKIP
    >>> with_window_columns(df, 8, rn=F.row_number().over(w)).columns   # doctest: +SKIP
    ['user', 'ts', 'amount', 'rn']
    """
    from pyspark.sql import Column
    for name, c in columns.items():
        if not isinstance(c, Column):
            raise TypeError(f"column {name!r} is a {type(c).__name__}; expected a Column "
                            "(e.g. F.row_number().over(window))")
    if not columns:
        return df
    n = check_num_partitions(conf.default_partitions(df) if num_partitions is None
                             else num_partitions)
    # Spark's own analysis first: a spec plain Spark refuses fails here, before any job,
    # and the plain result's types are the ones every corrected column is cast to.
    as_plain = df.withColumns(columns)
    expected = as_plain.schema
    result_types = {name: expected[name].dataType for name in columns}
    splits = _splits(df, columns)
    tmp = {name: f"__sb_w{j}" for j, name in enumerate(columns)}
    plain = {tmp[name]: columns[name] for name, s in splits.items()
             if s.kind in ("plain", "expression")}
    for name, s in splits.items():
        if s.kind == "plain":
            _LOG.warning("with_window_columns: column %r runs as plain Spark runs it: %s",
                         name, s.reason)
    # every group's decision first, on df (a group's keys are df's): when none splits, the
    # result is plain Spark's own plan, built by no further driver round trip
    groups = _groups({tmp[n_]: s for n_, s in splits.items() if tmp[n_] not in plain})
    taken = [decide.decide(df, group, n, tmp) for group in groups]
    if all(t is None for t in taken):
        return as_plain
    cur = df.withColumns(plain) if plain else df
    for group, t in zip(groups, taken):
        cur = _plain_group(cur, group) if t is None else _run_group(
            cur, group, n, {tmp[u]: r for u, r in result_types.items()}, t)
    out = [_ref(tmp[c]).alias(c) if c in columns else _ref(c) for c in df.columns]
    out += [_ref(tmp[c]).alias(c) for c in columns if c not in df.columns]
    return cur.select(*out)


def _groups(splits: dict[str, frames.Split]) -> list[list[tuple[str, frames.Split]]]:
    """Columns that share partition and order expressions, in first-seen order; a
    whole-partition column joins the first group of its partitioning (it needs no order)."""
    groups: dict[tuple, list] = {}
    for name, s in splits.items():
        if s.kind != "whole":
            key = (tuple(map(str, s.wc.partition)),
                   tuple((str(k.expr), k.ascending, k.nulls_first) for k in s.wc.order))
            groups.setdefault(key, []).append((name, s))
    for name, s in splits.items():
        if s.kind == "whole":
            part = tuple(map(str, s.wc.partition))
            key = next((k for k in groups if k[0] == part), (part, ()))
            groups.setdefault(key, []).append((name, s))
    return list(groups.values())


def _run_group(df: "DataFrame", group: list[tuple[str, frames.Split]], n: int,
               result_types: dict[str, Any], taken: decide.Taken) -> "DataFrame":
    F = _F()
    pcols, ocols, order = taken.pcols, taken.ocols, taken.order
    ptypes, otypes = taken.ptypes, taken.otypes
    d = df.withColumns(taken.hidden) if taken.hidden else df
    ks, hot_count = taken.ks, taken.hot_count
    total = max(ks.total, 1.0)
    seg_rows = max(1.0, sg.SEGMENT_SHARE * total / n)
    counts = ks.counts
    single = len(pcols) == 1
    hot = [sg.HotKey((k,) if single else tuple(k), float(c), sample=ks.samples[k])
           for k, c in zip(ks.keys[:hot_count], counts[:hot_count])]
    cold_rows = max(0.0, total - float(counts[:hot_count].sum()))
    loads, warm = cold.place_warm(ks.keys[hot_count:], counts[hot_count:], cold_rows,
                                  ks.null_rows, n)
    if hot and order:   # ranges cut to fill the partitions' room, each placed
        sg.fill_segments(hot, loads)
    elif hot:  # a whole-partition aggregate only: any cut will do
        for h in hot:
            h.bounds = [None] * (max(1, math.ceil(h.count / seg_rows)) - 1)
        sg.assign_segments(hot, loads)
    d = d.withColumn(_HIDX, sg.hot_index(pcols, ptypes, hot))
    d = d.withColumn(_SEG, sg.segment_expr(_HIDX, ocols, order, otypes, hot, df.columns))
    counted = d   # each row once, in its own segment: what the summaries count
    # halo columns that reach no other row (lag/lead by 0, ROWS 0 to 0) are exact locally
    halo_splits = [s for _, s in group if s.kind == "halo" and (s.before or s.after or s.reach)]
    if hot and halo_splits:
        d = halo_targets(d, _HIDX, _SEG, _TSEG, _HALO, ocols, order, otypes, hot, halo_splits)
        d = _thin_copies(d, [c for c in df.columns if c not in pcols and c not in ocols],
                         halo_splits)
    else:
        halo_splits = []
        d = d.withColumn(_TSEG, F.col(_SEG))
    d, pid = _cold_pid(d, pcols, ptypes, warm, n)
    if hot:
        # one SQL expression (one py4j round trip): the segment's partition, looked up
        # in one array of every hot segment's partition
        flat = ", ".join(str(int(p)) for h in hot for p in h.pids)
        offsets = np.cumsum([0] + [h.segments for h in hot])[:-1].tolist()
        at = (f"element_at(array({', '.join(str(int(o)) for o in offsets)}), {_HIDX} + 1)"
              if len(hot) > 1 else "0")
        pid = (f"CASE WHEN {_HIDX} >= 0 THEN element_at(array({flat}), {at} + {_TSEG} + 1) "
               f"ELSE {pid} END")
    d = d.withColumn(PID_COL, F.expr(f"CAST({pid} AS INT)"))
    # what the exchange and the sort carry: the row, its key, order, target segment, the
    # halo flag where copies exist, and the partition (not the hot index or own segment)
    placed = place(d.drop(_HIDX, _SEG), n, PID_COL)
    keys = [F.col(PID_COL), *[F.col(c) for c in pcols], F.col(_TSEG)]
    # The halo columns first, over a segment and its halo copies, and beside them what can
    # read the segment's own rows only (frames.beside_halo); the copies are dropped before
    # the other columns. All share the partitioning and the order: one sort.
    win = placed
    halo_local: dict[str, Any] = {}
    other_local: dict[str, Any] = {}
    # one window operator buffers the segment's rows, not two, where nothing is left after
    lead = halo_splits[0].wc if halo_splits else None
    for name, s in group:
        if lead is not None and frames.beside_halo(s):
            over = _over_factory(lead if s.kind == "whole" else s.wc, keys)
            halo_local.update(frames.local_columns(s, name, over, own=~F.col(_HALO)))
            continue
        local = frames.local_columns(s, name, _over_factory(s.wc, keys))
        (halo_local if s.kind == "halo" else other_local).update(local)
    if halo_local:
        win = win.withColumns(halo_local)
    if halo_splits:
        win = win.where(~F.col(_HALO))
    if other_local:
        win = win.withColumns(other_local)
    summaries = [(name, s) for name, s in group if s.summaries]
    if hot and summaries and taken.totals is not None:
        # whole-partition columns only, their hot keys' totals exact from the statistics
        # pass: looked up by the row's hot key, no branch over the input, no join
        hot_flag, total_ = _literal_totals(taken.totals, sg.hot_index(pcols, ptypes, hot))
    else:
        if hot and summaries:
            # a small aggregation of the hot keys' rows before the exchange (summaries
            # taken from the placed rows would not reuse the exchange: Spark prunes and
            # filters below it, making it another one)
            whole = all(s.kind == "whole" for _, s in summaries)
            win = win.join(F.broadcast(_summary(counted, pcols, summaries, whole)),
                           on=[*pcols] if whole else [*pcols, _TSEG], how="left")
        else:
            win = win.withColumn(_HOT, F.lit(None).cast("boolean"))
        hot_flag = F.col(_HOT).isNotNull()

        def total_(a: str, _n: str) -> "Column":
            return F.col(f"{_n}_t_{a}")
    final = {}
    for name, s in group:
        def before(a: str, _n: str = name) -> "Column":
            return F.col(f"{_n}_b_{a}")
        final[name] = frames.final_column(s, name, before,
                                          lambda a, _n=name: total_(a, _n), hot_flag).cast(
            result_types[name])
    win = win.withColumns(final)
    keep = [c for c in df.columns] + [name for name, _ in group]
    return win.select(*[_ref(c) for c in keep])


#: Types whose values vary in size: a halo copy carries them as null (or empty).
_WIDE = ("StringType", "BinaryType", "ArrayType", "MapType", "StructType", "VariantType")


def _thin_copies(d: "DataFrame", columns: list[str], halo_splits: list) -> "DataFrame":
    """``d`` with the halo copies' values of wide columns no halo column reads set to null
    (an empty string or binary where the column is not nullable): a copy serves only the
    halo columns and is dropped before any other is computed, so only its key, order and
    the halo functions' arguments are read. A column whose name occurs anywhere in a halo
    column's text is kept whole (a name is not parsed out of an expression, so a mention is
    taken as a use). The copies then cost the exchange and the sort a few bytes, not a row
    (rows of a kilobyte: ~8 % of the shuffled bytes at a 90 % key with a 21-row frame)."""
    F = _F()
    texts = " ".join(s.wc.text for s in halo_splits).lower()
    fields = {f.name: f for f in d.schema.fields}
    thin = {}
    for c in columns:
        f = fields.get(c)
        if f is None or c.lower() in texts or type(f.dataType).__name__ not in _WIDE:
            continue
        kind = type(f.dataType).__name__
        if f.nullable:
            thin[c] = F.when(~F.col(_HALO), _ref(c))
        elif kind in ("StringType", "BinaryType"):
            empty = F.lit("") if kind == "StringType" else F.lit(bytearray())
            thin[c] = F.when(~F.col(_HALO), _ref(c)).otherwise(empty)
    return d.withColumns(thin) if thin else d


def _cold_pid(d: "DataFrame", pcols: list[str], ptypes: list, warm: list, n: int
              ) -> tuple["DataFrame", str]:
    """SQL of a cold row's partition (:mod:`sparkbalance.spark.window.cold`); a listed key
    without a SQL literal leaves the list empty, a key type with floats inside a struct or
    array is routed by the stable key hash instead (the one that normalises them)."""
    try:
        return d, cold.cold_partition(pcols, ptypes, warm, n)
    except TypeError:
        return d, cold.cold_partition(pcols, ptypes, [], n)
    except ValueError:
        return with_partition_id(d, HashPartitioner(n), *pcols), f"`{PID_COL}`"


def _plain_group(df: "DataFrame", group: list[tuple[str, frames.Split]]) -> "DataFrame":
    return df.withColumns({name: s.wc.fn.over(_spec(s.wc)) for name, s in group})


def _summary(d: "DataFrame", pcols: list[str], summaries: list, whole: bool = False
             ) -> "DataFrame":
    """Per (hot key, segment): each summary over the earlier segments and over all
    (``d``: the rows with their segment, before any halo copy); with ``whole`` (only
    whole-partition columns) per hot key: the aggregate of its rows, no segment needed."""
    from pyspark.sql import Window
    F = _F()
    aggs, ops = [], {}
    for name, s in summaries:
        for a, (agg, op) in s.summaries.items():
            aggs.append(agg.alias(f"{name}_{a}"))
            ops[f"{name}_{a}"] = (name, a, op)
    hot_rows = d.where(F.col(_HIDX) >= 0)
    if whole:
        # the key's aggregate over its rows is the segments' combined: the segment
        # expression (a comparison tree over the cut points) is then pruned from this branch
        # (one task reads the few per-key rows for the broadcast)
        return hot_rows.groupBy(*pcols).agg(*aggs).coalesce(1).select(
            *pcols, F.lit(True).alias(_HOT),
            *[F.col(c).alias(f"{name}_t_{a}") for c, (name, a, _) in ops.items()])
    # the rows before the halo copies (each counted once, by its own segment); one task
    # combines the few per-segment rows, so the window below needs no exchange of its own
    seg = (hot_rows.groupBy(*pcols, F.col(_SEG).alias(_TSEG)).agg(*aggs)
           .coalesce(1))
    w = Window.partitionBy(*pcols).orderBy(_TSEG)
    earlier = w.rowsBetween(Window.unboundedPreceding, -1)
    whole = w.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    fn = {"sum": F.sum, "min": F.min, "max": F.max}
    cols = [*pcols, F.col(_TSEG), F.lit(True).alias(_HOT)]
    for c, (name, a, op) in ops.items():
        cols.append(fn[op](c).over(earlier).alias(f"{name}_b_{a}"))
        cols.append(fn[op](c).over(whole).alias(f"{name}_t_{a}"))
    return seg.select(*cols)


def _literal_totals(totals: dict, hidx: "Column") -> tuple["Column", Any]:
    """(the row's key is hot, ``total(a, column)``) where every summary is a hot key's total
    (``totals``: ``<column>_<a>`` -> one value per hot key, :attr:`decide.Taken.totals`):
    literals looked up by the row's hot index ``hidx``."""
    F = _F()

    def total(a: str, name: str) -> "Column":
        # a CASE whose last hot key is its ELSE: not nullable where no value is null (as
        # a count is), which a lookup in an array is not on PySpark 3.5
        values = totals[f"{name}_{a}"]
        out = F.lit(values[-1])
        for i in reversed(range(len(values) - 1)):
            out = F.when(hidx == i, F.lit(values[i])).otherwise(out)
        return out
    return hidx >= 0, total


def _spec(wc: WindowColumn, partition: list | None = None, frame: Any = "own") -> Any:
    from pyspark.sql import Window
    part = list(wc.partition) if partition is None else partition
    if frame == "whole":
        return Window.partitionBy(*part)
    spec = Window.partitionBy(*part).orderBy(*[k.sort_column(k.expr) for k in wc.order])
    fr = wc.frame if frame == "own" else frame
    if fr is None:
        return spec
    lo = Window.unboundedPreceding if fr.lower is UNBOUNDED else fr.lower
    hi = Window.unboundedFollowing if fr.upper is UNBOUNDED else fr.upper
    return spec.rowsBetween(lo, hi) if fr.kind == "rows" else spec.rangeBetween(lo, hi)


def _over_factory(wc: WindowColumn, partition: list) -> Any:
    def over(fn: "Column", frame: Any = "own") -> "Column":
        return fn.over(_spec(wc, partition, frame))
    return over
