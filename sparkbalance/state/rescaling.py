"""The keyed-state operator's rescaling part: the plan of ``scale``, moving only what must.

:class:`Rescaling` plans a new partition count with the operator's controller, from the
standing state's sizes (and the last batch's costs): key groups (SSM/MTM) by the optimal
interval migration of Ding et al., routing tables by the planner at the new ``n``. It reads
the operator's :class:`~sparkbalance.state.position.Position` it is given, holds the controller
and the records (a plan that moves nothing is recorded here), and has the operator move
the state (the ``move`` it is given: outside a batch, committed, undone on failure).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from sparkbalance.routing.base import check_num_partitions
from sparkbalance.state.control.controller import Controller, Decision, Measurement
from sparkbalance.state.control.layout import GroupLayout
from sparkbalance.state.control.records import MigrationRecord
from sparkbalance.state.ledger import Ledger

if TYPE_CHECKING:
    from sparkbalance.state.frames.framed_state import FramedState
    from sparkbalance.state.position import Position

__all__ = ["Rescaling", "Move"]

#: ``move(decision, reason, observe) -> MigrationRecord``: the operator moves its state to
#: ``decision.layout`` now, in a job of its own, and commits it (on failure it stays as it
#: was); ``observe``: the move teaches the payoff model.
Move = Callable[[Decision, str, bool], MigrationRecord]


class Rescaling:
    """The plan of ``scale`` for a keyed-state operator.

    Parameters
    ----------
    controller : the operator's :class:`~sparkbalance.state.control.controller.Controller`.
    ledger : the operator's records (:class:`~sparkbalance.state.ledger.Ledger`).

    Examples
    --------
    >>> rescaling = Rescaling(op_controller, op_ledger)             # doctest: +SKIP
    >>> rescaling.plan(settled_position, 8).layout.num_partitions   # doctest: +SKIP
    8
    """

    def __init__(self, controller: Controller, ledger: Ledger) -> None:
        self._controller = controller
        self._ledger = ledger

    def scale(self, num_partitions: int, settled: Callable[[], "Position"],
              move: Move) -> MigrationRecord:
        """Plan ``num_partitions`` partitions from ``settled()`` (the operator's position
        with a pending migration moved) and ``move`` there; a plan that keeps every key in
        place is recorded as it is. A bad count raises before any job runs."""
        n_new = check_num_partitions(num_partitions)
        at = settled()
        decision = self.plan(at, n_new)
        if decision.layout != at.state.layout:
            return move(decision, "scale", False)
        layout = at.state.layout
        rec = MigrationRecord(at.seq, "scale", layout.num_partitions, n_new, 0, 0.0, 0.0,
                              decision.seconds, layout.version)
        self._ledger.migrations.append(rec)
        return rec

    def plan(self, at: "Position", num_partitions: int) -> Decision:
        """The layout of ``num_partitions`` partitions for the state of ``at`` (settled: no
        pending migration), planned on its last measurement or, without one (or for key
        groups, whose sizes the plan weighs), on the state's sizes (one job)."""
        layout = at.state.layout
        m = at.last if at.last is not None else self._measure_state(at.state)
        if isinstance(layout, GroupLayout):
            m = self._measure_state(at.state, cost=m.cost)
        return self._controller.plan(m, layout, num_partitions)

    def _measure_state(self, state: "FramedState", cost: np.ndarray | None = None
                       ) -> Measurement:
        """Sizes of ``state`` (one job; cost: the given per-group cost, else zero)."""
        layout = state.layout
        m = self._controller.measure(state.stats(), layout)
        if cost is not None and isinstance(layout, GroupLayout):
            m = Measurement(m.loads, m.active, m.imbalance, None, np.asarray(cost), m.memory,
                            None, m.num_keys, m.state_bytes)
        return m
