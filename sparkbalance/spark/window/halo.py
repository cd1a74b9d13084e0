"""Halo rows: the neighbouring rows a segment's bounded frames, lag and lead reach.

A bounded frame (ROWS ``a`` PRECEDING to ``b`` FOLLOWING, RANGE within a distance, ``lag``,
``lead``) of a row near a segment's edge reaches into the next segment. Those rows are
replicated next to the segment (``explode`` of the segments a row serves), carried through
the one exchange, used by the window and dropped after: each zone is a contiguous run of
order values adjacent to the segment, so a frame over the segment plus its halo sees exactly
the rows it would over the whole key.

ROWS zones are cut at sampled order values at least as many sampled rows past the segment's
edge as the frames need rows: the sampled rows are rows of the data, so the zone holds
enough whatever the sample drew, and no job checks it. Only where that would copy more than
:data:`sparkbalance.spark.window.segments.HALO_BUDGET` of a key's rows (frames reaching far
on a thinly sampled key) is a zone cut at an estimate with a margin and counted by one job,
which widens the few that fall short to the key's end.

Examples
--------
>>> d = halo_targets(d, "__sb_hidx", "__sb_seg", "__sb_tseg", "__sb_halo",
...                  ocols, order, otypes, hot, splits)                  # doctest: +SKIP
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from sparkbalance.spark.sql.hash_columns import quoted
from sparkbalance.spark.window import segments as sg
from sparkbalance.spark.window import zones as zn
from sparkbalance.spark.window.spec import SortKey

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame

__all__ = ["halo_targets"]


def _F():
    from pyspark.sql import functions as F
    return F


def _check_rows_zones(d: "DataFrame", hidx: str, ocols: Sequence[str],
                      order: Sequence[SortKey], otypes: Sequence[Any],
                      hot: Sequence[sg.HotKey], before: int, after: int) -> None:
    """Count each sampled ROWS zone (one job); a zone short of the rows its frames need
    is widened to the key's end (threshold None)."""
    F = _F()
    checks: list[tuple[int, int, str, int]] = []
    aggs = []
    for i, h in enumerate(hot):
        for s in range(h.segments):
            for side, need, t in (("before", before, h.before[s]), ("after", after, h.after[s])):
                if need and t is not None:
                    z = zn.rows_zone(ocols, order, otypes, h, s, side) & (F.col(hidx) == i)
                    aggs.append(F.sum(F.when(z, 1).otherwise(0)).alias(f"z{len(checks)}"))
                    checks.append((i, s, side, need))
    if not aggs:
        return
    row = d.where(F.col(hidx) >= 0).agg(*aggs).first()
    for j, (i, s, side, need) in enumerate(checks):
        if (row[j] or 0) < need:
            getattr(hot[i], side)[s] = None


def halo_targets(d: "DataFrame", hidx: str, seg: str, tseg: str, halo: str,
                 ocols: Sequence[str], order: Sequence[SortKey], otypes: Sequence[Any],
                 hot: Sequence[sg.HotKey], splits: Sequence[Any]) -> "DataFrame":
    """``d`` with one row per segment a row serves: ``tseg`` the segment, ``halo`` true on
    the copies that serve another segment than the row's own (dropped after the window).

    ``splits`` are the halo columns (:class:`sparkbalance.spark.window.frames.Split`): the
    zones serve the widest of their ROWS reaches (``before``/``after``) and RANGE reach.
    """
    F = _F()
    before = max(s.before for s in splits)
    after = max(s.after for s in splits)
    reach = max(s.reach for s in splits)
    if (before or after) and zn.plan_rows_halo(hot, before, after):
        _check_rows_zones(d, hidx, ocols, order, otypes, hot, before, after)
    try:
        text = (_targets_near_sql(hidx, seg, ocols, order, otypes, hot, before, after, reach)
                or _targets_sql(hidx, seg, ocols, order, otypes, hot, before, after, reach))
        targets = F.expr(text)
    except TypeError:  # an order value without a SQL literal form
        targets = _targets_column(hidx, seg, ocols, order, otypes, hot, before, after, reach)
    # The targets array keeps a null for each zone a row is not in, dropped after the
    # explode: array_compact (a higher-order filter) has no generated code, and under it
    # every zone test ran interpreted (the map stage took ~2x the CPU).
    d = d.withColumn(tseg, F.explode(targets)).where(F.col(tseg).isNotNull())
    return d.withColumn(halo, F.col(tseg) != F.col(seg))


def _zones(h: sg.HotKey, s: int, before: int, after: int, reach: float,
           rows_zone: Any, range_zone: Any) -> list:
    """The zones of key ``h`` that segment ``s``'s halo takes, as (condition, first and
    last segment whose rows it can hold), built by the two makers."""
    conds = []
    if before and s > 0:
        conds.append((rows_zone(h, s, "before"), *h.zone_segments(s, "before")))
    if after and s < h.segments - 1:
        conds.append((rows_zone(h, s, "after"), *h.zone_segments(s, "after")))
    if reach and h.segments > 1:
        z = range_zone(h, s)
        if z is not None:
            conds.append((z, 0, h.segments - 1))
    return conds


def _near_zones(h: sg.HotKey, before: int, after: int) -> list | None:
    """Per segment ``r`` of ``h``: how its rows serve the next segment's halo and the
    previous one's, each (0: not, 1: from a threshold on, 2: all, threshold tuple), or
    None when some zone reaches past a neighbouring segment (or at a null order value)."""
    out = []
    for r in range(h.segments):
        item = []
        for s, side, need in ((r + 1, "before", before), (r - 1, "after", after)):
            if not need or not 0 <= s < h.segments:
                item.append((0, None))
                continue
            lo, hi = h.zone_segments(s, side)
            t = (h.before if side == "before" else h.after)[s]
            if (lo if side == "before" else hi) != r:
                return None   # the zone holds rows of a segment further away
            if t is None:
                item.append((2, None))
            elif any(v is None for v in t):
                return None
            else:
                item.append((1, t))
        out.append(item)
    return out


def _targets_near_sql(hidx: str, seg: str, ocols: Sequence[str], order: Sequence[SortKey],
                      otypes: Sequence[Any], hot: Sequence[sg.HotKey], before: int,
                      after: int, reach: float) -> str | None:
    """:func:`_targets_sql` where every ROWS zone lies in the neighbouring segment (the
    usual case: a frame of a few rows, segments of thousands), or None.

    Its size does not grow with the segments: the row's key and segment index arrays of
    every (key, segment) pair (literals, folded once), so a row meets at most two
    comparisons against looked-up thresholds. Spelled per segment (a ``CASE`` of one
    branch each), the map stage's generated method passed the 8,000 bytes of bytecode
    the JVM compiles (16,608 at 58 segments) and ran interpreted on every row, and the
    driver planned an expression of thousands of nodes at every re-optimization."""
    if reach:
        return None
    near = []
    for h in hot:
        z = _near_zones(h, before, after)
        if z is None:
            return None
        near.extend(z)
    q = quoted
    offsets, at = [], 0
    for h in hot:
        offsets.append(at)
        at += h.segments
    f = (f"element_at(array({', '.join(map(str, offsets))}), {q(hidx)} + 1) + {q(seg)} + 1"
         if len(hot) > 1 else f"{q(seg)} + 1")
    items = [q(seg)]
    for side, step, or_equal in ((0, "+ 1", False), (1, "- 1", True)):
        modes = [z[side][0] for z in near]
        if not any(modes):
            continue
        whens = []
        if 2 in modes:
            whens.append(f"WHEN 2 THEN {q(seg)} {step}")
        if 1 in modes:
            fill = next(z[side][1] for z in near if z[side][0] == 1)
            values = []
            for j, t in enumerate(otypes):
                lits = [sg._sql_lit((z[side][1] if z[side][0] == 1 else fill)[j], t)
                        for z in near]
                values.append(f"element_at(array({', '.join(lits)}), {f})")
            cond = sg.precedes_text(ocols, order, values, or_equal)
            whens.append(f"WHEN 1 THEN CASE WHEN {'' if or_equal else 'NOT '}{cond} "
                         f"THEN {q(seg)} {step} END")
        items.append(f"CASE element_at(array({', '.join(map(str, modes))}), {f}) "
                     f"{' '.join(whens)} END")
    if len(items) == 1:
        return f"array({q(seg)})"
    return f"CASE WHEN {q(hidx)} >= 0 THEN array({', '.join(items)}) ELSE array({q(seg)}) END"


def _targets_sql(hidx: str, seg: str, ocols: Sequence[str], order: Sequence[SortKey],
                 otypes: Sequence[Any], hot: Sequence[sg.HotKey], before: int, after: int,
                 reach: float) -> str:
    """SQL text of the segments a row serves: its own, then those whose halo holds it.

    One expression (one py4j round trip, not a few per zone), and a row is tested only
    against the zones that can hold rows of its own segment (usually its neighbours'),
    not against every zone of its key."""
    q = quoted
    whens = []
    for i, h in enumerate(hot):
        serves: dict[int, list[str]] = {}
        for s in range(h.segments):
            zones = _zones(h, s, before, after, reach,
                           lambda h_, s_, side: zn.rows_zone_sql(ocols, order, otypes, h_, s_,
                                                                 side),
                           lambda h_, s_: zn.range_zone_sql(ocols[0], order[0], h_, s_, reach))
            for r in range(h.segments):
                if r == s:
                    continue
                conds = [c for c, lo, hi in zones if lo <= r <= hi]
                if conds:
                    serves.setdefault(r, []).append(
                        f"CASE WHEN {' OR '.join(conds)} THEN {s} END")
        if serves:
            own = " ".join(f"WHEN {r} THEN array({r}, {', '.join(items)})"
                           for r, items in sorted(serves.items()))
            whens.append(f"WHEN {q(hidx)} = {i} THEN CASE {q(seg)} {own} "
                         f"ELSE array({q(seg)}) END")
    if not whens:
        return f"array({q(seg)})"
    return f"CASE {' '.join(whens)} ELSE array({q(seg)}) END"


def _targets_column(hidx: str, seg: str, ocols: Sequence[str], order: Sequence[SortKey],
                    otypes: Sequence[Any], hot: Sequence[sg.HotKey], before: int, after: int,
                    reach: float) -> "Column":
    """:func:`_targets_sql` built as Columns (order values without a SQL literal form)."""
    F = _F()
    per_key = []
    for i, h in enumerate(hot):
        items = []
        for s in range(h.segments):
            conds = [c for c, _, _ in _zones(
                h, s, before, after, reach,
                lambda h_, s_, side: zn.rows_zone(ocols, order, otypes, h_, s_, side),
                lambda h_, s_: zn.range_zone(ocols[0], order[0], h_, s_, reach))]
            if conds:
                cond = conds[0]
                for c in conds[1:]:
                    cond = cond | c
                items.append(F.when(cond & (F.col(seg) != s), F.lit(s)))
        if items:
            per_key.append((i, F.array(F.col(seg), *items)))
    targets = F.array(F.col(seg))
    for i, arr in reversed(per_key):
        targets = F.when(F.col(hidx) == i, arr).otherwise(targets)
    return targets
