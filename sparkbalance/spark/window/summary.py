"""The per-segment summaries of a split window, as literals.

A ranking or running column computed over one segment of a hot key is corrected by a
summary of the key's earlier segments (their rows, distinct order values, the aggregate) and
a whole-partition one by the summary of all of them
(:func:`sparkbalance.spark.window.frames.final_column`). There are a few per segment, so they
are computed by one small exact job before the action (the hot keys' rows, each once in its
own segment, aggregated per segment, then combined over the earlier and all segments of its
key in one task) and looked up by the row's segment, numbered across the hot keys, in an
array of literals. The action's plan then holds the window alone: no second branch over the
input, no exchange or broadcast of the summaries, no join for Spark to analyse, optimise and
compile on every call.

Examples
--------
>>> looked = summary_literals(counted, "__sb_hidx", "__sb_seg", summaries, hot,
...                           "__sb_tseg")                             # doctest: +SKIP
>>> sorted(looked)                                                     # doctest: +SKIP
['rn_b_n', 'rn_t_n']
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from sparkbalance.spark.sql import literals as sqllit
from sparkbalance.spark.window.segments import HotKey

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame

__all__ = ["numbered", "summary_frame", "summary_literals"]

_G = "__sb_g"


def _F():
    from pyspark.sql import functions as F
    return F


def numbered(hidx: str, seg: str, hot: Sequence[HotKey]) -> str:
    """SQL of a row's segment numbered across the hot keys (key ``i``'s segments follow
    those of keys ``0..i-1``), -1 on a cold row (``hidx`` < 0).

    Examples
    --------
    >>> numbered("h", "s", [HotKey(("a",), 1.0, bounds=[(1,)]), HotKey(("b",), 1.0)])
    'CAST(CASE WHEN `h` >= 0 THEN element_at(array(0, 2), `h` + 1) + `s` ELSE -1 END AS INT)'
    """
    offsets = np.cumsum([0] + [h.segments for h in hot])[:-1].tolist()
    at = (f"element_at(array({', '.join(str(int(o)) for o in offsets)}), `{hidx}` + 1) + "
          if len(hot) > 1 else "")
    return f"CAST(CASE WHEN `{hidx}` >= 0 THEN {at}`{seg}` ELSE -1 END AS INT)"


def summary_frame(d: "DataFrame", hidx: str, seg: str, summaries: Sequence[tuple[str, Any]],
                  hot: Sequence[HotKey]) -> "DataFrame":
    """Per hot segment (``__sb_g``: numbered across the hot keys): each summary over the
    key's earlier segments (``<column>_b_<name>``) and over all of them (``_t_``).

    ``d`` holds each row once, in its own segment (before any halo copy). One task combines
    the few per-segment rows, so the window below needs no exchange of its own."""
    from pyspark.sql import Window
    F = _F()
    aggs, ops = [], {}
    for name, s in summaries:
        for a, (agg, op) in s.summaries.items():
            aggs.append(agg.alias(f"{name}_{a}"))
            ops[f"{name}_{a}"] = (name, a, op)
    per = (d.where(F.col(hidx) >= 0).groupBy(F.col(hidx), F.expr(numbered(hidx, seg, hot))
                                             .alias(_G)).agg(*aggs).coalesce(1))
    w = Window.partitionBy(hidx).orderBy(_G)
    earlier = w.rowsBetween(Window.unboundedPreceding, -1)
    whole = w.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    fn = {"sum": F.sum, "min": F.min, "max": F.max}
    cols = [F.col(_G)]
    for c, (name, a, op) in ops.items():
        cols.append(fn[op](c).over(earlier).alias(f"{name}_b_{a}"))
        cols.append(fn[op](c).over(whole).alias(f"{name}_t_{a}"))
    return per.select(*cols)


def summary_literals(d: "DataFrame", hidx: str, seg: str, summaries: Sequence[tuple[str, Any]],
                     hot: Sequence[HotKey], tseg: str) -> dict[str, "Column"]:
    """Each summary column of :func:`summary_frame` as a Column of the placed rows: its
    value for the row's segment ``tseg`` (numbered across the hot keys; null on a cold row,
    ``tseg`` -1). Runs one job."""
    F = _F()
    frame = summary_frame(d, hidx, seg, summaries, hot)
    types = {f.name: f.dataType for f in frame.schema.fields if f.name != _G}
    # a timestamp is collected as a Python datetime in the driver's own time zone: carried
    # as its microseconds instead (a TIMESTAMP_NTZ as its text), exact either way
    wire = {c: (F.unix_micros(F.col(c)) if t.typeName() == "timestamp" else
                F.col(c).cast("string") if t.typeName() == "timestamp_ntz" else F.col(c))
            for c, t in types.items()}
    rows = frame.select(F.col(_G), *[e.alias(c) for c, e in wire.items()]).collect()
    wtypes = {f.name: f.dataType for f in frame.select(
        *[e.alias(c) for c, e in wire.items()]).schema.fields}
    size = sum(h.segments for h in hot)
    out = {}
    for c, t in types.items():
        values: list = [None] * size
        for r in rows:
            values[r[_G]] = r[c]
        col = _lookup(values, wtypes[c], tseg)
        out[c] = (F.timestamp_micros(col) if t.typeName() == "timestamp" else
                  col.cast(t) if t.typeName() == "timestamp_ntz" else col)
    return out


def _lookup(values: list, dtype: Any, tseg: str) -> "Column":
    """``values[tseg]`` as a Column (null where ``tseg`` < 0): one SQL expression of
    literals, or, for a value without a SQL literal form, an array of Spark literals."""
    F = _F()
    typ = sqllit.sql_type(dtype)
    try:
        items = []
        for v in values:
            ok, lit = (True, None) if v is None else sqllit.coerce_value(v, dtype)
            if not ok:
                raise TypeError(v)
            items.append(sqllit.literal_sql(lit, dtype))
        return F.expr(f"CASE WHEN `{tseg}` >= 0 THEN element_at(CAST(array({', '.join(items)}) "
                      f"AS array<{typ}>), `{tseg}` + 1) END")
    except TypeError:
        pass
    arr = F.array(*[F.lit(v).cast(dtype) for v in values])
    return F.when(F.col(tseg) >= 0, F.element_at(arr, F.col(tseg) + 1))
