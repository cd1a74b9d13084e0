"""Where the keyed-state operator stands in its stream: one value, replaced, never mutated.

A :class:`Position` holds the state (:class:`~sparkbalance.state.frames.framed_state.FramedState`)
and what the batches so far left behind it: the next batch's sequence number, the last
applied batch id, the state's size, the last measurement, a migration decided but not yet
moved (Fang et al. §4: planned after batch ``i``, moved in batch ``i + 1``'s shuffle) and
the notes of the last decision. The operator replaces it as a batch, a move or a commit
advances; a rollback puts the old value back
(:class:`~sparkbalance.state.durability.rollback.Snapshot`).

Pure Python (no pyspark).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sparkbalance.state.control.controller import Decision, Measurement
    from sparkbalance.state.control.layout import GroupLayout, TableLayout
    from sparkbalance.state.control.payoff import Judgement
    from sparkbalance.state.frames.framed_state import FramedState, Merged
    from sparkbalance.state.frames.window import StateFold

__all__ = ["Position"]


@dataclass(frozen=True)
class Position:
    """The state and the stream position of a keyed-state operator.

    Parameters
    ----------
    state : the state, placed by ``state.layout`` (the layout it was last moved to).
    seq : sequence number of the next batch (batches applied so far).
    last_batch_id : the last applied batch id (None: no batch with an id yet).
    num_keys, state_bytes : keys of the state and Σ S(k), as last measured.
    last : the last batch's :class:`~sparkbalance.state.control.controller.Measurement`
        (its placement is ``state.layout``'s; None after a move outside a batch).
    pending : a decided layout ``F'`` not moved yet (the next batch, read or checkpoint
        resume moves it); ``pending_seq`` the batch that decided it (-1: none).
    judgement, plan_seconds : the last batch's decision notes (for its record and report).

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> at = Position(NS(layout="F"), seq=3)
    >>> at.layout, at.advanced(7).seq, at.advanced(7).last_batch_id
    ('F', 4, 7)
    >>> at.advanced(None, pending=NS(layout="F'")).layout
    "F'"
    """

    state: "FramedState"
    seq: int = 0
    last_batch_id: int | None = None
    num_keys: int = 0
    state_bytes: float = 0.0
    last: "Measurement | None" = None
    pending: "Decision | None" = None
    pending_seq: int = -1
    judgement: "Judgement | None" = None
    plan_seconds: float = 0.0

    @property
    def layout(self) -> "TableLayout | GroupLayout":
        """The layout the next batch is routed with (a decided migration included)."""
        return self.state.layout if self.pending is None else self.pending.layout

    def merged(self, pairs: Any, fold: "StateFold", carried_level: Any = None,
               tally: Any = None, routed: Any = None) -> "Merged":
        """The lazy merge of ``pairs`` (validated ``(key, value)``) into the state as batch
        ``seq``; a pending migration rides in it (its carried state cached at
        ``carried_level``, None: not cached). ``tally``: an accumulator the routing
        shuffle's map side counts the batch's keys into (no pending migration);
        ``routed``: the batch's routing shuffle by the current layout, already written
        (only what the pending migration places elsewhere is routed again)."""
        p = self.pending
        if p is None:
            return self.state.merge(pairs, fold, self.seq, tally=tally)
        return self.state.merge(pairs, fold, self.seq, to=p.layout, candidates=p.candidates,
                                carried_level=carried_level, routed=routed)

    def replace(self, **changes: Any) -> "Position":
        """This position with ``changes`` (field names of :class:`Position`)."""
        return dataclasses.replace(self, **changes)

    def settled(self, state: "FramedState") -> "Position":
        """The pending migration moved: ``state`` is placed by the pending layout."""
        return dataclasses.replace(self, state=state, pending=None, pending_seq=-1)

    def advanced(self, batch_id: int | None, pending: "Decision | None" = None
                 ) -> "Position":
        """One batch on: ``seq + 1``, ``batch_id`` the last applied when given, and a
        migration it decided (``pending``) moved by the next batch."""
        changes: dict[str, Any] = {"seq": self.seq + 1}
        if batch_id is not None:
            changes["last_batch_id"] = batch_id
        if pending is not None:
            changes.update(pending=pending, pending_seq=self.seq)
        return dataclasses.replace(self, **changes)
