"""Changing the keyed-state operator's partition count (``scale``), moving only what must.

:class:`Rescaling` holds :meth:`~sparkbalance.state.operator.KeyedStateOperator.scale` and
the measurement of the standing state it plans from. A part of the operator kept in its
own module, not a class to use alone.
"""
from __future__ import annotations

import numpy as np

from ..routing.base import check_num_partitions
from . import report
from .controller import Measurement
from .layout import GroupLayout
from .migration import migrate_state
from .records import MigrationRecord

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
        snap = self._snapshot()
        try:
            rec = None
            if decision.layout != layout:
                self._state, rec = migrate_state(self._state, decision.layout, seq=self._seq,
                                                 reason="scale",
                                                 planned_bytes=decision.planned_bytes,
                                                 candidates=decision.candidates,
                                                 storage_level=self._level,
                                                 cut=self._cache.cut)
                self._cache.pin(self._state.rdd)
                self.migrations.append(rec)
                report.post_migration(self, rec)
            if rec is None:
                rec = MigrationRecord(self._seq, "scale", layout.num_partitions, n_new, 0,
                                      0.0, 0.0, decision.seconds, layout.version)
                self.migrations.append(rec)
                return rec
            self._last = None
            if self._store is not None:
                self.save_checkpoint()
        except BaseException:
            snap.restore(self)      # the layout before scale() and its commit stay in force
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
