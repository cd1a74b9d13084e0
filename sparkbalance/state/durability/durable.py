"""The keyed-state operator's durability: checkpoint commits, resume, the last outputs.

:class:`Durable` holds the methods of :class:`~sparkbalance.state.operator.KeyedStateOperator`
that talk to ``checkpoint_dir`` (its store, lease and manifests): saving a commit (a decided
migration saved unmoved), owning the directory and resuming its commit, and reading the
last batch's outputs back. It reads and sets the operator's attributes (``_store``,
``_lease``, ``_state``, ``_manifest``, ``_resumed``, ``_pending``...), so it is a part of
the operator kept in its own module, not a class to use alone.
"""
from __future__ import annotations

import logging
from typing import Any

from sparkbalance.state.durability.checkpoint import load_outputs, rebased, restore_checkpoint, save_checkpoint, still_reads
from sparkbalance.state.control import report
from sparkbalance.state.durability.lease import Lease

__all__ = ["Durable"]

_LOG = logging.getLogger(__name__)


class Durable:
    """Checkpoint methods of :class:`~sparkbalance.state.operator.KeyedStateOperator`."""

    @report.labelled("checkpoint")
    def save_checkpoint(self) -> None:
        """Commit state + layout + version + last batch id + the last batch's outputs
        (+ a decided migration, unmoved: the resume moves it) atomically to checkpoint_dir, under new names (the previous commit stays valid
        until this one has committed); ``CheckpointError`` names the directory on failure.
        """
        if self._store is None:
            raise ValueError("checkpoint_dir=None; give the operator a checkpoint_dir")
        # No _settle(): the state is saved unmoved with the pending layout (no extra job),
        # and the resumed operator's first batch moves it, as this one's would.
        if self._resumed is not None and not still_reads(self._state.rdd, self._resumed[1]):
            self._resumed = None     # lineage cut since the resume: its files may go
        self._manifest = save_checkpoint(
            self._store, self._state, seq=self._seq, last_batch_id=self.last_batch_id,
            planner=self.planner, window=self.window, num_keys=self._num_keys,
            state_bytes=self._state_bytes, outputs=self._outputs, previous=self._manifest,
            keep=self._rebase, fence=self._lease.check, pending=self._pending,
            pending_seq=self._pending_seq)

    def _rebase(self, man: Any) -> tuple[str, ...]:
        """Once ``man`` has committed: base the state on its files (a lost cached block is
        then read back from one part file, not recomputed from the batches before), and
        name the files that must stay — those the state, a resumed state or an outputs
        RDD handed out may still read."""
        try:
            new = rebased(self._state, self._store, man)
        except Exception as e:  # noqa: BLE001 - committed; the unrebased state stays exact
            _LOG.warning("sparkbalance keyed state: state not based on %s (%s); a lost "
                         "block recomputes from lineage", self._store.display(man.state_dir),
                         e)
            new = None
        if new is not None:
            self._state, self._base_dir = new, man.state_dir
        keep = list(self._files.names())
        if self._base_dir is not None:
            keep.append(self._base_dir)
        if self._resumed is not None:
            keep.append(self._resumed[0])
        return tuple(keep)

    def last_outputs(self) -> Any:
        """The outputs, an RDD of ``(key, output)``, of the last applied batch — also after
        a restart, read from the checkpoint, until the next batch commits; None when there
        is none (no batch yet, or the checkpoint predates the outputs)."""
        if self._outputs is not None and self._outputs.frames is not None:
            from sparkbalance.state.frames.format import frame_payload
            return self._outputs.frames.flatMap(frame_payload)
        if self._manifest is not None and self._manifest.outputs_seq == self._seq - 1:
            return load_outputs(self._store, self.sc, self._manifest)
        return None

    def _open_store(self, num_partitions: int, lease_timeout: float) -> None:
        """Own the directory (lease), then resume its commit or commit the empty state (so
        that files without a manifest later always mean a lost manifest)."""
        self._store.mkdirs()
        self._lease = Lease(self._store, lease_timeout)
        self._lease.acquire()
        try:
            if not self._resume(num_partitions):
                self.save_checkpoint()
        except BaseException:
            self._lease.release()
            raise

    def _resume(self, num_partitions: int) -> bool:
        got = restore_checkpoint(self._store, self._state.ops, planner=self.planner,
                                 window=self.window, num_partitions=num_partitions,
                                 storage_level=self._level)
        if got is None:
            return False
        self._state.rdd.unpersist()
        self._state = got.state
        self._cache.reset(*got.state.cached)
        self._seq = got.seq
        self._pending, self._pending_seq = got.pending, got.pending_seq
        self.last_batch_id = got.last_batch_id
        self._num_keys, self._state_bytes = got.num_keys, got.state_bytes
        self._manifest = got.manifest
        self._resumed = (got.manifest.state_dir, got.state.rdd)
        self._base_dir = got.manifest.state_dir
        return True
