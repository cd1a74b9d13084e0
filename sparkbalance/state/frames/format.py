"""The keyed state as *frames*: one sub-block per key group, kept as raw bytes.

A partition of the state is a list of frames, each the entries (``{key: entry}``, see
:mod:`sparkbalance.state.frames.window`) of the keys of one group ``g = key_group(k, G)`` that
live on that partition. A frame is ``bytes`` with a fixed header::

    tag (1 byte) | group (int32) | nkeys (int32) | nbytes (float64, Σ S(k))
    | oldest (int64: first batch seq still in the window, -1 unbounded) | index length (uint32)

followed, for a state frame (tag ``S``), by the pickled index ``(keys, sizes)`` (sizes as
float64 bytes; a numpy array in frames written before 28 Nov 2026) and the
pickled ``{key: entry}`` dict; other frames (``B`` batch block, ``O`` outputs, ``T``
statistics) carry one pickled object. A ``R`` frame is one chunk of a batch's records as
its routing shuffle wrote it: the key groups of its records (int32 each, as the index)
then the pickled list of ``(key, value)`` pairs.

Why frames. Spark ships every element of a partition through the Python worker that
reads it; with one dict per partition (the first design) a migration had to pass the whole
state through Python to find the 10 % that moves, which cost about as much as moving
everything. Frames have their tag and group at fixed offsets, so the JVM side
(``io.sparkbalance.bridge.StateFrames``, or a Python fallback) selects the frames a
migration touches without Python ever seeing the rest; a batch merge re-pickles only the
groups its keys touch (or whose window expires) and passes the others through as bytes.

Pure Python (no pyspark): runs inside executors and in unit tests. This module is the
byte format and the passes that only decode it; the per-partition merge of a batch is
:mod:`sparkbalance.state.frames.merge`, moving entries between partitions
:mod:`sparkbalance.state.frames.moves`.
"""
from __future__ import annotations

import array
import pickle
import struct
from collections import defaultdict
from typing import Any, Iterable, Iterator, NamedTuple

import numpy as np

from sparkbalance.routing.keygroups import key_groups

__all__ = ["TAG_STATE", "TAG_BATCH", "TAG_OUTPUTS", "TAG_STATS", "TAG_GROUPS", "TAG_BYPASS",
           "HEADER_SIZE", "DEFAULT_TABLE_GROUPS", "Header", "header", "state_frame",
           "data_frame", "frame_index", "frame_block", "frame_payload", "union_block",
           "groups_frame", "batch_frames", "TAG_CHUNK", "chunk_frame", "chunk_records",
           "bypass_summary", "with_bypass", "entries_of",
           "frames_of_entries", "frames_to_block", "frames_stats", "frames_summary",
           "check_state_frame"]

TAG_STATE, TAG_BATCH, TAG_OUTPUTS, TAG_STATS = (ord(c) for c in "SBOT")
#: ``G``: the key groups a batch block touches (int32 big-endian after the header), read
#: by the JVM to keep the other state frames out of Python; ``U``: the JVM's summary of
#: the state frames that bypassed Python (``(int32 group, int32 nkeys, float64 nbytes)``
#: per frame after the header).
TAG_GROUPS, TAG_BYPASS = ord("G"), ord("U")
#: ``R``: a chunk of batch records straight from the routing shuffle (:func:`chunk_frame`);
#: the JVM reads its group list as it reads a ``G`` frame's, so no Python pass groups the
#: batch before the merge.
TAG_CHUNK = ord("R")
_TAGS = {TAG_STATE, TAG_BATCH, TAG_OUTPUTS, TAG_STATS, TAG_GROUPS, TAG_BYPASS, TAG_CHUNK}
_BYPASS = np.dtype([("group", ">i4"), ("nkeys", ">i4"), ("nbytes", ">f8")])
_HEAD = struct.Struct(">BiidqI")
HEADER_SIZE: int = _HEAD.size
_PROTOCOL = pickle.HIGHEST_PROTOCOL

#: Frame groups of a routing-table state (G): the state of one partition is cut into up to
#: G frames, so a migration of |Δ| keys reads at most |Δ| frames of about 1/G of a
#: partition each. 256 keeps per-frame overhead (two pickles, ~10 µs) small next to the
#: work on thousands of keys per frame, and a Mixed table delta of tens of keys to a few
#: per cent of the state.
DEFAULT_TABLE_GROUPS: int = 256


class Header(NamedTuple):
    tag: int
    group: int
    nkeys: int
    nbytes: float
    oldest: int
    index_len: int


def header(frame: bytes) -> Header:
    """Decode the fixed header of a frame; ``ValueError`` names what is wrong.

    Examples
    --------
    >>> h = header(state_frame(3, {"a": [1, 10.0, None]}))
    >>> chr(h.tag), h.group, h.nkeys, h.nbytes
    ('S', 3, 1, 10.0)
    """
    if not isinstance(frame, (bytes, bytearray, memoryview)) or len(frame) < HEADER_SIZE:
        raise ValueError(f"state frame of {len(frame) if hasattr(frame, '__len__') else '?'} "
                         f"bytes; expected a bytes frame of >= {HEADER_SIZE} bytes (corrupt "
                         "state)")
    h = Header(*_HEAD.unpack_from(frame))
    if h.tag not in _TAGS or h.nkeys < 0 or HEADER_SIZE + h.index_len > len(frame):
        raise ValueError(f"state frame header {tuple(h)} is invalid (tag in 'SBOTGUR', nkeys "
                         f">= 0, index within the frame's {len(frame)} bytes): corrupt state")
    return h


def _oldest(block: dict) -> int:
    old = -1
    for e in block.values():
        seg = e[2]
        if seg:
            s = seg[0][0]
            if old < 0 or s < old:
                old = s
    return old


def state_frame(group: int, block: dict) -> bytes:
    """An ``S`` frame of the entries ``block`` (all of key group ``group``).

    Examples
    --------
    >>> frame_block(state_frame(0, {"k": [5, 3.0, None]}))
    {'k': [5, 3.0, None]}
    """
    keys = list(block)
    sizes = array.array("d", [e[1] for e in block.values()])
    # the sizes as raw float64 bytes: pickling a numpy array (its __reduce__ in Python)
    # cost ~9 us a frame, more than the rest of the index, and a merge writes a frame per
    # touched group (thousands a batch when groups hold a few keys each)
    index = pickle.dumps((keys, sizes.tobytes()), protocol=_PROTOCOL)
    data = pickle.dumps(block, protocol=_PROTOCOL)
    return (_HEAD.pack(TAG_STATE, int(group), len(keys), float(sum(sizes)), _oldest(block),
                       len(index)) + index + data)


def data_frame(tag: int, obj: Any, group: int = 0, nkeys: int = 0, nbytes: float = 0.0
               ) -> bytes:
    """A frame carrying one pickled object (batch block, outputs, stats, moved entries)."""
    return _HEAD.pack(tag, group, nkeys, nbytes, -1, 0) + pickle.dumps(obj, protocol=_PROTOCOL)


def frame_index(frame: bytes, h: Header | None = None) -> tuple[list, np.ndarray]:
    """``(keys, sizes)`` of a state frame, without unpickling the entries."""
    h = header(frame) if h is None else h
    keys, sizes = pickle.loads(memoryview(frame)[HEADER_SIZE:HEADER_SIZE + h.index_len])
    # float64 bytes (frames written since 28 Nov 2026) or a numpy array (before)
    return keys, (np.frombuffer(sizes, dtype=np.float64) if type(sizes) is bytes else sizes)


def frame_block(frame: bytes, h: Header | None = None) -> dict:
    """The ``{key: entry}`` dict of a state frame."""
    h = header(frame) if h is None else h
    block = pickle.loads(memoryview(frame)[HEADER_SIZE + h.index_len:])
    if len(block) != h.nkeys:
        raise ValueError(f"state frame of group {h.group} holds {len(block)} keys; its header "
                         f"says {h.nkeys} (corrupt state)")
    return block


def frame_payload(frame: bytes) -> Any:
    """The object of a non-state frame."""
    return pickle.loads(memoryview(frame)[HEADER_SIZE:])


def union_block(frames: list[bytes], group: int) -> dict:
    """Entries of several frames of one group on one partition (after a migration); a key
    in two of them is a broken layout (``RuntimeError``).

    Examples
    --------
    >>> a, b = state_frame(0, {"a": [1, 1.0, None]}), state_frame(0, {"b": [2, 1.0, None]})
    >>> union_block([a, b], 0)
    {'a': [1, 1.0, None], 'b': [2, 1.0, None]}
    """
    block = frame_block(frames[0])
    for f in frames[1:]:
        more = frame_block(f)
        both = block.keys() & more.keys()
        if both:
            raise RuntimeError(f"keys {sorted(map(repr, both))[:5]} are stored twice in key "
                               f"group {group} of one partition; the state layout is "
                               "inconsistent")
        block.update(more)
    return block


def groups_frame(groups: Iterable[int]) -> bytes:
    """A ``G`` frame listing key groups (for the JVM's ``StateFrames.divert``).

    Examples
    --------
    >>> f = groups_frame([3, 1])
    >>> chr(f[0]), np.frombuffer(f[HEADER_SIZE:], ">i4").tolist()
    ('G', [1, 3])
    """
    g = np.asarray(sorted(set(groups)), dtype=">i4")
    return _HEAD.pack(TAG_GROUPS, 0, len(g), 0.0, -1, 0) + g.tobytes()


def batch_frames(block: dict, carried: list | None, num_groups: int) -> list[bytes]:
    """The ``G`` frame (groups of the batch's keys and of carried entries) then the ``B``
    frame of one partition's batch block (``(block, carried)`` when a migration rides).

    Examples
    --------
    >>> [chr(f[0]) for f in batch_frames({"a": [1]}, None, 4)]
    ['G', 'B']
    """
    keys = list(block)
    if carried:
        keys += [it[1] for it in carried if it[0] == "e"]
    groups = key_groups(keys, num_groups).tolist() if keys else []
    payload = block if carried is None else (block, carried)
    return [groups_frame(groups), data_frame(TAG_BATCH, payload)]


def chunk_frame(records: list, pickled: bytes, num_groups: int,
                keys: list | None = None) -> bytes:
    """An ``R`` frame: ``pickled`` (the pickled list ``records`` of ``(key, value)``
    pairs) behind the sorted key groups of its keys (or of ``keys``: a riding migration's
    chunk lists the keys of the entries it carries), which the JVM reads to send the state
    frames of those groups to the merge.

    Examples
    --------
    >>> recs = [("a", 1), ("b", 2), ("a", 3)]
    >>> f = chunk_frame(recs, pickle.dumps(recs), 4)
    >>> chr(f[0]), chunk_records(f) == recs, header(f).nkeys <= 2
    ('R', True, True)
    """
    keys = list(dict.fromkeys([r[0] for r in records] if keys is None else keys))
    g = np.unique(key_groups(keys, num_groups)).astype(">i4") if keys else \
        np.zeros(0, dtype=">i4")
    index = g.tobytes()
    return _HEAD.pack(TAG_CHUNK, 0, g.size, 0.0, -1, len(index)) + index + pickled


def chunk_records(frame: bytes, h: Header | None = None) -> list:
    """The ``(key, value)`` pairs of an ``R`` frame, in the order they were routed."""
    h = header(frame) if h is None else h
    return pickle.loads(memoryview(frame)[HEADER_SIZE + h.index_len:])


def bypass_summary(frame: bytes) -> tuple[int, float, np.ndarray]:
    """``(nkeys, nbytes, per-frame records)`` of a ``U`` frame (fields group, nkeys,
    nbytes)."""
    h = header(frame)
    recs = np.frombuffer(frame, dtype=_BYPASS, offset=HEADER_SIZE)
    return h.nkeys, h.nbytes, recs


def with_bypass(stats: tuple, frames: Iterable[bytes], num_groups: int) -> tuple:
    """Statistics ``stats`` of a Python merge plus the state frames that bypassed it
    (``U`` frames): their keys and bytes (per group for key-group statistics)."""
    stats = list(stats)
    for f in frames:
        nk, nb, recs = bypass_summary(f)
        stats[4] += nk
        stats[5] += nb
        if stats[1] is None and len(recs):
            mem = np.array(stats[3], dtype=np.float64, copy=True)
            np.add.at(mem, recs["group"].astype(np.int64), recs["nbytes"].astype(np.float64))
            stats[3] = mem
    return tuple(stats)

def entries_of(frames: Iterable[bytes]) -> Iterator[tuple[Any, Any]]:
    """``(key, entry)`` pairs of state frames."""
    for f in frames:
        h = header(f)
        if h.tag == TAG_STATE:
            yield from frame_block(f, h).items()


def frames_of_entries(pairs: Iterable[tuple[Any, Any]], num_groups: int) -> Iterator[bytes]:
    """``S`` frames (one per key group) of the ``(key, entry)`` pairs of one partition."""
    pairs = list(pairs)
    if not pairs:
        return
    groups = key_groups([k for k, _ in pairs], num_groups).tolist()
    blocks: dict[int, dict] = defaultdict(dict)
    for (k, e), g in zip(pairs, groups):
        blocks[g][k] = e
    for g in sorted(blocks):
        yield state_frame(g, blocks[g])


def frames_to_block(frames: Iterable[bytes]) -> dict:
    """One ``{key: entry}`` dict of a partition's state frames (duplicates refused)."""
    by_group: dict[int, list[bytes]] = defaultdict(list)
    for f in frames:
        by_group[header(f).group].append(f)
    out: dict = {}
    for g, fs in by_group.items():
        out.update(union_block(fs, g))
    return out


def frames_stats(pid: int, frames: Iterable[bytes], num_groups: int, per_group: bool
                 ) -> tuple:
    """Zero-cost statistics of a partition's state (sizes only), from headers and indexes."""
    if per_group:
        mem = np.zeros(num_groups)
        nk = 0
        for f in frames:
            h = header(f)
            mem[h.group] += h.nbytes
            nk += h.nkeys
        return (pid, None, np.zeros(num_groups), mem, nk, float(mem.sum()))
    keys: list = []
    sizes: list = []
    for f in frames:
        k, s = frame_index(f)
        keys.extend(k)
        sizes.append(s)
    mem = np.concatenate(sizes) if sizes else np.zeros(0)
    return (pid, keys, np.zeros(len(keys)), mem, len(keys), float(mem.sum()))


def frames_summary(pid: int, frames: Iterable[bytes]) -> tuple[int, int, float]:
    """``(pid, number of keys, Σ S(k))`` of a partition's frames, from headers only."""
    nk, nb = 0, 0.0
    for f in frames:
        h = header(f)
        nk += h.nkeys
        nb += h.nbytes
    return (pid, nk, nb)


def check_state_frame(frame: bytes, pid: int, num_groups: int, fn: Any) -> Header:
    """Validate a state frame read back from a checkpoint: a decodable ``S`` frame whose
    keys all belong to its group and route to ``pid`` under ``fn``. ``ValueError`` says
    what is wrong."""
    h = header(frame)
    if h.tag != TAG_STATE:
        raise ValueError(f"a {chr(h.tag)!r} frame among the state frames of partition {pid}")
    keys, sizes = frame_index(frame, h)
    block = frame_block(frame, h)
    if list(block) != keys or len(sizes) != len(keys):
        raise ValueError(f"state frame of group {h.group} on partition {pid}: index and "
                         "entries disagree (corrupt state)")
    if keys:
        groups = key_groups(keys, num_groups)
        if (groups != h.group).any():
            raise ValueError(f"state frame of group {h.group} on partition {pid} holds keys "
                             "of other groups (corrupt state)")
        where = np.asarray(fn.assign(keys))
        if (where != pid).any():
            bad = keys[int(np.flatnonzero(where != pid)[0])]
            raise ValueError(f"key {bad!r} is stored on partition {pid} but the layout routes "
                             f"it to {int(fn(bad))} (checkpoint and layout disagree)")
    return h
