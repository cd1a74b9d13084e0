"""Changing the keyed-state operator's partition count (``scale``), moving only what must.

:class:`Rescaling` holds :meth:`~sparkbalance.state.operator.KeyedStateOperator.scale`,
the measurement of the standing state it plans from, and the move outside a batch it shares
with ``rebalance`` (:mod:`.forecast`). A part of the operator kept in its own module, not a
class to use alone.
"""
from __future__ import annotations

import numpy as np

from sparkbalance.routing.base import check_num_partitions
from sparkbalance.state.control import report
from sparkbalance.state.control.controller import Decision, Measurement
from sparkbalance.state.control.layout import GroupLayout
from sparkbalance.state.frames.migration import migrate_state
from sparkbalance.state.control.records import MigrationRecord

__all__ = ["Rescaling"]


class Rescaling:
    """``scale`` of :class:`~sparkbalance.state.operator.KeyedStateOperator`."""

    @report.labelled("scale")
    def scale(self, num_partitions: int) -> MigrationRecord:
        """Change the number of partitions to ``num_partitions``, moving only what must move.

        Key groups (SSM/MTM): the optimal interval migration of Ding et al. (new nodes take
        over sub-intervals; removed nodes hand theirs over). Routing tables: h(k) = hash
        mod n changes with n, so most keys move (that is what key groups avoid). Shrinking
        keeps the emptied physical partitions as empty blocks (see ``state.layout``).
        """
        n_new = check_num_partitions(num_partitions)
        self._settle()
        layout = self._state.layout
        m = self._last if self._last is not None else self._measure_state()
        if isinstance(layout, GroupLayout):
            m = self._measure_state(cost=m.cost)
        decision = self._controller.plan(m, layout, n_new)
        if decision.layout == layout:
            rec = MigrationRecord(self._seq, "scale", layout.num_partitions, n_new, 0,
                                  0.0, 0.0, decision.seconds, layout.version)
            self.migrations.append(rec)
            return rec
        return self._move_now(decision, "scale")

    def _move_now(self, decision: Decision, reason: str, observe: bool = False
                  ) -> MigrationRecord:
        """Move the state to ``decision``'s layout now, in a job of its own, and commit it
        (with a ``checkpoint_dir``); on failure the operator and its commit stay as before.
        ``observe``: the move's seconds per byte teach the payoff model (a move at the
        same partition count, like a settled migration)."""
        snap = self._snapshot()
        try:
            self._state, rec = migrate_state(self._state, decision.layout, seq=self._seq,
                                             reason=reason,
                                             planned_bytes=decision.planned_bytes,
                                             candidates=decision.candidates,
                                             storage_level=self._level, cut=self._cache.cut)
            self._cache.pin(self._state.rdd)
            self.migrations.append(rec)
            if observe:
                self._controller.observe_migration(rec.seconds, rec.bytes_moved)
            report.post_migration(self, rec)
            self._last = None       # its placement is the old layout's
            if self._store is not None:
                self.save_checkpoint()
        except BaseException:
            snap.restore(self)
            raise
        return rec

    def _measure_state(self, cost: np.ndarray | None = None) -> Measurement:
        """Sizes of the current state (cost: the given per-group cost, else zero)."""
        layout = self._state.layout
        m = self._controller.measure(self._state.stats(), layout)
        if cost is not None and isinstance(layout, GroupLayout):
            m = Measurement(m.loads, m.active, m.imbalance, None, np.asarray(cost), m.memory,
                            None, m.num_keys, m.state_bytes)
        return m
