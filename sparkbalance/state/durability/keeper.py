"""The keyed-state operator's durability part: it owns ``checkpoint_dir``, commits, resumes,
and keeps the last batch's outputs.

:class:`CheckpointKeeper` holds what durability needs and nothing of the operator: the store
(:mod:`~sparkbalance.state.durability.store`), the lease on the directory
(:mod:`~sparkbalance.state.durability.lease`), the last commit's manifest, the files a
resumed or rebased state still reads, the files outputs handed out may read, and the kept
outputs: of the last applied batch (:meth:`CheckpointKeeper.last_outputs`) and of the last
applied batch with a batch id (:meth:`CheckpointKeeper.replay_outputs`: a replay of batch
``b`` gets ``b``'s outputs or None, never another batch's, also when calls without a batch
id came in between, and also after a restart). The operator hands it a
:class:`~sparkbalance.state.position.Position` to commit and takes back the state to go on
with (based on the commit's files when the bridge can); for a rollback it gives a
:class:`CommitMark` and takes it back.
"""
from __future__ import annotations

import dataclasses
import logging
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from sparkbalance.state.durability.checkpoint import (BatchOutputs, Restored, load_outputs,
                                                      rebased, restore_checkpoint,
                                                      save_checkpoint, still_reads)
from sparkbalance.state.durability.lease import Lease
from sparkbalance.state.durability.manifest import new_token
from sparkbalance.state.durability.store import store_for
from sparkbalance.state.frames.caching import FileLoans

if TYPE_CHECKING:
    from sparkbalance.state.frames.framed_state import FramedState
    from sparkbalance.state.frames.rdds import FrameOps
    from sparkbalance.state.position import Position

__all__ = ["CheckpointKeeper", "CommitMark"]

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class CommitMark:
    """What a :class:`CheckpointKeeper` had committed and kept at one moment (a rollback
    puts it back): the kept outputs (the last batch's and a replay's, whose handed-out RDD
    is held weakly: a mark must not keep the files it reads), the last manifest, the resumed
    state's files and RDD, and the files the state is based on."""

    outputs: BatchOutputs | None
    replay: BatchOutputs | None
    replay_rdd: Any               # a weak reference to ``replay.rdd`` (None: none)
    manifest: Any
    resumed: tuple[str, Any] | None
    base_dir: str | None


class CheckpointKeeper:
    """Checkpoint commits, resume and the last outputs of one keyed-state operator.

    Parameters
    ----------
    sc : the SparkContext.
    checkpoint_dir : a local path or Hadoop URI, or None (no durability: only the last
        outputs are kept, in memory).

    Examples
    --------
    >>> keeper = CheckpointKeeper(sc, "/tmp/ck")                   # doctest: +SKIP
    >>> got = keeper.open(30.0, ops, commit_empty, planner="mixed", window=None,
    ...                   num_partitions=4, storage_level=level)    # doctest: +SKIP
    """

    def __init__(self, sc: Any, checkpoint_dir: Any) -> None:
        self.sc = sc
        self.store = None if checkpoint_dir is None else store_for(sc, checkpoint_dir)
        self.lease: Lease | None = None
        self.outputs: BatchOutputs | None = None     # the last applied batch's outputs
        self.replay: BatchOutputs | None = None      # ... of the last one with a batch id
        self.manifest: Any = None                     # the last commit
        self.resumed: tuple[str, Any] | None = None  # (state dir, RDD) a resume reads
        self.base_dir: str | None = None      # the state files the state falls back to
        self.files = FileLoans()              # state files outputs handed out may read
        self._target: str | None = None       # the token of state_target
        self._written: tuple[Any, str, dict] | None = None   # (state, token, file table)
        #: (layout, its file) of the last commit: a commit of the same layout object
        #: names that file again (checked against the manifest, also after a rollback)
        self._layout: tuple[Any, str] | None = None

    @property
    def active(self) -> bool:
        """A ``checkpoint_dir`` is given: batches commit to it."""
        return self.store is not None

    # ------------------------------------------------------------------ owning the directory
    def open(self, lease_timeout: float, ops: "FrameOps", commit_empty: Callable[[], None], *,
             planner: str, window: int | None, num_partitions: int, storage_level: Any
             ) -> Restored | None:
        """Create the directory and own it (:class:`~sparkbalance.state.durability.lease.Lease`),
        then read its commit back, validated (:func:`restore_checkpoint`), or, in a
        directory without one, ``commit_empty()`` and return None. The lease is released
        when this fails."""
        self.store.mkdirs()
        self.lease = Lease(self.store, lease_timeout)
        self.lease.acquire()
        try:
            got = restore_checkpoint(self.store, ops, planner=planner, window=window,
                                     num_partitions=num_partitions,
                                     storage_level=storage_level)
            if got is None:
                commit_empty()
                return None
        except BaseException:
            self.lease.release()
            raise
        man = got.manifest
        self.manifest = man
        self._layout = (got.state.layout, man.layout_file)
        self.resumed = (man.state_dir, got.state.rdd)
        self.base_dir = man.state_dir
        if man.outputs_dir is not None and man.outputs_batch_id is not None:
            # committed: a replay reads them, and the next commit keeps them (files)
            self.replay = BatchOutputs(man.outputs_seq, man.outputs_batch_id)
        return got

    def release(self) -> None:
        """Give the directory up (nothing without a lease)."""
        if self.lease is not None:
            self.lease.release()

    # ------------------------------------------------------------------ commits
    def commit(self, at: "Position", *, planner: str, window: int | None) -> "FramedState":
        """Commit ``at`` (state + layout + version + last batch id + the kept outputs + a
        pending migration, unmoved) atomically, under new names; return the state to go on
        with: ``at.state`` based on the commit's files when the bridge can (a lost cached
        block is then read back from one part file), else ``at.state`` itself. A failure
        is a ``CheckpointError`` naming the directory; the previous commit stays."""
        if self.store is None:
            raise ValueError("checkpoint_dir=None; give the operator a checkpoint_dir")
        if self.resumed is not None and not still_reads(at.state.rdd, self.resumed[1]):
            self.resumed = None     # lineage cut since the resume: its files may go
        state = [at.state]

        def keep(man: Any) -> tuple[str, ...]:
            # Once ``man`` has committed: base the state on its files, and name the files
            # that must stay - those the state, a resumed state or outputs handed out read.
            state[0] = self._rebased(at.state, man)
            return self._kept_files()

        pre, self._written = self._written, None
        written = None
        if pre is not None and pre[0] is at.state and pre[1].startswith(f"{at.seq:08d}-"):
            written = pre[1:]
        layout, man = at.state.layout, self.manifest
        same = (man is not None and self._layout is not None and self._layout[0] is layout
                and self._layout[1] == man.layout_file)
        self.manifest = save_checkpoint(
            self.store, at.state, seq=at.seq, last_batch_id=at.last_batch_id,
            planner=planner, window=window, num_keys=at.num_keys,
            state_bytes=at.state_bytes, outputs=self._committed_outputs(),
            previous=man,
            keep=keep, fence=self.lease.check, pending=at.pending,
            pending_seq=at.pending_seq, written=written, same_layout=same)
        self._layout = (layout, self.manifest.layout_file)
        return state[0]

    def merge_terms(self, seq: int, every: int, truncate_every: int, jvm: bool
                    ) -> tuple[bool, bool, tuple[Any, str] | None]:
        """How the merge job of batch ``seq`` (the operator's count before it) stands to
        the commits, made every ``every`` batches: ``(truncated, rebasing, write_state)``.
        ``rebasing``: every batch commits and the bridge (``jvm``) can base the state on
        the commit's files: lineage then never reaches past the previous batch, so no
        truncation is needed and a migration's carried state need not be cut (both stay
        recomputable); else ``truncated`` every ``truncate_every`` batches.
        ``write_state``: the batch commits, and its merge job writes the state files
        there (:meth:`state_target`); else None."""
        rebasing = self.active and every == 1 and bool(jvm)
        truncated = not rebasing and (seq + 1) % truncate_every == 0
        commits = self.active and (seq + 1) % every == 0
        return truncated, rebasing, self.state_target(seq + 1) if commits else None

    def state_target(self, seq: int) -> tuple[Any, str] | None:
        """Where the job that computes the state of the commit ``seq`` may write its
        frames: ``(store, "state-<token>")`` (None without a directory). Handed back by
        :meth:`state_written`, the commit ``seq`` of exactly that state writes no state
        files of its own; files written but never committed (a failed batch) are removed
        after the next commit, as any uncommitted save's."""
        if self.store is None:
            return None
        self._target = new_token(seq)
        return self.store, f"state-{self._target}"

    def state_written(self, state: "FramedState", files: dict) -> None:
        """``state``'s frames are in :meth:`state_target`'s directory, as ``files``."""
        if self._target is not None:
            self._written, self._target = (state, self._target, files), None

    def _rebased(self, state: "FramedState", man: Any) -> "FramedState":
        try:
            new = rebased(state, self.store, man)
        except Exception as e:  # noqa: BLE001 - committed; the unrebased state stays exact
            _LOG.warning("sparkbalance keyed state: state not based on %s (%s); a lost "
                         "block recomputes from lineage", self.store.display(man.state_dir),
                         e)
            new = None
        if new is None:
            return state
        self.base_dir = man.state_dir
        return new

    def _kept_files(self) -> tuple[str, ...]:
        keep = list(self.files.names())
        if self.base_dir is not None:
            keep.append(self.base_dir)
        if self.resumed is not None:
            keep.append(self.resumed[0])
        return tuple(keep)

    # ------------------------------------------------------------------ outputs
    def keep_outputs(self, outputs: BatchOutputs) -> None:
        """Keep a batch's outputs until the next batch commits (for a replay of its batch
        id until the next batch with an id); the files its merge read stay while the
        outputs RDD handed out (``outputs.rdd``) is referenced.

        A replay is answered from the commit's outputs files once committed. Without a
        ``checkpoint_dir`` there are none, so the outputs RDD itself is kept for it: its
        cache, and the cut lineage it may recompute from, stay until the next batch with
        an id (with one, keeping it would keep the state files it reads: it is not kept).
        """
        self.files.lend(outputs.rdd, self.base_dir)
        bare = dataclasses.replace(outputs, rdd=None)
        if outputs.batch_id is not None:
            self.replay = outputs if self.store is None else bare
        self.outputs = bare

    def _committed_outputs(self) -> BatchOutputs | None:
        """The outputs a commit keeps: those a replay may ask for (the last batch with an
        id), else the last batch's."""
        return self.replay if self.replay is not None else self.outputs

    def last_outputs(self, seq: int) -> Any:
        """The kept outputs, an RDD of ``(key, output)``, of the batch before ``seq`` - also
        after a restart, read from the checkpoint; None when there are none."""
        if self.outputs is not None and self.outputs.frames is not None:
            from sparkbalance.state.frames.format import frame_payload
            return self.outputs.frames.flatMap(frame_payload)
        if self.manifest is not None and self.manifest.outputs_seq == seq - 1:
            return load_outputs(self.store, self.sc, self.manifest)
        return None

    def replay_outputs(self, batch_id: int) -> Any:
        """The outputs of batch ``batch_id`` when they are the kept ones (the last batch
        with an id), committed or in memory; None otherwise - never another batch's."""
        kept, man = self.replay, self.manifest
        if kept is None or kept.batch_id != batch_id:
            return None
        if man is not None and man.outputs_dir is not None and man.outputs_seq == kept.seq:
            return load_outputs(self.store, self.sc, man)
        if kept.rdd is not None:
            return kept.rdd
        if kept.frames is not None:
            from sparkbalance.state.frames.format import frame_payload
            return kept.frames.flatMap(frame_payload)
        return None

    # ------------------------------------------------------------------ rollback
    def mark(self) -> CommitMark:
        """What is committed and kept now (for a rollback)."""
        replay, rdd = self.replay, None
        if replay is not None and replay.rdd is not None:
            replay, rdd = dataclasses.replace(replay, rdd=None), weakref.ref(replay.rdd)
        return CommitMark(self.outputs, replay, rdd, self.manifest, self.resumed,
                          self.base_dir)

    def restore(self, mark: CommitMark) -> None:
        """Back to ``mark`` (a batch whose commit failed is undone)."""
        replay = mark.replay
        if replay is not None and mark.replay_rdd is not None:
            replay = dataclasses.replace(replay, rdd=mark.replay_rdd())
        self.outputs, self.replay, self.manifest = mark.outputs, replay, mark.manifest
        self.resumed, self.base_dir = mark.resumed, mark.base_dir
        self._target = self._written = None     # never committed: cleaned after the next
