"""Durable checkpoints of the keyed state that a crash can never destroy.

Layout of ``checkpoint_dir`` (``<token>`` = ``<seq:08d>-<8 hex>``, new for every save)::

    manifest.json          the commit point (written atomically: see ``state.store``)
    lease.json             the owner of the directory (``state.lease``)
    layout-<token>.pkl     pickled layout (table + version, or bounds + phys + version)
    state-<token>/         the state frames, one part file per partition (``state.statefiles``)
    outputs-<token>/       the outputs frames of the last applied batch

A save writes everything under **new names**, then commits by the atomic replace of the
manifest, which names the files and records per part file its length and checksum, the
layout's sha256, the number of keys, and its own checksum. Until that replace the
previous manifest and its files are untouched, so a crash at any step resumes the
previous commit exactly; files of older or uncommitted saves are removed only after a
commit, and never those a live (resumed) state still reads (``keep``). A fresh directory
gets a commit of the empty state first, so files of a save after the first (sequence
number > 0) without a manifest mean a lost manifest: the start is refused, the files are
never overwritten. Every error is a :class:`CheckpointError` naming the file or the
directory and the cause. The directory is a local path or a Hadoop URI (HDFS, S3, ... —
:mod:`sparkbalance.state.store`); the executors write the state into it, so on a cluster
it must be a shared file system.

Long because: the manifest, layout and outputs files are written and validated together;
the manifest half is the next to move out (state/manifest.py).
"""
from __future__ import annotations

import hashlib
import json
import pickle
import re
import uuid
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Collection, Mapping

if TYPE_CHECKING:
    from .frame_rdds import FrameOps
    from .framed import FramedState

__all__ = ["CheckpointError", "Manifest", "MANIFEST", "FORMAT", "BatchOutputs",
           "write_manifest", "read_manifest", "write_layout", "read_layout",
           "check_compatible", "check_unmanaged", "clean_stale", "save_checkpoint",
           "restore_checkpoint", "load_outputs", "outputs_frames", "Restored", "new_token",
           "PREFIXES", "still_reads"]

MANIFEST = "manifest.json"
#: Format version of the checkpoint files; bump on incompatible changes.
#: 2: the state is saved as (pid, frame) pairs (``state.frames``) and the manifest records G.
#: 3: new names per save, per part file length and checksum, the last batch's outputs,
#: the manifest's own checksum.
FORMAT = 3
#: Names a save writes (everything else in the directory is left alone).
PREFIXES = ("state-", "layout-", "outputs-")
_SEQ = re.compile(r"^(?:state|layout|outputs)-(\d{8})-[0-9a-f]{8}(?:\.pkl)?$")


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used as it is (corrupt, incomplete or mismatched), or
    that cannot be written."""


@dataclass(frozen=True)
class Manifest:
    """What one committed checkpoint holds."""

    seq: int                     # batches applied so far (the next batch gets this seq)
    last_batch_id: int | None    # last applied Structured Streaming batch id
    num_partitions: int
    num_physical: int
    planner: str
    window: int | None
    layout_kind: str
    layout_version: int
    layout_file: str
    layout_sha256: str
    state_dir: str
    num_keys: int
    state_bytes: float
    num_groups: int              # G: key groups the state frames are cut by
    state_files: dict = field(default_factory=dict)     # part -> [bytes, digest, frames]
    outputs_dir: str | None = None                      # outputs of the batch outputs_seq
    outputs_seq: int | None = None
    outputs_batch_id: int | None = None
    outputs_files: dict = field(default_factory=dict)
    format: int = FORMAT

    def body(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    def to_json(self) -> str:
        d = asdict(self)
        d["checksum"] = hashlib.sha256(self.body().encode()).hexdigest()
        return json.dumps(d, indent=1, sort_keys=True)

    @property
    def files(self) -> set[str]:
        """The names this commit consists of."""
        return {self.layout_file, self.state_dir} | ({self.outputs_dir} - {None})


_FIELDS = {"seq": int, "num_partitions": int, "num_physical": int, "planner": str,
           "layout_kind": str, "layout_version": int, "layout_file": str,
           "layout_sha256": str, "state_dir": str, "num_keys": int, "num_groups": int,
           "state_files": dict, "outputs_files": dict, "checksum": str, "format": int}


@dataclass(frozen=True)
class BatchOutputs:
    """The outputs of one applied batch, kept with the checkpoint until the next batch
    commits: ``frames`` (an outputs frame RDD, not yet written) or, once committed, the
    manifest's ``outputs_dir``."""

    seq: int
    batch_id: int | None
    frames: Any = None


def outputs_frames(merged: Any) -> Any:
    """The outputs frames of a merged batch (:class:`~sparkbalance.state.framed.Merged`):
    what a checkpoint keeps of the batch's outputs (bytes, no decoding)."""
    from . import frames as fr
    return merged.base.ops.select(merged.rdd, fr.TAG_OUTPUTS)


Directory = Any   # a path (str, Path) or a store (:mod:`sparkbalance.state.store`)


def _store(directory: Directory) -> Any:
    from .store import store_for
    return store_for(None, directory)


def new_token(seq: int) -> str:
    """A fresh ``<seq:08d>-<8 hex>`` name part: no save ever rewrites a committed file.

    Examples
    --------
    >>> new_token(4)[:9]
    '00000004-'
    """
    return f"{seq:08d}-{uuid.uuid4().hex[:8]}"


def write_layout(directory: Directory, token: str, layout: Any) -> tuple[str, str]:
    """Pickle ``layout`` to ``layout-<token>.pkl``; return (file name, sha256)."""
    st = _store(directory)
    data = pickle.dumps(layout, protocol=pickle.HIGHEST_PROTOCOL)
    name = f"layout-{token}.pkl"
    st.write_atomic(name, data)
    return name, hashlib.sha256(data).hexdigest()


def read_layout(directory: Directory, m: Manifest) -> Any:
    st = _store(directory)
    path = st.display(m.layout_file)
    try:
        data = st.read_bytes(m.layout_file)
    except OSError as e:
        raise CheckpointError(f"{path}: cannot read the routing layout named by "
                              f"{st.display(MANIFEST)} ({e})") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != m.layout_sha256:
        raise CheckpointError(f"{path}: checksum {digest[:12]}... does not match the manifest's "
                              f"{m.layout_sha256[:12]}...; the routing layout is corrupt")
    try:
        layout = pickle.loads(data)
    except Exception as e:  # noqa: BLE001 - any unpickling failure is corruption
        raise CheckpointError(f"{path}: cannot unpickle the routing layout ({e})") from None
    if getattr(layout, "kind", None) != m.layout_kind or layout.version != m.layout_version:
        raise CheckpointError(f"{path}: holds a {getattr(layout, 'kind', '?')} layout version "
                              f"{getattr(layout, 'version', '?')}; the manifest expects "
                              f"{m.layout_kind} version {m.layout_version}")
    return layout


def write_manifest(directory: Directory, m: Manifest) -> None:
    """Commit a checkpoint: atomic replace of ``manifest.json``."""
    _store(directory).write_atomic(MANIFEST, m.to_json().encode())


def read_manifest(directory: Directory) -> Manifest | None:
    """The committed manifest, None when the directory holds no checkpoint yet."""
    st = _store(directory)
    path = st.display(MANIFEST)
    if not st.exists(MANIFEST):
        return None
    try:
        raw = json.loads(st.read_bytes(MANIFEST).decode())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path}: not a valid checkpoint manifest ({e}); refusing to "
                              "start from an empty state over it") from None
    if not isinstance(raw, dict):
        raise CheckpointError(f"{path}: expected a JSON object, got {type(raw).__name__}")
    if raw.get("format") != FORMAT:
        raise CheckpointError(f"{path}: format {raw.get('format')!r}; this sparkbalance reads "
                              f"format {FORMAT} (write a new checkpoint_dir)")
    for name, typ in _FIELDS.items():
        if name not in raw:
            raise CheckpointError(f"{path}: missing field {name!r}")
        if not isinstance(raw[name], typ) or isinstance(raw[name], bool):
            raise CheckpointError(f"{path}: field {name!r}={raw[name]!r}; expected "
                                  f"{typ.__name__}")
    known = set(Manifest.__dataclass_fields__)
    try:
        m = Manifest(**{k: v for k, v in raw.items() if k in known})
    except TypeError as e:
        raise CheckpointError(f"{path}: {e}") from None
    digest = hashlib.sha256(m.body().encode()).hexdigest()
    if digest != raw["checksum"]:
        raise CheckpointError(f"{path}: checksum {digest[:12]}... does not match the recorded "
                              f"{raw['checksum'][:12]}...; the manifest was changed or is "
                              "corrupt")
    return m


def check_compatible(directory: Directory, m: Manifest, expected: Mapping[str, Any]) -> None:
    """Refuse a checkpoint written by a differently configured operator."""
    st = _store(directory)
    path = st.display(MANIFEST)
    for name, value in expected.items():
        got = getattr(m, name)
        if got != value:
            raise CheckpointError(f"{path}: written with {name}={got!r}; this operator has "
                                  f"{name}={value!r} (use the same settings, or another "
                                  "checkpoint_dir)")
    if not st.exists(f"{m.state_dir}/_SUCCESS"):
        raise CheckpointError(f"{st.display(m.state_dir)}: state files of the checkpoint are "
                              "missing or incomplete (no _SUCCESS marker)")


def _seq_of(name: str) -> int | None:
    got = _SEQ.match(name)
    return int(got.group(1)) if got else None


def check_unmanaged(directory: Directory) -> None:
    """A directory without a manifest: refuse it when it holds files of a save after the
    first (a lost manifest: starting empty would overwrite that state); files of the
    empty initial commit (sequence number 0) hold nothing and are cleaned later."""
    st = _store(directory)
    found = [n for n in st.list() if n.startswith(PREFIXES)]
    bad = [n for n in found if _seq_of(n) != 0]
    if bad:
        raise CheckpointError(f"{st.display()}: holds checkpoint files ({', '.join(bad[:3])}"
                              f"{', ...' if len(bad) > 3 else ''}) but no {MANIFEST}; refusing "
                              "to start an empty state over them (restore the manifest, or "
                              "use an empty checkpoint_dir)")


def clean_stale(directory: Directory, m: Manifest, keep: Collection[str] = ()) -> None:
    """After commit ``m``: remove files of older or uncommitted saves, except ``m``'s own
    and those in ``keep`` (files a live resumed state still reads)."""
    st = _store(directory)
    spare = m.files | set(keep)
    for name in st.list():
        if name in spare:
            continue
        if name.startswith(PREFIXES) or name == MANIFEST + ".tmp":
            st.remove(name)


# --------------------------------------------------------------------------- save / restore
def _write_state(store: Any, name: str, state: "FramedState") -> dict:
    from .statefiles import write_frames
    return write_frames(store, name, state.rdd)


def _write_outputs(store: Any, name: str, frames: Any) -> dict:
    from .statefiles import write_frames
    return write_frames(store, name, frames)


def _outputs_fields(store: Any, token: str, outputs: BatchOutputs | None,
                    previous: Manifest | None) -> dict:
    """Outputs of the last applied batch for the new manifest: the committed files when
    ``previous`` already holds that batch's, else written now from ``outputs.frames``."""
    if outputs is None:
        if previous is None or previous.outputs_dir is None:
            return {}
        outputs = BatchOutputs(previous.outputs_seq, previous.outputs_batch_id)
    if previous is not None and previous.outputs_seq == outputs.seq and previous.outputs_dir:
        return dict(outputs_dir=previous.outputs_dir, outputs_seq=previous.outputs_seq,
                    outputs_batch_id=previous.outputs_batch_id,
                    outputs_files=previous.outputs_files)
    if outputs.frames is None:
        return {}
    name = f"outputs-{token}"
    files = _write_outputs(store, name, outputs.frames)
    return dict(outputs_dir=name, outputs_seq=outputs.seq, outputs_batch_id=outputs.batch_id,
                outputs_files=files)


def save_checkpoint(store: Any, state: "FramedState", *, seq: int, last_batch_id: int | None,
                    planner: str, window: int | None, num_keys: int, state_bytes: float,
                    outputs: BatchOutputs | None = None, previous: Manifest | None = None,
                    keep: Collection[str] = (), fence: Callable[[], None] | None = None
                    ) -> Manifest:
    """Commit ``state`` (frames, layout with version), the last applied batch id and that
    batch's outputs to ``store`` (:mod:`~sparkbalance.state.store`); return the manifest.

    Everything is written under new names; ``fence()`` (the lease check) runs just before
    the manifest's atomic replace, the commit; then files of older saves are removed except
    ``keep``. Any failure before the commit is a :class:`CheckpointError` naming the
    directory and the cause; ``previous`` (the last commit) then stays in force, and the
    half-written files are removed (best effort: they are never read).

    Examples
    --------
    >>> save_checkpoint(store, op_state, seq=4, last_batch_id=3, planner="mixed",
    ...                 window=None, num_keys=10, state_bytes=400.0)   # doctest: +SKIP
    """
    from .store import error_cause

    token = new_token(seq)
    state_dir = f"state-{token}"
    try:
        files = _write_state(store, state_dir, state)
        out = _outputs_fields(store, token, outputs, previous)
        layout = state.layout
        layout_file, sha = write_layout(store, token, layout)
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
    try:
        clean_stale(store, man, keep)
    except Exception:  # noqa: BLE001 - committed; leftovers are removed after the next one
        pass
    return man


def _discard(store: Any, token: str) -> None:
    for name in (f"state-{token}", f"outputs-{token}", f"layout-{token}.pkl"):
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


def _same_strategy(a: str, b: str) -> bool:
    from .. import strategies
    try:
        return strategies.get(a).name == strategies.get(b).name
    except ValueError:
        return a == b


def _load_error(path: str, e: BaseException) -> CheckpointError:
    from .store import error_cause
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
    from . import frames as fr
    from .framed import FramedState
    from .statefiles import check_files, read_frames

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
                    float(sum(r[2] for r in rows)), man)


def load_outputs(store: Any, sc: Any, man: Manifest) -> Any:
    """The kept outputs of batch ``man.outputs_batch_id`` as an RDD of ``(key, output)``
    (lazy; verified like the state); None when the checkpoint holds none."""
    from . import frames as fr
    from .statefiles import check_files, read_frames

    if man.outputs_dir is None:
        return None
    try:
        check_files(store, man.outputs_dir, man.outputs_files)
    except ValueError as e:
        raise CheckpointError(str(e)) from None

    def _check(pid: int, f: bytes) -> None:
        if fr.header(f).tag != fr.TAG_OUTPUTS:
            raise ValueError(f"a {chr(f[0])!r} frame among the outputs of partition {pid}")

    return read_frames(sc, store, man.outputs_dir, man.outputs_files,
                       len(man.outputs_files), _check).flatMap(fr.frame_payload)


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
