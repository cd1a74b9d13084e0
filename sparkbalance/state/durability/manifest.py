"""The commit point of a checkpoint: the manifest, the pickled layouts it names, and
which files of a checkpoint directory belong to which save.

A checkpoint (:mod:`~sparkbalance.state.durability.checkpoint`) commits by the atomic replace of
``manifest.json``, which names the files of the save (``<token>`` = ``<seq:08d>-<8 hex>``,
new for every save)::

    layout-<token>.pkl     pickled layout the state is placed by (table + version, or
                           bounds + phys + version)
    pending-<token>.pkl    a decided migration not yet moved (format 4; only when one is
                           pending): the target layout F' and the keys (routing table) that
                           may change partition, pickled with the plan's moves and bytes
    state-<token>/         the state frames (:mod:`~sparkbalance.state.durability.state_files`)
    outputs-<token>/       the outputs frames of the last applied batch (or, written from
                           the driver, ``outputs-<token>.pkl``: format 5)

and records per part file its length and checksum, each pickle's sha256, the number of
keys, and its own checksum. Files of older or uncommitted saves are removed only after a
commit (:func:`clean_stale`), never those a live resumed state still reads; files of a save
after the first without a manifest mean a lost manifest and are refused
(:func:`check_unmanaged`). Every error is a :class:`CheckpointError` naming the file.
"""
from __future__ import annotations

import hashlib
import io
import json
import pickle
import re
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any, Collection, Mapping

__all__ = ["CheckpointError", "Manifest", "MANIFEST", "FORMAT", "READABLE", "PREFIXES",
           "new_token", "write_layout", "read_layout", "write_pending", "read_pending",
           "write_manifest", "read_manifest", "check_compatible", "check_unmanaged",
           "clean_stale"]

MANIFEST = "manifest.json"
#: Format version of the checkpoint files; bump on incompatible changes.
#: 2: the state is saved as (pid, frame) pairs (``state.frames``) and the manifest records G.
#: 3: new names per save, per part file length and checksum, the last batch's outputs,
#: the manifest's own checksum.
#: 4: a pending migration (target layout and moving keys) is saved with the unsettled
#: state instead of being moved first (``pending_file``); format 3 still resumes.
#: 5: the kept outputs may be one file written from the driver (``outputs-<token>.pkl``,
#: :func:`~sparkbalance.state.durability.checkpoint.load_outputs`); 3 and 4 still resume.
FORMAT = 5
#: Formats :func:`read_manifest` accepts.
READABLE = (3, 4, 5)
#: Fields format 4 added (absent from, and not in the checksum of, a format-3 manifest).
_V4_FIELDS = ("pending_file", "pending_sha256", "pending_seq")
#: Names a save writes (everything else in the directory is left alone).
PREFIXES = ("state-", "layout-", "outputs-", "pending-")
_SEQ = re.compile(r"^(?:state|layout|outputs|pending)-(\d{8})-[0-9a-f]{8}(?:\.pkl)?$")


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
    pending_file: str | None = None     # the decided, not yet moved migration (format 4)
    pending_sha256: str | None = None
    pending_seq: int | None = None      # the batch that decided it
    format: int = FORMAT

    def body(self) -> str:
        d = asdict(self)
        if self.format < 4:
            for name in _V4_FIELDS:
                d.pop(name)
        return json.dumps(d, sort_keys=True)

    def to_json(self) -> str:
        d = json.loads(self.body())
        d["checksum"] = hashlib.sha256(self.body().encode()).hexdigest()
        return json.dumps(d, indent=1, sort_keys=True)

    @property
    def files(self) -> set[str]:
        """The names this commit consists of."""
        return ({self.layout_file, self.state_dir}
                | ({self.outputs_dir, self.pending_file} - {None}))


_FIELDS = {"seq": int, "num_partitions": int, "num_physical": int, "planner": str,
           "layout_kind": str, "layout_version": int, "layout_file": str,
           "layout_sha256": str, "state_dir": str, "num_keys": int, "num_groups": int,
           "state_files": dict, "outputs_files": dict, "checksum": str, "format": int}


Directory = Any   # a path (str, Path) or a store (:mod:`sparkbalance.state.durability.store`)


def _store(directory: Directory) -> Any:
    from sparkbalance.state.durability.store import store_for
    return store_for(None, directory)


def new_token(seq: int) -> str:
    """A fresh ``<seq:08d>-<8 hex>`` name part: no save ever rewrites a committed file.

    Examples
    --------
    >>> new_token(4)[:9]
    '00000004-'
    """
    return f"{seq:08d}-{uuid.uuid4().hex[:8]}"


def _write_pickle(directory: Directory, name: str, obj: Any) -> tuple[str, str]:
    """Pickle ``obj`` to the new file ``name`` atomically; return (name, sha256). Not
    synced on its own: the manifest that names it is written after it and synced, and
    a resume reads it only through that manifest, checked against its sha256 (as the
    state's part files, which the executors write without a sync)."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    _store(directory).write_atomic(name, data, durable=False)
    return name, hashlib.sha256(data).hexdigest()


#: Modules of the keyed state renamed when the package was split into sub-packages; a
#: checkpoint written before then names its layout classes by the old paths.
_RENAMED_MODULES = {
    "sparkbalance.state.layout": "sparkbalance.state.control.layout",
    "sparkbalance.state.records": "sparkbalance.state.control.records",
    "sparkbalance.state.payoff": "sparkbalance.state.control.payoff",
    "sparkbalance.state.controller": "sparkbalance.state.control.controller",
    "sparkbalance.state.window": "sparkbalance.state.frames.window",
}


class _RenamingUnpickler(pickle.Unpickler):
    """Unpickles what an older checkpoint wrote under the keyed state's former module paths."""

    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(_RENAMED_MODULES.get(module, module), name)


def _read_pickle(directory: Directory, name: str, sha256: str, what: str) -> tuple[str, Any]:
    """(display path, object) of the pickle ``name`` the manifest names, checked against
    its ``sha256``; a missing, altered or unreadable file is a :class:`CheckpointError`."""
    st = _store(directory)
    path = st.display(name)
    try:
        data = st.read_bytes(name)
    except OSError as e:
        raise CheckpointError(f"{path}: cannot read the {what} named by "
                              f"{st.display(MANIFEST)} ({e})") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise CheckpointError(f"{path}: checksum {digest[:12]}... does not match the manifest's "
                              f"{str(sha256)[:12]}...; the {what} is corrupt")
    try:
        return path, _RenamingUnpickler(io.BytesIO(data)).load()
    except Exception as e:  # noqa: BLE001 - any unpickling failure is corruption
        raise CheckpointError(f"{path}: cannot unpickle the {what} ({e})") from None


def write_layout(directory: Directory, token: str, layout: Any,
                 committed: tuple[str, str] | None = None) -> tuple[str, str]:
    """Pickle ``layout`` to ``layout-<token>.pkl``; return (file name, sha256).
    ``committed``: (file name, sha256) of a committed file holding this very layout,
    returned as it is (nothing written)."""
    if committed is not None:
        return committed
    return _write_pickle(directory, f"layout-{token}.pkl", layout)


def read_layout(directory: Directory, m: Manifest) -> Any:
    path, layout = _read_pickle(directory, m.layout_file, m.layout_sha256, "routing layout")
    if getattr(layout, "kind", None) != m.layout_kind or layout.version != m.layout_version:
        raise CheckpointError(f"{path}: holds a {getattr(layout, 'kind', '?')} layout version "
                              f"{getattr(layout, 'version', '?')}; the manifest expects "
                              f"{m.layout_kind} version {m.layout_version}")
    return layout


def write_pending(directory: Directory, token: str, decision: Any) -> tuple[str, str]:
    """Pickle a decided migration (the controller's ``Decision``: target layout F', the
    keys whose partition may change, planned moves and bytes) to ``pending-<token>.pkl``;
    return (file name, sha256). A resume moves it in its first batch's shuffle.

    Examples
    --------
    >>> write_pending(store, new_token(4), op._pending)     # doctest: +SKIP
    ('pending-00000004-1a2b3c4d.pkl', '9f86d0...')
    """
    return _write_pickle(directory, f"pending-{token}.pkl", decision)


def read_pending(directory: Directory, m: Manifest, layout: Any) -> Any:
    """The pending migration ``m`` names (None when none), checked against the state's
    ``layout``: the same kind and partition count, a newer version."""
    if m.pending_file is None:
        return None
    path, decision = _read_pickle(directory, m.pending_file, m.pending_sha256,
                                  "pending migration")
    to = getattr(decision, "layout", None)
    if (getattr(to, "kind", None) != layout.kind
            or getattr(to, "num_partitions", None) != layout.num_partitions
            or not getattr(to, "version", -1) > layout.version):
        raise CheckpointError(f"{path}: a pending move to a {getattr(to, 'kind', '?')} layout "
                              f"of {getattr(to, 'num_partitions', '?')} partitions, version "
                              f"{getattr(to, 'version', '?')}; expected a {layout.kind} layout "
                              f"of {layout.num_partitions} partitions, version > "
                              f"{layout.version}")
    return decision


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
    if raw.get("format") not in READABLE:
        raise CheckpointError(f"{path}: format {raw.get('format')!r}; this sparkbalance reads "
                              f"format {FORMAT} (and {', '.join(map(str, READABLE[:-1]))}; "
                              "write a new checkpoint_dir)")
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


