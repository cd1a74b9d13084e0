"""How each window column is computed when its partition's rows are cut into ranges.

A hot key's rows are split into contiguous ranges ("segments") of the order key, each on its
own partition; every column is first computed *locally*, over its segment only, then
corrected where the result depends on rows of other segments (:func:`split_of` picks one):

``rank``     row_number, rank, dense_rank, percent_rank, cume_dist, ntile: the local value
             plus the rows (distinct order values for dense_rank) of the segments before;
             the relative ones divided by the key's total rows.
``running``  sum/count/min/max/avg over UNBOUNDED PRECEDING to CURRENT ROW (ROWS or RANGE;
             the default frame of an ordered window), and last(x): the local running value
             combined with the aggregate of the segments before.
``whole``    sum/count/min/max/avg over the whole partition: the aggregate of every segment.
``halo``     any function over a bounded ROWS or RANGE frame, lag and lead: exact locally
             once the segment carries the neighbouring rows its frames reach (the halo,
             replicated next to the segment and dropped after).
``plain``    everything else, computed as plain Spark computes it (:attr:`Split.reason`).

Ties of the order key are never cut (a segment boundary is an order value; all its peers
fall on one side), which is what makes rank, dense_rank, cume_dist and RANGE frames exact.
Per-segment summaries (rows, distinct order values, the aggregate) are one small
aggregation; "before" and "total" are those summaries combined over the key's segments.

Examples
--------
>>> split_of(window_column(F.rank().over(w)), {}).kind                # doctest: +SKIP
'rank'
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from sparkbalance.spark.window.spec import UNBOUNDED, Frame, WindowColumn

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column

__all__ = ["RANKING", "COMBINABLE", "Split", "split_of", "frame_of", "beside_halo",
           "local_columns", "final_column"]

RANKING = ("row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile")
#: Aggregates whose value over a union of segments follows from the segments' own values
#: (avg from its sum and count), and how segment values combine.
COMBINABLE = {"sum": "sum", "count": "sum", "min": "min", "max": "max"}
_AVG = ("avg", "mean")
#: A star among a function's arguments (``struct(*)``, ``struct(t.*)``, ``df["*"]``'s
#: ``resolvedstar()``, ``colRegex``'s ``unresolvedregex()``; ``struct("*")`` as PySpark 3.5
#: prints it, ``unresolvedstar()``), not a product (``(x * 2)``): it would expand over the
#: split's own columns too.
_STAR = re.compile(r"(?:[(,]\s*|\.)\*\s*[),]|\b(?:(?:un)?resolvedstar|unresolvedregex)\(")
_NUMERIC = ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal")


def _F():
    from pyspark.sql import functions as F
    return F


@dataclass
class Split:
    """One column's way through the split window (see the module docstring).

    ``summaries`` maps a per-segment aggregate's name to (aggregate Column, how segments
    combine: "sum", "min" or "max"); ``before``/``after`` are the rows a ROWS halo needs on
    each side, ``reach`` the value distance a RANGE halo needs.
    """

    kind: str
    wc: WindowColumn | None
    reason: str = ""
    before: int = 0
    after: int = 0
    reach: float = 0.0
    summaries: dict = field(default_factory=dict)


def frame_of(wc: WindowColumn) -> Frame:
    """The frame Spark runs ``wc`` with when its spec names none (aggregates only).

    Examples
    --------
    >>> frame_of(window_column(F.sum("x").over(Window.partitionBy("k"))))   # doctest: +SKIP
    Frame(kind='rows', lower=None, upper=None)
    """
    if wc.frame is not None:
        return wc.frame
    if wc.order:
        return Frame("range", UNBOUNDED, 0)
    return Frame("rows", UNBOUNDED, UNBOUNDED)


def _plain(wc: WindowColumn | None, why: str) -> Split:
    return Split("plain", wc, reason=why)


def split_of(wc: WindowColumn | None, types: dict[str, str]) -> Split:
    """How ``wc`` is computed over split partitions; ``types`` maps an argument's text to its
    SQL type (``simpleString``), for the functions whose exactness depends on it.

    Examples
    --------
    >>> split_of(window_column(F.lag("x", 2).over(w)), {}).before       # doctest: +SKIP
    2
    """
    if wc is None:
        return _plain(None, "its window spec could not be read")
    if _STAR.search(wc.text):
        return _plain(wc, "it reads every column (*), which over the split would take in "
                          "the split's own columns")
    f = wc.function
    if f in RANKING:
        if not wc.order:
            return _plain(wc, f"{f} needs an ORDER BY")
        if f == "ntile" and not isinstance(wc.literals[0] if wc.literals else None, int):
            return _plain(wc, "ntile's bucket count is not an integer literal")
        s = Split("rank", wc)
        s.summaries["n"] = (_F().count(_F().lit(1)), "sum")
        if f == "dense_rank":
            s.summaries["nd"] = (_F().count_distinct(_F().struct(*[k.expr for k in wc.order])),
                                 "sum")
        return s
    if f in ("lag", "lead"):
        return _offset_split(wc)
    if wc.distinct:
        return _plain(wc, f"{f}(DISTINCT ...) has no per-range summary")
    fr = frame_of(wc)
    if fr.lower == "other" or fr.upper == "other":
        return _plain(wc, "its RANGE frame has a non-integer offset")
    if fr.lower is not UNBOUNDED and fr.upper is not UNBOUNDED:
        return _halo_split(wc, fr, types)
    if fr.lower is UNBOUNDED and fr.upper == 0:
        return _running_split(wc, types)
    if fr.lower is UNBOUNDED and fr.upper is UNBOUNDED:
        return _whole_split(wc, types)
    return _plain(wc, f"its frame ({fr.kind} {fr.lower} to {fr.upper}) reaches to one end of "
                      "the partition from a bounded side")


def _offset_split(wc: WindowColumn) -> Split:
    lits = list(wc.literals) + [None] * 4
    offset = 1 if len(wc.args) < 2 else lits[1]
    if not isinstance(offset, int) or isinstance(offset, bool):
        return _plain(wc, f"{wc.function}'s offset is not an integer literal")
    if lits[3] is True:
        return _plain(wc, f"{wc.function}(..., ignoreNulls=True) reaches arbitrarily far")
    if not wc.order:
        return _plain(wc, f"{wc.function} needs an ORDER BY")
    back = offset if wc.function == "lag" else -offset
    return Split("halo", wc, before=max(0, back), after=max(0, -back))


def _arg_type(wc: WindowColumn, types: dict[str, str]) -> str:
    return types.get(str(wc.args[0]), "") if wc.args else ""


def _combinable(wc: WindowColumn, types: dict[str, str], kind: str) -> Split:
    F = _F()
    f, s = wc.function, Split(kind, wc)
    if f in COMBINABLE:
        s.summaries["v"] = (wc.fn, COMBINABLE[f])
        return s
    if f in _AVG:
        t = _arg_type(wc, types)
        if not t.startswith(_NUMERIC) or t.startswith("decimal"):
            return _plain(wc, f"avg over {t or 'an unknown type'} is rounded per partition; "
                              "only avg of integers and floats is combined exactly")
        s.summaries["s"] = (F.sum(wc.args[0].cast("double")), "sum")
        s.summaries["c"] = (F.count(wc.args[0]), "sum")
        return s
    return _plain(wc, f"{f} has no per-range summary to combine")


def _running_split(wc: WindowColumn, types: dict[str, str]) -> Split:
    lits = list(wc.literals) + [None, None]
    if wc.function == "last" and lits[1] is not True:
        return Split("running", wc)   # the current row (or its last peer): local is exact
    return _combinable(wc, types, "running")


def _whole_split(wc: WindowColumn, types: dict[str, str]) -> Split:
    return _combinable(wc, types, "whole")


def _halo_split(wc: WindowColumn, fr: Frame, types: dict[str, str]) -> Split:
    lo, hi = int(fr.lower), int(fr.upper)
    if fr.kind == "rows":
        return Split("halo", wc, before=max(0, -lo, -hi), after=max(0, hi, lo))
    if len(wc.order) != 1:
        return _plain(wc, "a bounded RANGE frame needs exactly one ORDER BY expression")
    t = types.get(str(wc.order[0].expr), "")
    if not t.startswith(_NUMERIC):
        return _plain(wc, f"a bounded RANGE frame over {t or 'an unknown type'} (only "
                          "numeric order keys get a halo)")
    return Split("halo", wc, reach=float(max(abs(lo), abs(hi))))


# --------------------------------------------------------------- corrected values

def beside_halo(s: Split) -> bool:
    """Whether ``s`` can be computed in the halo columns' window, over a segment *and* its
    halo copies, by aggregating only the segment's own rows (:func:`local_columns` with
    ``own``): a combinable aggregate of one argument over a running or whole frame. A copy
    lies wholly before or after the segment's rows in the window's order (segments are
    contiguous ranges and ties are never cut), so a running frame of an own row holds the
    copies before it, which the condition leaves out, and none after. A ranking function
    (not ``dense_rank``) is corrected by the copies before the row, which all precede it and
    none is its peer."""
    wc = s.wc
    if s.kind == "rank":   # the copies before a row counted out (dense_rank would need
        return wc.function != "dense_rank"   # their distinct order values)
    return (s.kind in ("running", "whole") and bool(s.summaries) and not wc.distinct
            and wc.function in (*COMBINABLE, *_AVG) and len(wc.args) == 1
            and "*" not in str(wc.args[0]))


def local_columns(s: Split, name: str, over: Callable[..., "Column"],
                  own: "Column | None" = None) -> dict[str, "Column"]:
    """Columns computed over each segment only. ``over(fn)`` applies ``fn`` with the column's
    own order and frame over the segment, ``over(fn, frame)`` with another frame (None: no
    frame, as ranking functions take; ``"whole"``: the segment's rows, unordered).

    With ``own`` (true on the segment's own rows; :func:`beside_halo` columns only), the
    window also holds halo copies: the aggregate reads its argument on own rows only, and a
    whole-partition one takes the window's order with a frame of every row, so that it
    shares the halo columns' window operator (and its buffer of the rows)."""
    F, wc = _F(), s.wc
    f = wc.function
    if own is not None and s.kind == "rank":
        every = Frame("rows", UNBOUNDED, UNBOUNDED)
        copies = over(F.count(F.when(~own, F.lit(1))), Frame("rows", UNBOUNDED, 0))
        if f in ("row_number", "rank"):
            return {name: over(wc.fn, None) - copies}
        out = {name + "_n": over(F.count(F.when(own, F.lit(1))), every)}
        if f == "percent_rank":
            out[name] = over(F.rank(), None) - copies
        elif f == "cume_dist":   # own rows through the current row's last peer
            out[name] = over(F.count(F.when(own, F.lit(1))), Frame("range", UNBOUNDED, 0))
        else:  # ntile
            out[name] = over(F.row_number(), None) - copies
        return out
    if own is not None:
        arg = F.when(own, wc.args[0])
        fn = {"sum": F.sum, "count": F.count, "min": F.min, "max": F.max}.get(f, F.avg)
        frame = Frame("rows", UNBOUNDED, UNBOUNDED) if s.kind == "whole" else "own"
        if f in _AVG and s.kind == "running":
            return {name + "_s": over(F.sum(arg.cast("double")), frame),
                    name + "_c": over(F.count(arg), frame)}
        return {name: over(fn(arg), frame)}
    if s.kind == "running" and f in _AVG:
        return {name + "_s": over(F.sum(wc.args[0].cast("double"))),
                name + "_c": over(F.count(wc.args[0]))}
    if s.kind in ("halo", "running", "whole"):
        return {name: over(wc.fn)}
    if f in ("row_number", "rank", "dense_rank"):
        return {name: over(wc.fn, None)}
    out = {name + "_n": over(F.count(F.lit(1)), "whole")}
    if f == "percent_rank":
        out[name] = over(F.rank(), None)
    elif f == "cume_dist":   # rows through the current row's last peer
        out[name] = over(F.count(F.lit(1)), Frame("range", UNBOUNDED, 0))
    else:  # ntile
        out[name] = over(F.row_number(), None)
    return out


def final_column(s: Split, name: str, before: Callable[[str], "Column"],
                 total: Callable[[str], "Column"], hot: "Column") -> "Column":
    """The corrected value of one column from its local columns (named ``name``...) and the
    segments' combined summaries (``before(a)``: over the earlier segments, null for the
    first; ``total(a)``: over all of the key's segments; null for a key not split)."""
    F, wc = _F(), s.wc
    f, loc = wc.function, F.col(name)
    if s.kind == "halo" or (s.kind == "running" and not s.summaries):
        return loc
    if s.kind == "rank":
        prior = F.coalesce(before("n"), F.lit(0))
        if f in ("row_number", "rank"):
            return loc + prior
        if f == "dense_rank":
            return loc + F.coalesce(before("nd"), F.lit(0))
        n = F.when(hot, total("n")).otherwise(F.col(name + "_n"))
        r = loc + prior
        if f == "percent_rank":
            return F.when(n > 1, (r - 1).cast("double") / (n - 1).cast("double")).otherwise(
                F.lit(0.0))
        if f == "cume_dist":
            return r.cast("double") / n.cast("double")
        return _ntile(r, n, int(wc.literals[0]))
    if s.kind == "whole":
        if f in _AVG:
            return F.when(hot, F.when(total("c") > 0, total("s") / total("c").cast("double"))
                          ).otherwise(loc)
        return F.when(hot, _combined(s, total, None)).otherwise(loc)
    if f in _AVG:
        sm = _add(F.col(name + "_s"), before("s"))
        c = F.col(name + "_c") + F.coalesce(before("c"), F.lit(0))
        return F.when(c > 0, sm / c.cast("double"))
    return _combined(s, before, loc)


def _add(a: "Column", b: "Column") -> "Column":
    # SUM over no non-null value is null: null + x is x, null + null is null.
    return (_F().when(a.isNull(), b).when(b.isNull(), a).otherwise(a + b))


def _combined(s: Split, get: Callable[[str], "Column"], loc: "Column | None") -> "Column":
    F = _F()
    op = s.summaries["v"][1]
    v = get("v")
    if loc is None:
        return v
    if op == "sum":
        return _add(loc, v)
    return F.least(loc, v) if op == "min" else F.greatest(loc, v)


def _ntile(r: "Column", n: "Column", buckets: int) -> "Column":
    """Spark's NTile of global row number ``r`` among ``n`` rows: ``n // buckets`` rows per
    bucket, the first ``n % buckets`` buckets one more."""
    F = _F()
    size = (n / F.lit(buckets)).cast("long")
    rem = n % F.lit(buckets)
    big = rem * (size + 1)   # rows in the larger buckets
    i = r - 1
    return F.when(i < big, (i / (size + 1)).cast("long") + 1).otherwise(
        rem + ((i - big) / size).cast("long") + 1).cast("int")
