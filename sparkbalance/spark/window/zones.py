"""The halo zones of a hot key's segments: the rows of *other* segments a segment's window
frames reach, a ROWS frame by count (thresholds read from the sample, checked by a count
where the sample cannot prove them), a RANGE frame by value distance; each as a Column and
as SQL text (one expression, one py4j round trip:
:func:`sparkbalance.spark.window.halo.halo_targets`).

Examples
--------
>>> plan_rows_halo([], before=1, after=0)
False
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Sequence

from sparkbalance.spark.window.segments import (HALO_BUDGET, HALO_MARGIN, HotKey, _F,
                                                 _precedes_sql, _q, precedes)
from sparkbalance.spark.window.spec import SortKey

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = ["plan_rows_halo", "rows_zone", "range_zone", "rows_zone_sql", "range_zone_sql"]


def plan_rows_halo(hot: Sequence[HotKey], before: int, after: int) -> bool:
    """Sample thresholds of each segment's ROWS halo (None: to the key's end); True when
    some zone must be counted (:func:`sparkbalance.spark.window.halo.halo_targets`).

    A zone reaching ``j`` sampled rows past a segment's edge holds at least ``j`` rows (the
    sampled rows are rows of the data), so ``j >= before`` needs no count. That costs ``j``
    sample steps of rows; where it would replicate more than :data:`HALO_BUDGET` of a key's
    rows, the zone takes :data:`HALO_MARGIN` times the rows it needs, estimated, and is
    counted instead.
    """
    check = False
    for h in hot:
        m = len(h.sample)
        per = h.count / m if m else float("inf")
        mb = math.ceil(HALO_MARGIN * before / per) + 1 if before else 0
        ma = math.ceil(HALO_MARGIN * after / per) + 1 if after else 0
        sure_b, sure_a = max(mb, before), max(ma, after)
        if (sure_b + sure_a) * per * (h.segments - 1) <= HALO_BUDGET * h.count:
            mb, ma = sure_b, sure_a
        else:
            check = True
        h.before = [None] * h.segments
        h.after = [None] * h.segments
        h.before_at = [None] * h.segments
        h.after_at = [None] * h.segments
        for s in range(h.segments):
            if before and s > 0:
                i = h.cuts[s] - mb
                h.before[s] = h.sample[i] if i > 0 else None
                h.before_at[s] = i
            if after and s < h.segments - 1:
                i = h.cuts[s + 1] + ma
                h.after[s] = h.sample[i] if i < m else None
                h.after_at[s] = i
    return check


def rows_zone(ocols: Sequence[str], order: Sequence[SortKey], dtypes: Sequence[Any],
              h: HotKey, s: int, side: str) -> "Column":
    """True on the rows of key ``h`` that segment ``s``'s ROWS halo takes from ``side``
    (``"before"`` or ``"after"``); the caller restricts it to the key."""
    F = _F()
    if side == "before":
        cond = precedes(ocols, order, dtypes, h.bounds[s - 1], False)
        t = h.before[s]
        return cond if t is None else cond & ~precedes(ocols, order, dtypes, t, False)
    cond = ~precedes(ocols, order, dtypes, h.bounds[s], False)
    u = h.after[s]
    return cond if u is None else cond & precedes(ocols, order, dtypes, u, True)


def _range_limits(key: SortKey, h: HotKey, s: int, reach: float
                  ) -> "tuple[float | None, float | None] | None":
    """The order values segment ``s``'s RANGE halo spans, ``(low, high)`` (None: open on
    that side), or None for a segment of null order values (its frames hold nulls only)."""
    start = h.bounds[s - 1][0] if s > 0 else "open"
    end = h.bounds[s][0] if s < h.segments - 1 else "open"
    if start is None:
        return None
    ends = [v for v in (start, end) if v not in ("open", None)]
    lo_open = (start == "open") if key.ascending else (end in ("open", None))
    hi_open = (end in ("open", None)) if key.ascending else (start == "open")
    return (None if lo_open else float(min(ends)) - reach,
            None if hi_open else float(max(ends)) + reach)


def range_zone(ocol: str, key: SortKey, h: HotKey, s: int, reach: float) -> "Column | None":
    """True on the rows of key ``h`` within ``reach`` of segment ``s``'s order values (a
    RANGE halo; None for a segment of null order values, whose frames hold nulls only)."""
    F = _F()
    limits = _range_limits(key, h, s, reach)
    if limits is None:
        return None
    lo, hi = limits
    col = F.col(ocol)
    cond = col.isNotNull()
    if lo is not None:
        cond = cond & (col >= F.lit(lo))
    if hi is not None:
        cond = cond & (col <= F.lit(hi))
    return cond


def rows_zone_sql(ocols: Sequence[str], order: Sequence[SortKey], dtypes: Sequence[Any],
                  h: HotKey, s: int, side: str) -> str:
    """:func:`rows_zone` as SQL text (TypeError: an order value without a literal form)."""
    if side == "before":
        cond = _precedes_sql(ocols, order, dtypes, h.bounds[s - 1], False)
        t = h.before[s]
        return cond if t is None else \
            f"({cond} AND NOT {_precedes_sql(ocols, order, dtypes, t, False)})"
    cond = f"NOT {_precedes_sql(ocols, order, dtypes, h.bounds[s], False)}"
    u = h.after[s]
    return cond if u is None else f"({cond} AND {_precedes_sql(ocols, order, dtypes, u, True)})"


def _double_sql(v: float) -> str:
    text = "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity") if math.isinf(v) \
        else repr(float(v))
    return f"CAST('{text}' AS DOUBLE)"


def range_zone_sql(ocol: str, key: SortKey, h: HotKey, s: int, reach: float) -> str | None:
    """:func:`range_zone` as SQL text."""
    limits = _range_limits(key, h, s, reach)
    if limits is None:
        return None
    lo, hi = limits
    conds = [f"{_q(ocol)} IS NOT NULL"]
    if lo is not None:
        conds.append(f"{_q(ocol)} >= {_double_sql(lo)}")
    if hi is not None:
        conds.append(f"{_q(ocol)} <= {_double_sql(hi)}")
    return "(" + " AND ".join(conds) + ")"
