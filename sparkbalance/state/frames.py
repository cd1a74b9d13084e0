"""The keyed state as *frames*: one sub-block per key group, kept as raw bytes.

A partition of the state is a list of frames, each the entries (``{key: entry}``, see
:mod:`sparkbalance.state.window`) of the keys of one group ``g = key_group(k, G)`` that
live on that partition. A frame is ``bytes`` with a fixed header::

    tag (1 byte) | group (int32) | nkeys (int32) | nbytes (float64, Σ S(k))
    | oldest (int64: first batch seq still in the window, -1 unbounded) | index length (uint32)

followed, for a state frame (tag ``S``), by the pickled index ``(keys, sizes)`` and the
pickled ``{key: entry}`` dict; other frames (``B`` batch block, ``O`` outputs, ``T``
statistics) carry one pickled object.

Why frames. Spark ships every element of a partition through the Python worker that
reads it; with one dict per partition (the first design) a migration had to pass the whole
state through Python to find the 10 % that moves, which cost about as much as moving
everything. Frames have their tag and group at fixed offsets, so the JVM side
(``io.sparkbalance.bridge.StateFrames``, or a Python fallback) selects the frames a
migration touches without Python ever seeing the rest; a batch merge re-pickles only the
groups its keys touch (or whose window expires) and passes the others through as bytes.

Pure Python (no pyspark): runs inside executors and in unit tests.

Long because: the frame byte format and every per-partition pass over it (merge, riding
moves, the JVM bypass summaries) share the private header helpers; the riding-move half is
the next to move out.
"""
from __future__ import annotations

import pickle
import struct
from collections import defaultdict
from typing import Any, Iterable, Iterator, NamedTuple

import numpy as np

from ..routing.keygroups import key_groups
from .blocks import merge_blocks
from .window import StateFold

__all__ = ["TAG_STATE", "TAG_BATCH", "TAG_OUTPUTS", "TAG_STATS", "TAG_GROUPS", "TAG_BYPASS",
           "groups_frame", "batch_frames", "bypass_summary", "with_bypass", "Header",
           "header", "state_frame", "data_frame", "frame_index", "frame_block",
           "frame_payload", "merge_partition", "moved_entries", "stay_frames",
           "Carry", "RidePartitioner", "Move", "carried_items", "ride_block",
           "frames_of_entries",
           "reroute_groups", "frames_to_block", "frames_stats", "frames_summary",
           "DEFAULT_TABLE_GROUPS", "entries_of", "check_state_frame"]

TAG_STATE, TAG_BATCH, TAG_OUTPUTS, TAG_STATS = (ord(c) for c in "SBOT")
#: ``G``: the key groups a batch block touches (int32 big-endian after the header), read
#: by the JVM to keep the other state frames out of Python; ``U``: the JVM's summary of
#: the state frames that bypassed Python (``(int32 group, int32 nkeys, float64 nbytes)``
#: per frame after the header).
TAG_GROUPS, TAG_BYPASS = ord("G"), ord("U")
_TAGS = {TAG_STATE, TAG_BATCH, TAG_OUTPUTS, TAG_STATS, TAG_GROUPS, TAG_BYPASS}
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
        raise ValueError(f"state frame header {tuple(h)} is invalid (tag in 'SBOT', nkeys "
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
    sizes = np.fromiter((e[1] for e in block.values()), dtype=np.float64, count=len(keys))
    index = pickle.dumps((keys, sizes), protocol=_PROTOCOL)
    data = pickle.dumps(block, protocol=_PROTOCOL)
    return (_HEAD.pack(TAG_STATE, int(group), len(keys), float(sizes.sum()), _oldest(block),
                       len(index)) + index + data)


def data_frame(tag: int, obj: Any, group: int = 0, nkeys: int = 0, nbytes: float = 0.0
               ) -> bytes:
    """A frame carrying one pickled object (batch block, outputs, stats, moved entries)."""
    return _HEAD.pack(tag, group, nkeys, nbytes, -1, 0) + pickle.dumps(obj, protocol=_PROTOCOL)


def frame_index(frame: bytes, h: Header | None = None) -> tuple[list, np.ndarray]:
    """``(keys, sizes)`` of a state frame, without unpickling the entries."""
    h = header(frame) if h is None else h
    return pickle.loads(memoryview(frame)[HEADER_SIZE:HEADER_SIZE + h.index_len])


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


def _union(frames: list[bytes], group: int) -> dict:
    """Entries of several frames of one group on one partition (after a migration)."""
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


class Carry:
    """Shuffle key of a state item riding in a batch's routing shuffle: it goes to
    partition ``pid`` whatever its own key (a key of the state may be any routable value,
    so the marker is a type of its own, never a key value)."""

    __slots__ = ("pid",)

    def __init__(self, pid: int) -> None:
        self.pid = int(pid)

    def __reduce__(self) -> tuple:
        return (Carry, (self.pid,))

    def __repr__(self) -> str:
        return f"Carry({self.pid})"


class RidePartitioner:
    """Partition function of a batch shuffle that also carries migrating state: a batch
    record goes to ``fn(key)`` (the new layout), a carried item to its ``Carry.pid``.

    Examples
    --------
    >>> p = RidePartitioner(lambda k: 1)
    >>> p("a"), p(Carry(0))
    (1, 0)
    """

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def __call__(self, k: Any) -> int:
        return k.pid if type(k) is Carry else self.fn(k)


class Move(NamedTuple):
    """A migration riding in one batch's shuffle (Fang et al. §4, Fig. 5 steps 3-7 folded
    into the next batch): the frames marked in ``mask`` (byte ``pid * G + group``, placed
    by the old layout) may hold leaving state. Routing table: an entry leaves when
    ``fn(key) != pid``; key groups: a whole frame leaves when ``g2p[group] != pid``."""

    mask: bytes
    num_groups: int
    fn: Any = None                  # new partition function (routing table)
    g2p: Any = None                 # new group -> partition array (key groups)

    def marked(self, pid: int, group: int) -> bool:
        at = pid * self.num_groups + group
        return 0 <= group < self.num_groups and at < len(self.mask) and self.mask[at] != 0


def carried_items(pid: int, frames: Iterable[bytes], move: Move
                  ) -> Iterator[tuple[Carry, Any]]:
    """Map side of a riding migration: ``(Carry(new pid), item)`` for what leaves
    partition ``pid`` — ``("e", key, entry)`` per entry (routing table) or ``("f", frame)``
    per whole frame (key groups, moved as bytes, never unpickled). ``frames`` are the
    frames :meth:`Move.marked` selects; the reduce side (:func:`merge_partition`) drops
    exactly these from the same frames."""
    for f in frames:
        h = header(f)
        if h.tag != TAG_STATE:
            raise RuntimeError(f"partition {pid}: a {chr(h.tag)!r} frame among the state frames")
        if move.g2p is not None:
            to = int(move.g2p[h.group])
            if to != pid:
                yield Carry(to), ("f", f)
            continue
        fn = move.fn
        for k, e in frame_block(f, h).items():
            to = fn(k)
            if to != pid:
                yield Carry(to), ("e", k, e)


def ride_block(it: Iterable[tuple[Any, Any]], num_groups: int) -> list[bytes]:
    """Reduce side of a riding batch shuffle: the ``G`` frame and one ``B`` frame whose
    payload is ``(block, carried)`` — the batch's ``{key: [values]}`` and the carried
    items (:func:`batch_frames`).

    Examples
    --------
    >>> f = ride_block([("a", 1), (Carry(0), ("e", "b", [2, 1.0, None])), ("a", 3)], 4)[1]
    >>> frame_payload(f)
    ({'a': [1, 3]}, [('e', 'b', [2, 1.0, None])])
    """
    block: dict[Any, list] = {}
    carried: list = []
    for k, v in it:
        if type(k) is Carry:
            carried.append(v)
            continue
        vals = block.get(k)
        if vals is None:
            block[k] = [v]
        else:
            vals.append(v)
    return batch_frames(block, carried, num_groups)


def merge_partition(pid: int, frames: Iterable[bytes], fold: StateFold, seq: int,
                    num_groups: int, per_group: bool, watch: frozenset | None = None,
                    move: Move | None = None) -> Iterator[bytes]:
    """Merge the batch block into the state frames of partition ``pid``.

    ``frames``: the partition's ``S`` frames and exactly one ``B`` frame (the batch,
    ``{key: [values]}``, or ``(block, carried)`` from :func:`ride_block` when a migration
    rides in the batch's shuffle). Yields the new ``S`` frames, then one ``O`` frame (the
    ``(key, output)`` list) and one ``T`` frame: statistics ``(pid, keys, cost, memory,
    nkeys, total_bytes, moved_out, moved_in, bytes_in)`` per key, or ``(pid, None,
    cost[g], memory[g], ...)`` per group when ``per_group``. Per key, only the keys of the
    batch and the keys in ``watch`` (the routing table's: a planner may move them with zero
    cost) are listed; ``None`` lists every key. A group is re-pickled only when the batch
    has keys of it, its window expires, it has several frames, or state left or arrived;
    any other frame passes through as it is (its index is read only if it may hold a
    watched key).

    ``move`` (a migration riding in this batch): the entries (frames) of the marked frames
    that leave ``pid`` are dropped (``moved_out``), the carried ones arriving here are
    taken in (``moved_in`` keys of ``bytes_in`` Σ S(k), counted before the batch folds into
    them). Both counts come from this result-stage task, so a retried task is counted once.

    Examples
    --------
    >>> f = StateFold(update=lambda s, v: s + v, initial=0)
    >>> out = list(merge_partition(0, [data_frame(TAG_BATCH, {"a": [1, 2]})], f, 0, 4, False))
    >>> [chr(x[0]) for x in out], frame_payload(out[1])
    (['S', 'O', 'T'], [('a', 3)])
    """
    by_group: dict[int, list[tuple[bytes, Header]]] = defaultdict(list)
    batch = None
    carried: list = []
    for f in frames:
        h = header(f)
        if h.tag == TAG_STATE:
            by_group[h.group].append((f, h))
        elif h.tag == TAG_BATCH:
            if batch is not None:
                raise RuntimeError(f"partition {pid} received two batch blocks; expected one")
            batch = frame_payload(f)
            if isinstance(batch, tuple):
                batch, carried = batch
        elif h.tag == TAG_GROUPS:
            continue          # for the JVM's divert; the Python fallback sees it too
        else:
            raise RuntimeError(f"partition {pid} holds a {chr(h.tag)!r} frame in its state")
    if batch is None:
        raise RuntimeError(f"partition {pid} received no batch block; expected exactly one")
    # Entries decoded in this pass outside the batch fold: the stays of frames that lost
    # entries, and the arrivals (routing table). Their groups are re-pickled.
    extra: dict[int, dict] = {}
    moved_out = moved_in = 0
    bytes_in = 0.0
    if move is not None:
        for g in [g for g in by_group if move.marked(pid, g)]:
            kept: list[tuple[bytes, Header]] = []
            for f, h in by_group[g]:
                if move.g2p is not None:
                    if int(move.g2p[g]) != pid:
                        moved_out += h.nkeys
                    else:
                        kept.append((f, h))
                    continue
                block = frame_block(f, h)
                fn = move.fn
                stays = {k: e for k, e in block.items() if fn(k) == pid}
                moved_out += len(block) - len(stays)
                _add_entries(extra, g, stays, pid)
            if kept:
                by_group[g] = kept
            else:
                del by_group[g]
        arrivals: dict = {}
        for item in carried:
            if item[0] == "f":
                f = item[1]
                h = header(f)
                by_group[h.group].append((f, h))
                moved_in += h.nkeys
                bytes_in += h.nbytes
            else:
                _, k, e = item
                if k in arrivals:
                    raise RuntimeError(f"key {k!r} arrived twice at partition {pid}; the "
                                       "migration is inconsistent")
                arrivals[k] = e
                moved_in += 1
                bytes_in += float(e[1])
        if arrivals:
            akeys = list(arrivals)
            for k, g in zip(akeys, key_groups(akeys, num_groups).tolist()):
                _add_entries(extra, g, {k: arrivals[k]}, pid)
    elif carried:
        raise RuntimeError(f"partition {pid} received {len(carried)} migrating items but no "
                           "migration rides in this batch")
    bkeys = list(batch)
    bgroups = key_groups(bkeys, num_groups).tolist() if bkeys else []
    batch_of: dict[int, dict] = defaultdict(dict)
    for k, g in zip(bkeys, bgroups):
        batch_of[g][k] = batch[k]
    expire_before = None if fold.window is None else seq - fold.window
    watch_groups = None
    if watch is not None and not per_group:
        watch_groups = set(key_groups(list(watch), num_groups).tolist()) if watch else set()
    outputs: list = []
    s_keys: list = []
    s_cost: list = []
    s_mem: list = []
    g_cost = np.zeros(num_groups) if per_group else None
    g_mem = np.zeros(num_groups) if per_group else None
    nkeys, total = 0, 0.0
    for g in sorted(set(by_group) | set(batch_of) | set(extra)):
        fhs = by_group.get(g, [])
        fs = [f for f, _ in fhs]
        bsub = batch_of.get(g)
        expiring = expire_before is not None and any(0 <= h.oldest <= expire_before
                                                     for _, h in fhs)
        if bsub is None and not expiring and len(fs) == 1 and g not in extra:
            h = fhs[0][1]
            yield fs[0]
            nkeys += h.nkeys
            total += h.nbytes
            if per_group:
                g_mem[g] += h.nbytes
            elif watch_groups is None or g in watch_groups:
                keys, sizes = frame_index(fs[0], h)
                if watch_groups is not None:
                    sel = [i for i, k in enumerate(keys) if k in watch]
                    keys, sizes = [keys[i] for i in sel], sizes[sel]
                s_keys.extend(keys)
                s_cost.append(np.zeros(len(keys)))
                s_mem.append(sizes)
            continue
        block = _union(fs, g) if fs else {}
        more = extra.get(g)
        if more:
            both = block.keys() & more.keys()
            if both:
                raise RuntimeError(f"keys {sorted(map(repr, both))[:5]} are stored twice in "
                                   f"key group {g} of partition {pid}; the state layout is "
                                   "inconsistent")
            block.update(more)
        block, outs, (_, keys, c, mem, nk) = merge_blocks(pid, block, bsub or {}, fold, seq)
        outputs.extend(outs)
        if block:
            yield state_frame(g, block)
        nkeys += nk
        total += float(mem.sum())
        if per_group:
            g_cost[g] += c.sum()
            g_mem[g] += mem.sum()
        else:
            if watch is not None:
                sel = [i for i, k in enumerate(keys) if c[i] > 0 or k in watch]
                keys, c, mem = [keys[i] for i in sel], c[sel], mem[sel]
            s_keys.extend(keys)
            s_cost.append(c)
            s_mem.append(mem)
    yield data_frame(TAG_OUTPUTS, outputs, nkeys=len(outputs))
    moved = (moved_out, moved_in, bytes_in)
    if per_group:
        stats = (pid, None, g_cost, g_mem, nkeys, total) + moved
    else:
        stats = (pid, s_keys, np.concatenate(s_cost) if s_cost else np.zeros(0),
                 np.concatenate(s_mem) if s_mem else np.zeros(0), nkeys, total) + moved
    yield data_frame(TAG_STATS, stats, nkeys=nkeys)


def _add_entries(extra: dict[int, dict], g: int, entries: dict, pid: int) -> None:
    """Add decoded entries of group ``g``; a key seen twice is a broken layout."""
    have = extra.get(g)
    if have is None:
        extra[g] = dict(entries)
        return
    both = have.keys() & entries.keys()
    if both:
        raise RuntimeError(f"keys {sorted(map(repr, both))[:5]} are stored twice in key "
                           f"group {g} of partition {pid}; the state layout is inconsistent")
    have.update(entries)


def moved_entries(pid: int, frames: Iterable[bytes], fn: Any) -> Iterator[tuple[Any, Any]]:
    """``(key, entry)`` of the state frames of partition ``pid`` whose partition under
    ``fn`` is no longer ``pid`` (Δ of a routing-table migration)."""
    for f in frames:
        h = header(f)
        if h.tag != TAG_STATE:
            raise RuntimeError(f"partition {pid}: a {chr(h.tag)!r} frame among the state frames")
        for k, e in frame_block(f, h).items():
            if fn(k) != pid:
                yield k, e


def stay_frames(pid: int, frames: Iterable[bytes], fn: Any) -> Iterator[bytes]:
    """The state frames of partition ``pid`` without the entries that :func:`moved_entries`
    takes away (a frame losing nothing is passed on as it is)."""
    for f in frames:
        h = header(f)
        block = frame_block(f, h)
        stays = {k: e for k, e in block.items() if fn(k) == pid}
        if len(stays) == len(block):
            yield f
        elif stays:
            yield state_frame(h.group, stays)


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


def reroute_groups(frames: Iterable[bytes], group_to_partition: np.ndarray
                   ) -> Iterator[tuple[int, bytes]]:
    """``(new partition, frame)`` of whole-group frames (key-group layouts): the frame
    moves as it is, never unpickled."""
    g2p = group_to_partition
    for f in frames:
        yield int(g2p[header(f).group]), f


def frames_to_block(frames: Iterable[bytes]) -> dict:
    """One ``{key: entry}`` dict of a partition's state frames (duplicates refused)."""
    by_group: dict[int, list[bytes]] = defaultdict(list)
    for f in frames:
        by_group[header(f).group].append(f)
    out: dict = {}
    for g, fs in by_group.items():
        out.update(_union(fs, g))
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
