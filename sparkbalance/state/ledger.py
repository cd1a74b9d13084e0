"""The keyed-state operator's records part: its ``history`` and ``migrations``.

:class:`Ledger` holds the two lists the operator exposes (one
:class:`~sparkbalance.state.control.records.BatchRecord` per applied batch, one
:class:`~sparkbalance.state.control.records.MigrationRecord` per migration) and writes the
rows: a batch's, with its decided migration provisional (the plan's moves and bytes) until
a later batch or read moves it (:meth:`Ledger.moved`, which then fills in the batch's row).
A rollback takes its :meth:`~Ledger.mark` and puts it back into the same lists (a caller's
reference to ``op.history`` stays valid).

Pure Python (no pyspark).
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from sparkbalance.state.control.records import BatchRecord, MigrationRecord, batch_record

if TYPE_CHECKING:
    from sparkbalance.state.control.controller import Decision, Measurement
    from sparkbalance.state.position import Position

__all__ = ["Ledger"]


class Ledger:
    """``history`` and ``migrations`` of a keyed-state operator.

    Examples
    --------
    >>> ledger = Ledger()
    >>> mark = ledger.mark()
    >>> ledger.migrations.append("a migration"); history = ledger.history
    >>> ledger.restore(mark); ledger.migrations, ledger.history is history
    ([], True)
    """

    def __init__(self) -> None:
        self.history: list[BatchRecord] = []
        self.migrations: list[MigrationRecord] = []
        self._early: dict[int, tuple] = {}    # moves of batches whose row is not added yet

    def batch(self, at: "Position", batch_id: int | None, m: "Measurement",
              layout_next: Any, decision: "Decision | None", seconds: float,
              timed: bool) -> BatchRecord:
        """Add the row of batch ``at.seq`` (``at``: the position it was applied at, with its
        judgement); ``decision``: the migration it decided, moved later, or None."""
        planned = None if decision is None else MigrationRecord(
            at.seq, "imbalance", m.loads.size, decision.layout.num_partitions,
            decision.planned_moves, decision.planned_bytes, decision.planned_bytes, 0.0,
            decision.layout.version)
        after = m.imbalance if decision is None else decision.imbalance_after
        row = batch_record(at.seq, batch_id, m, layout_next, planned, after, at.plan_seconds,
                           seconds, timed=timed, judgement=at.judgement)
        early = self._early.pop(at.seq, None)
        if early is not None:       # a move planned on this batch's tally rode in it
            row = dataclasses.replace(row, keys_moved=early[0], bytes_moved=early[1],
                                      migration_seconds=early[2], rebalanced=True)
        self.history.append(row)
        return row

    def moved(self, at: "Position", keys_moved: int, bytes_moved: float, frames: int,
              seconds: float) -> MigrationRecord:
        """Add the record of ``at``'s pending migration, now moved, and put its moved keys
        and bytes in the row of the batch that decided it."""
        p, old = at.pending, at.state.layout
        rec = MigrationRecord(at.pending_seq, "imbalance", old.num_partitions,
                              p.layout.num_partitions, keys_moved, bytes_moved,
                              p.planned_bytes, seconds, p.layout.version, frames)
        self.migrations.append(rec)
        for i in range(len(self.history) - 1, -1, -1):
            if self.history[i].seq == at.pending_seq:
                self.history[i] = dataclasses.replace(
                    self.history[i], keys_moved=keys_moved, bytes_moved=bytes_moved,
                    migration_seconds=seconds)
                break
        else:   # decided on the batch's own tally: its row is added after its merge
            self._early[at.pending_seq] = (keys_moved, bytes_moved, seconds)
        return rec

    def mark(self) -> tuple[tuple[BatchRecord, ...], tuple[MigrationRecord, ...]]:
        """The records now, as a value (for a rollback)."""
        return tuple(self.history), tuple(self.migrations)

    def restore(self, mark: tuple[tuple, tuple]) -> None:
        """Back to ``mark``, in the same lists."""
        self.history[:], self.migrations[:] = mark
        self._early.clear()
