"""Hot keys cut into contiguous ranges of the order key, and where each range runs.

A key holding more than :data:`HOT_SHARE` of a partition's mean rows is *hot*; its rows are
cut at order values read from a sample (sorted by Spark itself, so nulls, NaN and
descending orders sort as the window sorts them) into segments, each as many rows as the
partition it goes to has room for below an even level (:func:`fill_segments`; uniform
segments of :data:`SEGMENT_SHARE` of the mean placed largest first on the emptiest
partition, :func:`cut_segments` with :func:`assign_segments`, where the key has no order).
Segment ``s`` of a key holds the rows whose order tuple
is at or past ``s`` of its boundaries: a boundary is a value, so all peers of a value fall
into one segment (ties are never cut). Every other key is cold: segment 0, placed whole by
the balanced key grouping (:func:`sparkbalance.spark.sql.dataframe.fit_partitioner`).

The halo zones (the rows of *other* segments a segment's frames reach) are
:mod:`sparkbalance.spark.window.zones`.

Examples
--------
>>> fill_segments(hot, cold_loads)    # doctest: +SKIP
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from sparkbalance.spark.sql.hash_columns import quoted as _q
from sparkbalance.spark.window.spec import SortKey

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column

__all__ = ["HOT_SHARE", "SEGMENT_SHARE", "SAMPLE_PER_SEGMENT", "HotKey", "hot_index",
           "cut_segments", "precedes", "precedes_text", "segment_expr",
           "assign_segments", "fill_segments", "MIN_SEGMENT_SHARE", "SAMPLE_SEED"]

#: A key with more rows than this share of the mean partition is split.
HOT_SHARE = 0.5
#: Target rows of a segment, as a share of the mean partition: small enough that the
#: greedy placement evens partitions out (one key of 30 % over 16 partitions: ~19 segments).
SEGMENT_SHARE = 0.25
#: A hot key's range cut to fill a partition (:func:`fill_segments`) is at least this share
#: of the mean partition: a smaller remainder stays with the range before it.
MIN_SEGMENT_SHARE = 0.05
#: Sampled rows per segment the boundaries are read from.
SAMPLE_PER_SEGMENT = 200
#: A ROWS halo takes this many times the rows it needs, estimated from the sample.
HALO_MARGIN = 4.0
#: Share of a hot key's rows its ROWS halos may copy without a counting job.
HALO_BUDGET = 0.25
SAMPLE_SEED = 29


def _F():
    from pyspark.sql import functions as F
    return F


@dataclass
class HotKey:
    """One hot key: its value, rows, order boundaries and where its segments run."""

    key: tuple
    count: float
    sample: list = field(default_factory=list)
    bounds: list = field(default_factory=list)
    cuts: list = field(default_factory=list)     # sample index where each segment starts
    pids: list = field(default_factory=list)
    before: list = field(default_factory=list)   # ROWS halo threshold per segment (None: all)
    after: list = field(default_factory=list)
    before_at: list = field(default_factory=list)  # sample index of each threshold
    after_at: list = field(default_factory=list)

    @property
    def segments(self) -> int:
        return len(self.bounds) + 1

    def zone_segments(self, s: int, side: str) -> tuple[int, int]:
        """The segments whose rows segment ``s``'s ROWS halo on ``side`` can hold: a
        threshold is a sampled row, and all its peers lie in the segment it was drawn in."""
        if side == "before":
            t = self.before[s] if s < len(self.before) else None
            lo = 0 if t is None else bisect.bisect_right(self.cuts, self.before_at[s]) - 1
            return lo, s - 1
        u = self.after[s] if s < len(self.after) else None
        hi = (self.segments - 1 if u is None
              else bisect.bisect_right(self.cuts, self.after_at[s]) - 1)
        return s + 1, hi

    def sizes(self) -> list[float]:
        """Estimated rows of each segment (from the sample; equal shares without one)."""
        m = len(self.sample)
        if m == 0:
            return [self.count / self.segments] * self.segments
        edges = list(self.cuts) + [m]
        return [self.count * (edges[s + 1] - edges[s]) / m for s in range(self.segments)]


def _lit(v: Any, dtype: Any) -> "Column":
    return _F().lit(v).cast(dtype)


def key_match(cols: Sequence[str], dtypes: Sequence[Any], key: tuple) -> "Column":
    """True on the rows whose key columns equal ``key``."""
    cond = None
    for c, t, v in zip(cols, dtypes, key):
        e = _F().col(c) == _lit(v, t)
        cond = e if cond is None else cond & e
    return _F().coalesce(cond, _F().lit(False))


def hot_index(cols: Sequence[str], dtypes: Sequence[Any], hot: Sequence[HotKey]) -> "Column":
    """INT Column: the index of the row's hot key in ``hot``, -1 for a cold key.

    One SQL ``CASE`` (one py4j round trip on classic PySpark, not a few per key); keys
    without a SQL literal form are built as Columns."""
    F = _F()
    try:
        whens = []
        for i, h in enumerate(hot):
            conds = [f"({_q(c)} = {_sql_lit(v, t)})" for c, t, v in zip(cols, dtypes, h.key)]
            whens.append(f"WHEN {' AND '.join(conds)} THEN {i}")
        if not whens:
            return F.lit(-1).cast("int")
        return F.expr(f"CAST(CASE {' '.join(whens)} ELSE -1 END AS INT)")
    except TypeError:
        pass
    out = F.lit(-1)
    for i in reversed(range(len(hot))):
        out = F.when(key_match(cols, dtypes, hot[i].key), F.lit(i)).otherwise(out)
    return out.cast("int")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b or (isinstance(a, float) and isinstance(b, float) and a != a and b != b)


def cut_segments(hot: Sequence[HotKey], seg_rows: float) -> None:
    """Set each hot key's boundaries: every ``seg_rows`` estimated rows, moved back to the
    first of its peers (so equal order tuples share a segment) and deduplicated.

    Examples
    --------
    >>> h = HotKey(("a",), 8.0, sample=[(1,), (2,), (2,), (3,)])
    >>> cut_segments([h], seg_rows=2.0); h.bounds, h.cuts
    ([(2,), (3,)], [0, 1, 3])
    """
    for h in hot:
        m, r = len(h.sample), max(1, math.ceil(h.count / seg_rows))
        h.bounds, h.cuts = [], [0]
        for j in range(1, r if m else 1):
            i = (j * m) // r
            while i > 0 and _same(h.sample[i - 1], h.sample[i]):
                i -= 1   # to the first peer: ties stay in one segment
            if i > h.cuts[-1]:
                h.bounds.append(h.sample[i])
                h.cuts.append(i)


def _sql_lit(v: Any, dtype: Any) -> str:
    """SQL text of the order value ``v`` as type ``dtype`` (TypeError: no literal form)."""
    from sparkbalance.spark.sql import literals as sqllit
    if v is None:
        return f"CAST(NULL AS {sqllit.sql_type(dtype)})"
    ok, value = sqllit.coerce_value(v, dtype)
    if not ok:
        raise TypeError(f"order value {v!r} has no literal of type {dtype}")
    return f"CAST({sqllit.literal_sql(value, dtype)} AS {sqllit.sql_type(dtype)})"


def _precedes_sql(ocols: Sequence[str], order: Sequence[SortKey], dtypes: Sequence[Any],
                  tup: tuple, or_equal: bool) -> str:
    return precedes_text(ocols, order, [_sql_lit(v, t) for t, v in zip(dtypes, tup)],
                         or_equal, [v is None for v in tup])


def precedes_text(ocols: Sequence[str], order: Sequence[SortKey], values: Sequence[str],
                  or_equal: bool, nulls: Sequence[bool] | None = None) -> str:
    """SQL of :func:`precedes` against an order tuple given as SQL text per column
    (``nulls``: which of them are null; default none); a value may be any expression,
    e.g. a lookup in an array literal."""
    out, prefix = None, None
    for j, (c, k, lv) in enumerate(zip(ocols, order, values)):
        col = f"`{c}`"
        if nulls is not None and nulls[j]:
            lt = "false" if k.nulls_first else f"({col} IS NOT NULL)"
        else:
            cmp = f"{col} {'<' if k.ascending else '>'} {lv}"
            lt = (f"({col} IS NULL OR {cmp})" if k.nulls_first
                  else f"({col} IS NOT NULL AND {cmp})")
        term = lt if prefix is None else f"({prefix} AND {lt})"
        out = term if out is None else f"({out} OR {term})"
        eq = f"({col} <=> {lv})"
        prefix = eq if prefix is None else f"({prefix} AND {eq})"
    if or_equal:
        out = prefix if out is None else f"({out} OR {prefix})"
    return f"coalesce({out}, false)"


def precedes(ocols: Sequence[str], order: Sequence[SortKey], dtypes: Sequence[Any],
             tup: tuple, or_equal: bool) -> "Column":
    """True on the rows whose order tuple sorts before ``tup`` (or equal to it, when
    ``or_equal``), lexicographically, each term in its direction and null placement.

    Spelled as SQL text, one expression (on classic PySpark each Column operator is a py4j
    round trip: a hot key's bounds and halo zones made thousands of them per call); order
    values without a SQL literal form are built as Columns."""
    F = _F()
    try:
        return F.expr(_precedes_sql(ocols, order, dtypes, tup, or_equal))
    except TypeError:
        pass
    out, prefix = None, None
    for c, k, t, v in zip(ocols, order, dtypes, tup):
        col = F.col(c)
        if v is None:
            lt = F.lit(False) if k.nulls_first else col.isNotNull()
        else:
            lv = _lit(v, t)
            cmp = (col < lv) if k.ascending else (col > lv)
            lt = (col.isNull() | cmp) if k.nulls_first else (col.isNotNull() & cmp)
        term = lt if prefix is None else prefix & lt
        out = term if out is None else out | term
        eq = col.eqNullSafe(_lit(v, t))
        prefix = eq if prefix is None else prefix & eq
    if or_equal:
        out = prefix if out is None else out | prefix
    return F.coalesce(out, F.lit(False))


def _seg_tree(ocols: Sequence[str], order: Sequence[SortKey], dtypes: Sequence[Any],
              bounds: Sequence[tuple], lo: int, hi: int) -> str:
    """SQL: the segment in ``lo..hi`` of a row known to lie in it, by halving (a row meets
    about log2(segments) comparisons, not one per boundary)."""
    if lo == hi:
        return str(lo)
    mid = (lo + hi + 1) // 2   # segment mid starts at bounds[mid - 1]
    cond = _precedes_sql(ocols, order, dtypes, bounds[mid - 1], False)
    return (f"CASE WHEN {cond} THEN {_seg_tree(ocols, order, dtypes, bounds, lo, mid - 1)} "
            f"ELSE {_seg_tree(ocols, order, dtypes, bounds, mid, hi)} END")


def segment_expr(hidx: str, ocols: Sequence[str], order: Sequence[SortKey],
                 dtypes: Sequence[Any], hot: Sequence[HotKey], all_cols: Sequence[str]
                 ) -> "Column":
    """INT Column: the row's segment (0 for a cold key); a hot key without an order is cut
    by a hash of the whole row (any cut serves a whole-partition aggregate).

    One SQL ``CASE`` whose boundaries are searched by halving; order values without a SQL
    literal form fall back to a Column that tests every boundary."""
    F = _F()
    try:
        whens = []
        for i, h in enumerate(hot):
            if h.segments == 1:
                continue
            if order:
                seg = _seg_tree(ocols, order, dtypes, h.bounds, 0, h.segments - 1)
            else:
                seg = f"pmod(xxhash64({', '.join(_q(c) for c in all_cols)}), {h.segments})"
            whens.append(f"WHEN {_q(hidx)} = {i} THEN {seg}")
        if not whens:
            return F.lit(0).cast("int")
        return F.expr(f"CAST(CASE {' '.join(whens)} ELSE 0 END AS INT)")
    except TypeError:
        pass
    out = F.lit(0)
    for i in reversed(range(len(hot))):
        h = hot[i]
        if h.segments == 1:
            continue
        if order:
            seg = F.lit(0)
            for b in h.bounds:
                seg = seg + F.when(precedes(ocols, order, dtypes, b, False), 0).otherwise(1)
        else:
            seg = F.pmod(F.xxhash64(*[F.col(c) for c in all_cols]), F.lit(h.segments))
        out = F.when(F.col(hidx) == i, seg).otherwise(out)
    return out.cast("int")


def assign_segments(hot: Sequence[HotKey], cold_loads: np.ndarray) -> None:
    """Each hot segment to the partition with the fewest rows so far, largest first (LPT).

    Examples
    --------
    >>> h = HotKey(("a",), 6.0, bounds=[(1,), (2,)])
    >>> assign_segments([h], np.array([0.0, 1.0, 5.0])); h.pids
    [0, 1, 0]
    """
    loads = np.asarray(cold_loads, dtype=np.float64).copy()
    items = [(size, i, s) for i, h in enumerate(hot) for s, size in enumerate(h.sizes())]
    for h in hot:
        h.pids = [0] * h.segments
    for size, i, s in sorted(items, key=lambda t: (-t[0], t[1], t[2])):
        p = int(np.argmin(loads))
        hot[i].pids[s] = p
        loads[p] += size


def _water_level(loads: np.ndarray, rows: float) -> float:
    """The level ``L`` at which ``sum(max(0, L - load))`` over the partitions is ``rows``:
    the hot rows raise the emptiest partitions to it, the fullest keep their load."""
    srt = np.sort(np.asarray(loads, dtype=np.float64))
    below = 0.0
    for j, v in enumerate(srt):
        # with the j emptiest partitions at v, rows past what they take go above v
        if j and v * j - below >= rows:
            return (rows + below) / j
        below += v
    return (rows + below) / len(srt)


def fill_segments(hot: Sequence[HotKey], cold_loads: np.ndarray) -> None:
    """Cut each hot key (its ``sample`` drawn, sorted as the window sorts) into ranges that
    fill the partitions up to an even level, and place them (``pids``).

    The cold keys' estimated rows per partition (``cold_loads``) and the hot keys' rows set
    the level every partition would hold at best (:func:`_water_level`); the hot keys, in
    order, pour into the partitions below it, emptiest first, each range of a key as many
    rows as its partition has room for, read off the sample as a quantile and moved back to
    the first of its peers (:func:`cut_segments`). A key is cut into about as many ranges
    as the partitions it fills, not one per :data:`SEGMENT_SHARE` of a mean partition as
    :func:`cut_segments` with :func:`assign_segments` makes them (a 90 % key over 16
    partitions: 16 ranges, not 58): fewer boundaries to halo, to test and to compile.
    A remainder under :data:`MIN_SEGMENT_SHARE` of the mean partition is not cut off.

    Examples
    --------
    >>> h = HotKey(("a",), 8.0, sample=[(i,) for i in range(8)])
    >>> fill_segments([h], np.array([0.0, 2.0, 4.0, 6.0])); h.bounds, h.pids
    ([(5,), (7,)], [0, 1, 2])
    """
    loads = np.asarray(cold_loads, dtype=np.float64).copy()
    n = len(loads)
    rows = float(sum(h.count for h in hot))
    small = MIN_SEGMENT_SHARE * (float(loads.sum()) + rows) / max(1, n)
    level = _water_level(loads, rows)
    rooms = [[int(p), level - loads[p]] for p in np.argsort(loads, kind="stable")
             if level - loads[p] > small]
    j = 0
    for h in hot:
        pieces: list[tuple[float, int]] = []
        rest = float(h.count)
        while rest > 0:
            if j >= len(rooms):   # no room left: the rest on the emptiest partition
                p = int(np.argmin(loads))
                pieces.append((rest, p))
                loads[p] += rest
                break
            p, room = rooms[j]
            take = rest if rest - min(rest, room) < small else min(rest, room)
            pieces.append((take, p))
            loads[p] += take
            rest -= take
            rooms[j][1] = room - take
            if rooms[j][1] <= small:
                j += 1
        _cut_at(h, pieces)


def _cut_at(h: HotKey, pieces: list[tuple[float, int]]) -> None:
    """``h``'s boundaries and partitions from its ``pieces`` (rows, partition), in order:
    each boundary the sampled row at the piece's quantile, moved back to its first peer;
    a piece whose boundary falls on the one before it (ties, or too few sampled rows) goes
    with the range before it."""
    m = len(h.sample)
    h.bounds, h.cuts, h.pids = [], [0], [pieces[0][1]]
    done = 0.0
    for k in range(len(pieces) - 1 if m else 0):
        done += pieces[k][0]
        i = min(m - 1, int(round(done / max(h.count, 1.0) * m)))
        while i > 0 and _same(h.sample[i - 1], h.sample[i]):
            i -= 1
        if i > h.cuts[-1]:
            h.bounds.append(h.sample[i])
            h.cuts.append(i)
            h.pids.append(pieces[k + 1][1])
