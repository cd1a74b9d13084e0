"""Durable checkpoints of the keyed state that a crash can never destroy.

Layout of ``checkpoint_dir``: ``manifest.json`` (the commit point, written atomically: see
``state.store``; the files it names are described in :mod:`~sparkbalance.state.durability.manifest`),
``lease.json`` (the owner of the directory, ``state.lease``), and per save a pickled
layout, the state frames (one part file per partition, ``state.statefiles``), the outputs
frames of the last applied batch and, when a migration is decided but not yet moved, the
pending migration.

A save writes everything under **new names** (an unchanged layout: the last commit's file
named again), then commits by the atomic replace of the manifest. Until that replace the
previous manifest and its files are untouched, so a crash at any step resumes the previous
commit exactly; files of older or uncommitted saves are removed only after a commit, and
never those a live (resumed) state still reads (``keep``). A save never moves a pending
migration first (that would cost jobs of its own): it commits the unsettled state with the
pending layout, and a resume moves it in its first batch's shuffle, as the live operator
would have. A fresh directory gets a commit of the empty state first, so files of a save
after the first (sequence number > 0) without a manifest mean a lost manifest: the start
is refused, the files are never overwritten. Every error is a
:class:`~sparkbalance.state.durability.manifest.CheckpointError` naming the file or the
directory and the cause. Only the manifest is synced: the files it names are written
before it and checked by digest when read (a torn file is named, never read as state).
The directory is a local path or a Hadoop URI (:mod:`sparkbalance.state.durability.store`);
the executors write the state into it, so on a cluster it must be a shared file system.
"""
from __future__ import annotations

import hashlib
import pickle
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Collection

from sparkbalance.state.durability.manifest import (MANIFEST, CheckpointError, Manifest, check_compatible,
                       check_unmanaged, clean_stale, new_token, read_layout, read_manifest,
                       read_pending, write_layout, write_manifest, write_pending)

if TYPE_CHECKING:
    from sparkbalance.state.frames.rdds import FrameOps
    from sparkbalance.state.frames.framed_state import FramedState

__all__ = ["BatchOutputs", "outputs_frames", "save_checkpoint", "restore_checkpoint",
           "load_outputs", "Restored", "still_reads", "rebased"]


@dataclass(frozen=True)
class BatchOutputs:
    """The outputs of one applied batch, kept with the checkpoint until the next batch
    commits: ``frames`` (an outputs frame RDD, not yet written) or, once committed, the
    manifest's ``outputs_dir``; ``rdd``, the ``(key, output)`` RDD handed to the caller
    (kept for a replay of ``batch_id``: its cache and the lineage it reads stay);
    ``collected``, the same frames already on the driver (bytes, one per partition, brought
    back by the merge job): the commit then writes them from the driver, no job."""

    seq: int
    batch_id: int | None
    frames: Any = None
    rdd: Any = None
    collected: list | None = None


def outputs_frames(merged: Any) -> Any:
    """The outputs frames of a merged batch (:class:`~sparkbalance.state.frames.framed_state.Merged`):
    what a checkpoint keeps of the batch's outputs (bytes, no decoding)."""
    from sparkbalance.state.frames import format as fr
    return merged.base.ops.select(merged.rdd, fr.TAG_OUTPUTS)


# --------------------------------------------------------------------------- save / restore
def _write_state(store: Any, name: str, state: "FramedState") -> dict:
    from sparkbalance.state.durability.state_files import write_frames
    return write_frames(store, name, state.rdd)


def _write_outputs(store: Any, name: str, frames: Any) -> dict:
    from sparkbalance.state.durability.state_files import write_frames
    return write_frames(store, name, frames)


#: Name of the one file a driver-written outputs save keeps its frames in (``outputs_files``).
OUTPUTS_PICKLE = "frames.pkl"


def _write_collected(store: Any, name: str, frames: list) -> dict:
    """Write outputs frames already on the driver to the new file ``name`` (a pickled
    list, atomically: whole or absent); return its file table ``{OUTPUTS_PICKLE: [bytes,
    sha256, frames]}``."""
    data = pickle.dumps([bytes(f) for f in frames], protocol=pickle.HIGHEST_PROTOCOL)
    store.write_atomic(name, data, durable=False)     # the synced manifest names it
    return {OUTPUTS_PICKLE: [len(data), hashlib.sha256(data).hexdigest(), len(frames)]}


def _outputs_fields(store: Any, token: str, outputs: BatchOutputs | None,
                    previous: Manifest | None) -> dict:
    """Outputs of the last applied batch for the new manifest: the committed files when
    ``previous`` already holds that batch's, else written now: from the driver when the
    frames are there (``outputs.collected``: ``outputs-<token>.pkl``, no job), else from
    ``outputs.frames`` (``outputs-<token>/``, one job)."""
    if outputs is None:
        if previous is None or previous.outputs_dir is None:
            return {}
        outputs = BatchOutputs(previous.outputs_seq, previous.outputs_batch_id)
    if previous is not None and previous.outputs_seq == outputs.seq and previous.outputs_dir:
        return dict(outputs_dir=previous.outputs_dir, outputs_seq=previous.outputs_seq,
                    outputs_batch_id=previous.outputs_batch_id,
                    outputs_files=previous.outputs_files)
    if outputs.collected is not None:
        name, write, what = f"outputs-{token}.pkl", _write_collected, outputs.collected
    elif outputs.frames is None:
        return {}
    else:
        name, write, what = f"outputs-{token}", _write_outputs, outputs.frames
    files = write(store, name, what)
    return dict(outputs_dir=name, outputs_seq=outputs.seq, outputs_batch_id=outputs.batch_id,
                outputs_files=files)


def save_checkpoint(store: Any, state: "FramedState", *, seq: int, last_batch_id: int | None,
                    planner: str, window: int | None, num_keys: int, state_bytes: float,
                    outputs: BatchOutputs | None = None, previous: Manifest | None = None,
                    keep: Collection[str] | Callable[[Manifest], Collection[str]] = (),
                    fence: Callable[[], None] | None = None,
                    pending: Any = None, pending_seq: int | None = None,
                    written: tuple[str, dict] | None = None, same_layout: bool = False
                    ) -> Manifest:
    """Commit ``state`` (frames, layout with version), the last applied batch id and that
    batch's outputs to ``store`` (:mod:`~sparkbalance.state.durability.store`); return the manifest.
    ``pending`` (decided by batch ``pending_seq``) is a migration not yet moved: saved
    with the unsettled state, moved by the resumed operator's first batch.

    Everything is written under new names; ``fence()`` (the lease check) runs just before
    the manifest's atomic replace, the commit; then files of older saves are removed except
    ``keep`` (or ``keep(manifest)``, called once committed: what the caller still reads
    after acting on the commit). Any failure before the commit is a :class:`CheckpointError` naming the
    directory and the cause; ``previous`` (the last commit) then stays in force, and the
    half-written files are removed (best effort: they are never read). ``written``:
    ``(token, file table)`` of ``state``'s frames already written to ``state-<token>``
    (by the job that computed them, :func:`~sparkbalance.state.merge_job.run_merge`):
    the save then writes no state files and names the rest by the same token;
    ``same_layout``: ``state.layout`` is ``previous``'s, whose file is named again.

    Examples
    --------
    >>> save_checkpoint(store, op_state, seq=4, last_batch_id=3, planner="mixed",
    ...                 window=None, num_keys=10, state_bytes=400.0)   # doctest: +SKIP
    """
    from sparkbalance.state.durability.store import error_cause

    token = new_token(seq) if written is None else written[0]
    state_dir = f"state-{token}"
    try:
        files = _write_state(store, state_dir, state) if written is None else written[1]
        out = _outputs_fields(store, token, outputs, previous)
        layout = state.layout
        committed = (previous.layout_file, previous.layout_sha256) if same_layout else None
        layout_file, sha = write_layout(store, token, layout, committed)
        if pending is not None:
            pending_file, pending_sha = write_pending(store, token, pending)
            out.update(pending_file=pending_file, pending_sha256=pending_sha,
                       pending_seq=int(pending_seq))
        man = Manifest(seq=seq, last_batch_id=last_batch_id,
                       num_partitions=layout.num_partitions, num_physical=layout.num_physical,
                       planner=planner, window=window, layout_kind=layout.kind,
                       layout_version=layout.version, layout_file=layout_file,
                       layout_sha256=sha, state_dir=state_dir, num_keys=num_keys,
                       state_bytes=state_bytes, num_groups=state.num_groups,
                       state_files=files, **out)
        if fence is not None:
            fence()
        write_manifest(store, man)
    except Exception as e:
        _discard(store, token)
        if isinstance(e, CheckpointError):
            raise
        before = ("the previous commit (" + store.display(previous.state_dir) + ") stays in "
                  "force" if previous is not None else "nothing was committed")
        raise CheckpointError(f"cannot write the checkpoint to {store.display()} "
                              f"({error_cause(e)}); {before}") from e
    if callable(keep):
        keep = keep(man)
    try:
        clean_stale(store, man, keep)
    except Exception:  # noqa: BLE001 - committed; leftovers are removed after the next one
        pass
    return man


def _discard(store: Any, token: str) -> None:
    for name in (f"state-{token}", f"outputs-{token}", f"outputs-{token}.pkl",
                 f"layout-{token}.pkl", f"pending-{token}.pkl"):
        try:
            store.remove(name)
        except Exception:  # noqa: BLE001 - best effort; never read, cleaned after a commit
            pass


@dataclass(frozen=True)
class Restored:
    """A checkpoint read back: the state (cached, validated) and where the stream was."""

    state: "FramedState"
    seq: int
    last_batch_id: int | None
    num_keys: int
    state_bytes: float
    manifest: Manifest | None = None
    pending: Any = None              # a decided migration not yet moved (a ``Decision``)
    pending_seq: int = -1            # the batch that decided it


def _same_strategy(a: str, b: str) -> bool:
    from sparkbalance import strategies
    try:
        return strategies.get(a).name == strategies.get(b).name
    except ValueError:
        return a == b


def _load_error(path: str, e: BaseException) -> CheckpointError:
    from sparkbalance.state.durability.store import error_cause
    return CheckpointError(f"{path}: cannot load the checkpointed state ({error_cause(e)})")


def restore_checkpoint(store: Any, ops: "FrameOps", *, planner: str, window: int | None,
                       num_partitions: int, storage_level: Any) -> Restored | None:
    """The committed checkpoint of ``store``, validated against the operator's settings;
    None when the store holds none yet. A corrupt, incomplete or mismatched checkpoint is a
    :class:`CheckpointError` naming the file (never an empty or partial state): part files
    of another length or checksum, a garbage manifest, state files without a manifest.
    ``planner`` matches when both names give the same registry strategy (``"ssm"`` and
    ``"keygroups"``).

    Examples
    --------
    >>> restore_checkpoint(store, frame_ops(sc), planner="mixed", window=None,
    ...                    num_partitions=4, storage_level=level)       # doctest: +SKIP
    """
    from sparkbalance.state.frames import format as fr
    from sparkbalance.state.frames.framed_state import FramedState
    from sparkbalance.state.durability.state_files import check_files, read_frames

    man = read_manifest(store)
    if man is None:
        check_unmanaged(store)
        return None
    check_compatible(store, man, {
        "planner": man.planner if _same_strategy(man.planner, planner) else planner,
        "window": window, "num_partitions": num_partitions})
    layout = read_layout(store, man)
    if (layout.num_physical != man.num_physical
            or layout.num_partitions != man.num_partitions):
        raise CheckpointError(f"{store.display(man.layout_file)}: layout has "
                              f"{layout.num_partitions}/{layout.num_physical} partitions; "
                              f"the manifest says {man.num_partitions}/{man.num_physical}")
    G = man.num_groups
    if getattr(layout, "num_groups", G) != G:
        raise CheckpointError(f"{store.display(MANIFEST)}: frames of {G} groups; the layout "
                              f"{store.display(man.layout_file)} has {layout.num_groups}")
    pending = read_pending(store, man, layout)
    if getattr(getattr(pending, "layout", None), "num_groups", G) != G:
        raise CheckpointError(f"{store.display(man.pending_file)}: a pending layout of "
                              f"{pending.layout.num_groups} groups; the frames have {G}")
    path = store.display(man.state_dir)
    fn = layout.fn
    try:
        check_files(store, man.state_dir, man.state_files)
    except ValueError as e:
        raise CheckpointError(str(e)) from None
    try:
        rdd = read_frames(ops.sc, store, man.state_dir, man.state_files, man.num_physical,
                          lambda pid, f: fr.check_state_frame(f, pid, G, fn))
        rdd.persist(storage_level)
        state = FramedState(ops, rdd, layout, G, (rdd,))
        rows = state.summaries()
    except Exception as e:  # noqa: BLE001 - Py4J/Python errors: report the file and cause
        raise _load_error(path, e) from e
    num_keys = sum(r[1] for r in rows)
    if num_keys != man.num_keys:
        state.rdd.unpersist()
        raise CheckpointError(f"{path}: holds {num_keys} keys; the manifest "
                              f"{store.display(MANIFEST)} records {man.num_keys}")
    return Restored(state, man.seq, man.last_batch_id, num_keys,
                    float(sum(r[2] for r in rows)), man, pending,
                    -1 if pending is None else int(man.pending_seq))


def rebased(state: "FramedState", store: Any, man: Manifest) -> "FramedState | None":
    """``state`` based on the files of commit ``man`` (written from it): partition ``i``
    is read from the cache while the block of ``i`` exists, else from part file ``i``
    (verified like a resume), so recomputing it costs one file, not the batches since the
    last lineage cut (the bridge's ``StateFiles.rebase``). None when it cannot be: no
    bridge jar, or no persisted RDD holds the state's frames.

    Examples
    --------
    >>> op_state = rebased(op_state, store, manifest)            # doctest: +SKIP
    """
    from sparkbalance.state.frames import format as fr
    from sparkbalance.state.frames.framed_state import FramedState
    from sparkbalance.state.durability.state_files import read_parts

    ops = state.ops
    anchor = state.anchor
    if anchor is None and getattr(state.rdd, "is_cached", False):
        anchor = state.rdd
    if not ops.jvm or anchor is None or not anchor.is_cached:
        return None
    if man.num_physical != state.num_physical:
        raise ValueError(f"rebase of {state.num_physical} partitions on a commit of "
                         f"{man.num_physical}")
    # The digest check is enough here: the files were written from this very state.
    # near=anchor: the read prefers the executors caching the anchor's blocks (the only
    # cache locality the scheduler sees on Spark 3.5; on 4.x Rebased also names them)
    files = read_parts(ops.sc, store, man.state_dir, man.state_files, man.num_physical,
                       near=anchor)
    jrdd = ops.static("StateFiles", "rebase")(anchor._jrdd, fr.TAG_STATE,
                                              ops.passes.built(files))
    return FramedState(ops, ops.wrap(jrdd), state.layout, state.num_groups, state.cached,
                       anchor=anchor)


def load_outputs(store: Any, sc: Any, man: Manifest) -> Any:
    """The kept outputs of batch ``man.outputs_batch_id`` as an RDD of ``(key, output)``
    (lazy; verified like the state); None when the checkpoint holds none."""
    from sparkbalance.state.frames import format as fr
    from sparkbalance.state.durability.state_files import check_files, read_frames

    if man.outputs_dir is None:
        return None

    def _check(pid: int, f: bytes) -> None:
        if fr.header(f).tag != fr.TAG_OUTPUTS:
            raise ValueError(f"a {chr(f[0])!r} frame among the outputs of partition {pid}")

    if OUTPUTS_PICKLE in man.outputs_files:      # written from the driver
        frames = _read_collected(store, man.outputs_dir, man.outputs_files[OUTPUTS_PICKLE])
        try:
            for pid, f in enumerate(frames):
                _check(pid, f)
        except ValueError as e:
            raise CheckpointError(f"{store.display(man.outputs_dir)}: {e}") from None
        return sc.parallelize(frames, max(1, len(frames))).flatMap(fr.frame_payload)
    try:
        check_files(store, man.outputs_dir, man.outputs_files)
    except ValueError as e:
        raise CheckpointError(str(e)) from None

    return read_frames(sc, store, man.outputs_dir, man.outputs_files,
                       len(man.outputs_files), _check,
                       kind="outputs").flatMap(fr.frame_payload)


def _read_collected(store: Any, name: str, entry: list) -> list:
    """The outputs frames of the driver-written file ``name``, checked against its manifest
    entry ``[bytes, sha256, frames]``; anything else is a :class:`CheckpointError` naming
    the file."""
    path = store.display(name)
    try:
        data = store.read_bytes(name)
    except OSError as e:
        raise CheckpointError(f"{path}: cannot read the kept outputs ({e})") from None
    size, sha, count = entry
    digest = hashlib.sha256(data).hexdigest()
    if len(data) != size or digest != sha:
        raise CheckpointError(f"{path}: {len(data)} bytes, checksum {digest[:12]}...; the "
                              f"manifest records {size} bytes, {str(sha)[:12]}... (the "
                              "outputs file is corrupt)")
    frames = pickle.loads(data)
    if not isinstance(frames, list) or len(frames) != count:
        raise CheckpointError(f"{path}: expected a list of {count} outputs frames")
    return frames


def still_reads(rdd: Any, source: Any, limit: int = 20000) -> bool:
    """Whether recomputing ``rdd`` could read ``source`` (an RDD loaded from checkpoint
    files): a walk of the JVM lineage that stops at checkpointed RDDs (a reliable or local
    checkpoint cuts the dependency on the files). Each RDD is visited once, however often
    it is referenced; beyond ``limit`` RDDs the answer is True (keep the files).

    Examples
    --------
    >>> still_reads(op.frames_rdd, restored.state.rdd)            # doctest: +SKIP
    True
    """
    target = source._jrdd.rdd().id()
    todo = [rdd._jrdd.rdd()]
    seen: set[int] = set()
    while todo:
        r = todo.pop()
        rid = r.id()
        if rid == target:
            return True
        if rid in seen:
            continue
        seen.add(rid)
        if len(seen) > limit:
            return True
        deps = r.dependencies()          # a checkpointed RDD's only parent: its checkpoint
        for i in range(deps.size()):
            todo.append(deps.apply(i).rdd())
    return False
