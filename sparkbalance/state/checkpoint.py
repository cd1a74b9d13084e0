"""Durable, atomic checkpoints of the keyed state, its layout (routing table or key-group
bounds, with version) and the last applied batch id.

Layout of ``checkpoint_dir``::

    manifest.json          the commit point (written atomically: see ``state.store``)
    layout-<seq>.pkl       pickled layout (table + version, or bounds + phys + version)
    state-<seq>/           saveAsPickleFile of (pid, frame) pairs, with Hadoop's _SUCCESS

A checkpoint exists once ``manifest.json`` names it; a crash before the rename leaves the
previous checkpoint in force (the half-written files are ignored and cleaned later). The
manifest records sha256 of the layout file and the number of keys and blocks, so a
corrupt or mismatched checkpoint is a :class:`CheckpointError` naming the file and what is
wrong — never silent data loss. The directory is a local path or a Hadoop URI (HDFS, S3,
... — :mod:`sparkbalance.state.store`); the executors write the state into it, so on a
cluster it must be a shared file system.
"""
from __future__ import annotations

import hashlib
import json
import pickle
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from .frame_rdds import FrameOps
    from .framed import FramedState

__all__ = ["CheckpointError", "Manifest", "MANIFEST", "FORMAT", "write_manifest",
           "read_manifest", "write_layout", "read_layout", "check_compatible",
           "clean_stale", "save_checkpoint", "restore_checkpoint", "Restored"]

MANIFEST = "manifest.json"
#: Format version of the checkpoint files; bump on incompatible changes.
#: 2: the state is saved as (pid, frame) pairs (``state.frames``) and the manifest records G.
FORMAT = 2


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used as it is (corrupt, incomplete or mismatched)."""


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
    format: int = FORMAT

    def to_json(self) -> str:
        return json.dumps(self.__dict__, indent=1, sort_keys=True)


_FIELDS = {"seq": int, "num_partitions": int, "num_physical": int, "planner": str,
           "layout_kind": str, "layout_version": int, "layout_file": str,
           "layout_sha256": str, "state_dir": str, "num_keys": int, "num_groups": int,
           "format": int}


Directory = Any   # a path (str, Path) or a store (:mod:`sparkbalance.state.store`)


def _store(directory: Directory) -> Any:
    from .store import store_for
    return store_for(None, directory)


def write_layout(directory: Directory, seq: int, layout: Any) -> tuple[str, str]:
    """Pickle ``layout`` to ``layout-<seq>.pkl``; return (file name, sha256)."""
    st = _store(directory)
    data = pickle.dumps(layout, protocol=pickle.HIGHEST_PROTOCOL)
    name = f"layout-{seq:08d}.pkl"
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
        return Manifest(**{k: v for k, v in raw.items() if k in known})
    except TypeError as e:
        raise CheckpointError(f"{path}: {e}") from None


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


def clean_stale(directory: Directory, m: Manifest) -> None:
    """Remove files of older or uncommitted checkpoints (keep the committed one)."""
    st = _store(directory)
    for name in st.list():
        if name in (MANIFEST, m.layout_file, m.state_dir) or name == "rdd":
            continue
        if name.startswith(("state-", "layout-")) or name.endswith(".tmp"):
            st.remove(name)


# --------------------------------------------------------------------------- save / restore
def save_checkpoint(store: Any, state: "FramedState", *, seq: int, last_batch_id: int | None,
                    planner: str, window: int | None, num_keys: int, state_bytes: float
                    ) -> Manifest:
    """Commit ``state`` (frames, layout with version) and the last applied batch id
    atomically to ``store`` (:mod:`~sparkbalance.state.store`); return the manifest.

    The state files and the layout are written first; the manifest's atomic replace is the
    commit; older checkpoints are removed after it.

    Examples
    --------
    >>> save_checkpoint(store, op_state, seq=4, last_batch_id=3, planner="mixed",
    ...                 window=None, num_keys=10, state_bytes=400.0)   # doctest: +SKIP
    """
    state_dir = f"state-{seq:08d}"
    if store.exists(state_dir):
        store.remove(state_dir)
    state.save(store.uri(state_dir))
    layout = state.layout
    layout_file, sha = write_layout(store, seq, layout)
    man = Manifest(seq=seq, last_batch_id=last_batch_id, num_partitions=layout.num_partitions,
                   num_physical=layout.num_physical, planner=planner, window=window,
                   layout_kind=layout.kind, layout_version=layout.version,
                   layout_file=layout_file, layout_sha256=sha, state_dir=state_dir,
                   num_keys=num_keys, state_bytes=state_bytes, num_groups=state.num_groups)
    write_manifest(store, man)
    clean_stale(store, man)
    return man


@dataclass(frozen=True)
class Restored:
    """A checkpoint read back: the state (cached, validated) and where the stream was."""

    state: "FramedState"
    seq: int
    last_batch_id: int | None
    num_keys: int
    state_bytes: float


def _same_strategy(a: str, b: str) -> bool:
    from .. import strategies
    try:
        return strategies.get(a).name == strategies.get(b).name
    except ValueError:
        return a == b


def restore_checkpoint(store: Any, ops: "FrameOps", *, planner: str, window: int | None,
                       num_partitions: int, storage_level: Any) -> Restored | None:
    """The committed checkpoint of ``store``, validated against the operator's settings;
    None when the store holds none yet. A corrupt, incomplete or mismatched checkpoint is a
    :class:`CheckpointError` naming the file (never an empty state). ``planner`` matches
    when both names give the same registry strategy (``"ssm"`` and ``"keygroups"``).

    Examples
    --------
    >>> restore_checkpoint(store, frame_ops(sc), planner="mixed", window=None,
    ...                    num_partitions=4, storage_level=level)       # doctest: +SKIP
    """
    from .framed import FramedState

    man = read_manifest(store)
    if man is None:
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
    try:
        state = FramedState.load(ops, store.uri(man.state_dir), layout, G, storage_level)
        rows = state.summaries()
    except Exception as e:  # noqa: BLE001 - Py4J/Python errors: report the file
        raise CheckpointError(f"{path}: cannot load the checkpointed state "
                              f"({str(e).strip().splitlines()[-1][:300]})") from e
    num_keys = sum(r[1] for r in rows)
    if num_keys != man.num_keys:
        state.rdd.unpersist()
        raise CheckpointError(f"{path}: holds {num_keys} keys; the manifest "
                              f"{store.display(MANIFEST)} records {man.num_keys}")
    return Restored(state, man.seq, man.last_batch_id, num_keys,
                    float(sum(r[2] for r in rows)))
