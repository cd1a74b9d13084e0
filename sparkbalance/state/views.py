"""Read-only views of the keyed-state operator: its layout, partition function and state.

:class:`StateViews` holds the properties of
:class:`~sparkbalance.state.operator.KeyedStateOperator` that describe where state lives
and read it between batches (a read first moves a pending migration, ``_settle``). A part of
the operator kept in its own module, not a class to use alone.
"""
from __future__ import annotations

from typing import Any

from sparkbalance.routing.table import RoutingTable
from sparkbalance.state.control.layout import GroupLayout, TableLayout

__all__ = ["StateViews"]


class StateViews:
    """Layout and state properties of :class:`~sparkbalance.state.operator.KeyedStateOperator`."""

    @property
    def strategy(self) -> Any:
        """The registry record of the planner (:func:`sparkbalance.strategies.get`)."""
        return self._controller.strategy

    @property
    def num_partitions(self) -> int:
        """n: partitions the layout routes to."""
        return self.layout.num_partitions

    @property
    def layout(self) -> TableLayout | GroupLayout:
        """The layout the next batch is routed with (a decided migration included)."""
        return self._state.layout if self._pending is None else self._pending.layout

    @property
    def pending_migration(self) -> bool:
        """A new layout is decided and its keys move with the next batch (or with the next
        read of the state or ``scale``; a checkpoint saves it unmoved)."""
        return self._pending is not None

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
        return self.layout.version

    @property
    def state_rdd(self) -> Any:
        """``(key, state)`` pairs of the current state (lazy; for big states)."""
        self._settle()
        return self._state.pairs()

    @property
    def blocks_rdd(self) -> Any:
        """One ``{key: entry}`` block per physical partition (entry = ``[state, S(k),
        window segments]``; lazy, decodes every frame)."""
        self._settle()
        return self._state.blocks()

    @property
    def frames_rdd(self) -> Any:
        """The raw state RDD: frames (``bytes``, :mod:`~sparkbalance.state.frames.format`)."""
        self._settle()
        return self._state.rdd

    def collect_state(self) -> dict:
        """``{key: state}`` on the driver (tests and small states). A key stored twice is
        a ``RuntimeError`` (a broken layout), never silently merged."""
        self._settle()
        return self._state.collect()
