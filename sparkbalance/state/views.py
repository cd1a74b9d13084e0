"""The keyed-state operator's views: where the state lives and reading it between batches.

:class:`StateViews` answers from the operator's :class:`~sparkbalance.state.position.Position`
(the layout the next batch is routed with, its partition function, table and version) and
reads the state once a pending migration is moved (``settled``). It is a view of what the
operator gives it (its position and a function that moves a pending migration), made per
read, so it holds no reference to the operator. :func:`forward` makes each view a property
of :class:`~sparkbalance.state.operator.KeyedStateOperator` with the view's docstring.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from sparkbalance.routing.table import RoutingTable
from sparkbalance.state.control.layout import GroupLayout, TableLayout

if TYPE_CHECKING:
    from sparkbalance.state.frames.framed_state import FramedState
    from sparkbalance.state.position import Position

__all__ = ["StateViews", "forward"]


class StateViews:
    """Layout and state reads of a keyed-state operator.

    Parameters
    ----------
    at : the operator's position now.
    settled : ``settled() -> FramedState``, the state with a pending migration moved.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> layout = NS(num_partitions=4, version=2, fn="F")
    >>> views = StateViews(NS(layout=layout, pending=None), None)
    >>> views.num_partitions, views.version, views.pending_migration
    (4, 2, False)
    """

    def __init__(self, at: "Position", settled: Callable[[], "FramedState"]) -> None:
        self._at = at
        self._settled = settled

    @property
    def num_partitions(self) -> int:
        """n: partitions the layout routes to."""
        return self.layout.num_partitions

    @property
    def layout(self) -> TableLayout | GroupLayout:
        """The layout the next batch is routed with (a decided migration included)."""
        return self._at.layout

    @property
    def pending_migration(self) -> bool:
        """A new layout is decided and its keys move with the next batch (or with the next
        read of the state or ``scale``; a checkpoint saves it unmoved)."""
        return self._at.pending is not None

    @property
    def partition_function(self) -> Any:
        """The (versioned) partition function F the next batch is routed with."""
        return self.layout.fn

    @property
    def table(self) -> RoutingTable | None:
        """The routing table (routing-table planners) or None (key groups)."""
        layout = self.layout
        return layout.table if isinstance(layout, TableLayout) else None

    @property
    def version(self) -> int:
        """The version of the layout the next batch is routed with."""
        return self.layout.version

    @property
    def state_rdd(self) -> Any:
        """``(key, state)`` pairs of the current state (lazy; for big states)."""
        return self._settled().pairs()

    @property
    def blocks_rdd(self) -> Any:
        """One ``{key: entry}`` block per physical partition (entry = ``[state, S(k),
        window segments]``; lazy, decodes every frame)."""
        return self._settled().blocks()

    @property
    def frames_rdd(self) -> Any:
        """The raw state RDD: frames (``bytes``, :mod:`~sparkbalance.state.frames.format`)."""
        return self._settled().rdd

    def collect_state(self) -> dict:
        """``{key: state}`` on the driver (tests and small states). A key stored twice is
        a ``RuntimeError`` (a broken layout), never silently merged."""
        return self._settled().collect()


def forward(name: str) -> property:
    """A read-only property of the operator answering ``StateViews.<name>`` of its views
    (the operator's ``_views()``), with that view's docstring.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> class Op:
    ...     version = forward("version")
    ...     def _views(self): return StateViews(NS(layout=NS(version=5)), None)
    >>> Op().version
    5
    """
    view = getattr(StateViews, name)
    return property(lambda op: getattr(op._views(), name), doc=view.__doc__)
