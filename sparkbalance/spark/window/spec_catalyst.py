"""A window Column of classic PySpark 3.5 read from its Catalyst expression.

PySpark 3.5's classic Column holds a JVM ``Column`` with no ``ColumnNode`` tree (that came
with Spark 4): ``.over(spec)`` builds the Catalyst expression ``WindowExpression(function,
WindowSpecDefinition(partitionSpec, orderSpec, frameSpecification))`` directly, and the
Scala ``functions`` build resolved function classes rather than named calls: ``RowNumber``,
``Rank``, ``NTile(buckets)``, ``Lag(input, offset, default, ignoreNulls)``,
``AggregateExpression(Sum(x), Complete, isDistinct)``, ... (a few, such as
``count_distinct``, stay an ``UnresolvedFunction``). This module reads that expression, with
no query run, into the :class:`~sparkbalance.spark.window.window_column.WindowColumn`
:mod:`sparkbalance.spark.window.spec` reads from Spark 4's tree, naming each function and listing its arguments as Spark 4 does (``lag(x, 1, NULL,
false)``: the ``ignoreNulls`` flag becomes a trailing boolean argument, as it is there).

A function class not listed here gives None: the column then runs as plain Spark runs it.

Examples
--------
>>> wc = read(F.lag("x", 2).over(w))               # doctest: +SKIP
>>> wc.function, wc.literals                       # doctest: +SKIP
('lag', (None, 2, None, False))
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparkbalance.spark.window.window_column import (UNBOUNDED, Frame, SortKey, WindowColumn,
                                                     bound, jname as _jname, jseq as _seq)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column

__all__ = ["read"]

#: Window-only functions: their name, and whether a trailing ``ignoreNulls`` flag is kept.
_WINDOW_FUNCTIONS = {"RowNumber": "row_number", "Rank": "rank", "DenseRank": "dense_rank",
                     "PercentRank": "percent_rank", "CumeDist": "cume_dist", "NTile": "ntile",
                     "Lag": "lag", "Lead": "lead"}
#: Aggregate functions under an ``AggregateExpression``, by class, as Spark 4 names them.
_AGGREGATES = {"Sum": "sum", "Count": "count", "Min": "min", "Max": "max", "Average": "avg",
               "First": "first", "Last": "last"}
#: Functions whose ``ignoreNulls`` field Spark 4 lists as their last argument.
_IGNORE_NULLS_ARG = ("lag", "lead", "first", "last")
#: Ranking functions whose Catalyst children are the ORDER BY, filled in by the analyzer: the
#: user's call has no argument.
_NO_ARGS = ("row_number", "rank", "dense_rank", "percent_rank", "cume_dist")


def _literal(e: Any) -> Any:
    """A Catalyst ``Literal``'s value as Python sees it (strings as ``str``), else None."""
    if _jname(e) != "Literal":
        return None
    v = e.value()
    if v is not None and not isinstance(v, (bool, int, float, str)):
        return str(v.toString()) if _jname(v) == "UTF8String" else v
    return v


def _function(f: Any) -> tuple[str, list, bool, list] | None:
    """(name, Catalyst arguments, distinct, trailing Python literal arguments) or None."""
    cls = _jname(f)
    if cls in _WINDOW_FUNCTIONS:
        name = _WINDOW_FUNCTIONS[cls]
        args = [] if name in _NO_ARGS else _seq(f.children())
        extra = [bool(f.ignoreNulls())] if name in _IGNORE_NULLS_ARG else []
        return name, args, False, extra
    if cls == "AggregateExpression":
        if not f.filter().isEmpty() or _jname(f.mode()) != "Complete":
            return None
        agg = f.aggregateFunction()
        name = _AGGREGATES.get(_jname(agg))
        if name is None:
            return None
        extra = [bool(agg.ignoreNulls())] if name in _IGNORE_NULLS_ARG else []
        return name, _seq(agg.children()), bool(f.isDistinct()), extra
    if cls == "UnresolvedFunction":   # e.g. count_distinct, or a function called by name
        if not f.filter().isEmpty() or f.ignoreNulls():
            return None
        parts = _seq(f.nameParts())
        return str(parts[-1]).lower(), _seq(f.arguments()), bool(f.isDistinct()), []
    return None


def _frame_bound(b: Any) -> Any:
    name = _jname(b)
    if name in ("UnboundedPreceding", "UnboundedFollowing"):
        return UNBOUNDED
    if name == "CurrentRow":
        return 0
    if name == "Literal":
        return bound(b.value())
    return "other"


def read(col: "Column") -> WindowColumn | None:
    """``col`` (a classic PySpark 3.5 Column) read as a window function, or None when it is
    not one or holds a function this reader does not know.

    Examples
    --------
    >>> read(F.sum("x").over(Window.partitionBy("k"))).function     # doctest: +SKIP
    'sum'
    """
    from pyspark import SparkContext
    from pyspark.sql import functions as F
    e = col._jc.expr()
    if _jname(e) != "WindowExpression":
        return None
    read_fn = _function(e.windowFunction())
    if read_fn is None:
        return None
    name, jargs, distinct, extra = read_fn
    jcolumn = SparkContext._jvm.org.apache.spark.sql.Column  # type: ignore[union-attr]

    def wrap(x: Any) -> "Column":   # a Catalyst expression back into a Column
        return type(col)(jcolumn(x))

    args = tuple(wrap(a) for a in jargs) + tuple(F.lit(v) for v in extra)
    lits = tuple(_literal(a) for a in jargs) + tuple(extra)
    ws = e.windowSpec()
    order = tuple(SortKey(wrap(s.child()), _jname(s.direction()) == "Ascending",
                          _jname(s.nullOrdering()) == "NullsFirst") for s in _seq(ws.orderSpec()))
    f = ws.frameSpecification()
    frame = None
    if _jname(f) == "SpecifiedWindowFrame":
        kind = "rows" if _jname(f.frameType()) == "RowFrame" else "range"
        frame = Frame(kind, _frame_bound(f.lower()), _frame_bound(f.upper()))
    elif _jname(f) != "UnspecifiedFrame":
        return None
    return WindowColumn(name, args, lits, distinct, wrap(e.windowFunction()),
                        tuple(wrap(p) for p in _seq(ws.partitionSpec())), order, frame,
                        str(col))
