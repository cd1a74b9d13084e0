"""A window Column pulled apart: its function, arguments, partitioning, ordering and frame.

Users write ``F.sum("x").over(Window.partitionBy("k").orderBy("t"))``; to split the window
of a hot key the function must be re-applied over another partitioning and its frame read.
PySpark keeps what ``.over`` built in three shapes, read here into one :class:`WindowColumn`:

* classic PySpark 4: the Column's JVM ``ColumnNode`` tree (``Window(function, WindowSpec)``,
  ``UnresolvedFunction``, ``SortOrder``, ``WindowFrame``), read through the Column's own
  handle, no query run;
* classic PySpark 3.5, which has no ``ColumnNode``: the Column's Catalyst expression, read by
  :mod:`sparkbalance.spark.window.spec_catalyst` into the same fields;
* Spark Connect: the Column's Python expression tree (``WindowExpression``,
  ``UnresolvedFunction``, ``SortOrder``, ``WindowFrame``), the tree its proto is made of.

Each gives back Columns of the same kind (the function without ``.over``, each argument, each
partition and order expression), so everything after this module is DataFrame code only.

Examples
--------
>>> wc = window_column(F.sum("x").over(Window.partitionBy("k").orderBy("t")))  # doctest: +SKIP
>>> wc.function, wc.frame                                                      # doctest: +SKIP
('sum', None)
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparkbalance.spark.window.window_column import (UNBOUNDED, Frame, SortKey, WindowColumn,
                                                     bound as _bound, jname as _jname,
                                                     jseq as _seq)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column

__all__ = ["SortKey", "Frame", "WindowColumn", "window_column", "UNBOUNDED"]


def _is_connect(col: Any) -> bool:
    return type(col).__module__.startswith("pyspark.sql.connect")


def _is_classic4(col: Any) -> bool:
    return type(col).__module__.startswith("pyspark.sql.classic")


def window_column(col: "Column") -> WindowColumn | None:
    """``col`` read as a window function, or None when it is not ``func(...).over(spec)``.

    Examples
    --------
    >>> window_column(F.lag("x", 2).over(w)).literals                # doctest: +SKIP
    (None, 2, None, False)
    """
    try:
        if _is_connect(col):
            return _connect(col)
        # PySpark 4's classic Column lives in pyspark.sql.classic; 3.5's has no ColumnNode.
        return _classic(col) if _is_classic4(col) else _catalyst(col)
    except (AttributeError, TypeError):
        # Not a window expression, or an expression node this reader does not know.
        return None


# ---------------------------------------------------------------- Spark Connect

def _connect(col: "Column") -> WindowColumn | None:
    from pyspark.sql.connect.column import Column as CColumn
    from pyspark.sql.connect.expressions import (LiteralExpression, UnresolvedFunction,
                                                 WindowExpression)
    e = col._expr
    if not isinstance(e, WindowExpression) or not isinstance(e._windowFunction,
                                                                UnresolvedFunction):
        return None
    fn, ws = e._windowFunction, e._windowSpec
    args = tuple(CColumn(a) for a in fn._args)
    lits = tuple(a._value if isinstance(a, LiteralExpression) else None for a in fn._args)
    order = tuple(SortKey(CColumn(s._child), bool(s._ascending), bool(s._nullsFirst))
                  for s in ws._orderSpec)
    frame = None
    if ws._frame is not None:
        f = ws._frame
        frame = Frame("rows" if f._isRowFrame else "range", _bound(f._start), _bound(f._end))
    return WindowColumn(fn._name.lower(), args, lits, bool(fn._is_distinct), CColumn(fn),
                        tuple(CColumn(p) for p in ws._partitionSpec), order, frame, str(col))


# ---------------------------------------------------------------- classic PySpark

def _classic_bound(b: Any, low: bool) -> Any:
    name = _jname(b)
    if name in ("UnboundedPreceding", "UnboundedFollowing"):
        return UNBOUNDED
    if name == "CurrentRow":
        return 0
    if name == "Value" and _jname(b.value()) == "Literal":
        return _bound(b.value().value())
    return "other"


def _classic(col: "Column") -> WindowColumn | None:
    from pyspark.sql.classic.column import Column as JColumn
    node = col._jc.node()
    if _jname(node) != "Window" or _jname(node.windowFunction()) != "UnresolvedFunction":
        return None
    from pyspark import SparkContext
    jcolumn = SparkContext._jvm.org.apache.spark.sql.Column  # type: ignore[union-attr]

    def wrap(n: Any) -> "Column":  # a ColumnNode back into a classic Column
        return JColumn(jcolumn(n))

    fn, ws = node.windowFunction(), node.windowSpec()
    jargs = _seq(fn.arguments())
    args = tuple(wrap(a) for a in jargs)
    lits = tuple(a.value() if _jname(a) == "Literal" else None for a in jargs)
    order = tuple(SortKey(wrap(s.child()), _jname(s.sortDirection()) == "Ascending",
                          _jname(s.nullOrdering()) == "NullsFirst")
                  for s in _seq(ws.sortColumns()))
    frame = None
    if not ws.frame().isEmpty():
        f = ws.frame().get()
        kind = "rows" if _jname(f.frameType()) == "Row" else "range"
        frame = Frame(kind, _classic_bound(f.lower(), True), _classic_bound(f.upper(), False))
    return WindowColumn(str(fn.functionName()).lower(), args, lits, bool(fn.isDistinct()),
                        wrap(fn), tuple(wrap(p) for p in _seq(ws.partitionColumns())), order,
                        frame, str(col))


# ---------------------------------------------------------------- classic PySpark 3.5

def _catalyst(col: "Column") -> WindowColumn | None:
    from py4j.protocol import Py4JError

    from sparkbalance.spark.window import spec_catalyst
    try:
        return spec_catalyst.read(col)
    except Py4JError:   # a field this Spark line's class does not have: run it plain
        return None
