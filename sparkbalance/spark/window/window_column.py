"""The parts of a window Column, as :mod:`sparkbalance.spark.window.spec` reads them from
every shape PySpark keeps (classic 4, classic 3.5, Spark Connect), and the small JVM helpers
the classic readers share."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column

__all__ = ["UNBOUNDED", "SortKey", "Frame", "WindowColumn", "bound", "jseq", "jname"]

#: A frame bound that is unbounded (``Window.unboundedPreceding/Following``).
UNBOUNDED = None
# PySpark's own cut-off: bounds at or beyond it mean unbounded (``Window._PRECEDING_THRESHOLD``).
_UNBOUNDED_AT = 1 << 62


@dataclass(frozen=True)
class SortKey:
    """One ORDER BY term: the expression and its direction and null placement."""

    expr: "Column"
    ascending: bool
    nulls_first: bool

    def sort_column(self, col: "Column") -> "Column":
        """``col`` sorted as this term sorts its expression."""
        if self.ascending:
            return col.asc_nulls_first() if self.nulls_first else col.asc_nulls_last()
        return col.desc_nulls_first() if self.nulls_first else col.desc_nulls_last()


@dataclass(frozen=True)
class Frame:
    """A window frame: ``rows`` or ``range``, bounds as offsets (None = unbounded, 0 = current row).

    A RANGE offset that is not an integer (an interval, a decimal) is kept as ``"other"``:
    the frame is then run as plain Spark runs it.
    """

    kind: str
    lower: Any
    upper: Any


@dataclass(frozen=True)
class WindowColumn:
    """What ``func(args).over(spec)`` is made of.

    ``frame`` None means the spec named no frame (Spark's default: RANGE UNBOUNDED PRECEDING
    to CURRENT ROW with an ORDER BY, the whole partition without one; ranking and offset
    functions have their own).
    """

    function: str
    args: tuple
    literals: tuple
    distinct: bool
    fn: "Column"
    partition: tuple
    order: tuple
    frame: Frame | None
    text: str


def bound(v: Any) -> Any:
    """A frame bound's offset as :class:`Frame` keeps it: an int, :data:`UNBOUNDED` at or
    beyond PySpark's cut-off, ``"other"`` for anything else (an interval, a decimal)."""
    if isinstance(v, bool) or not isinstance(v, int):
        return "other"
    return UNBOUNDED if abs(v) >= _UNBOUNDED_AT else int(v)


def jseq(s: Any) -> list:
    """A Scala ``Seq`` (through py4j) as a list."""
    return [s.apply(i) for i in range(s.size())]


def jname(obj: Any) -> str:
    """A JVM object's class name without package or the ``$`` of a Scala object."""
    return obj.getClass().getSimpleName().rstrip("$")
