"""The merge of one batch into one partition of the keyed state, frame by frame.

A partition's state frames (:mod:`sparkbalance.state.frames.format`) and the batch's ``B`` frame
meet in one Python task; only the key groups the batch touches, whose window expires,
which hold several frames, or which a riding migration
(:class:`~sparkbalance.state.frames.moves.Move`) changes are decoded and re-pickled —
every other frame passes through as bytes. The fold itself is :func:`sparkbalance.state.frames.blocks.merge_blocks`.

:func:`merge_partition` is the per-partition hot path, in named steps that each pass over
their input once: sort the partition's frames (:func:`_read_frames`), apply a riding
migration (:func:`_drop_leaving`, :func:`_take_arrivals`), cut the batch by key group, then
per group either pass the frame on or fold the batch into its block, while
:class:`_PartitionStats` adds the group to the statistics frame.

Pure Python (no pyspark): runs inside executors and in unit tests.
"""
from __future__ import annotations

import contextlib
import gc
from collections import defaultdict
from typing import Callable, Iterable, Iterator

import numpy as np

from sparkbalance.routing.keygroups import key_groups
from sparkbalance.state.frames.blocks import merge_blocks, prepare_block
from sparkbalance.state.frames.moves import Move, gather
from sparkbalance.state.frames.format import (TAG_BATCH, TAG_CHUNK, TAG_GROUPS, TAG_OUTPUTS, TAG_STATE, TAG_STATS,
                     Header, chunk_records, data_frame, frame_block, frame_index,
                     frame_payload, header, state_frame, union_block)
from sparkbalance.state.frames.window import StateFold

__all__ = ["merge_partition", "YOUNG_COLLECTION"]

#: Allocations between two young-generation collections of Python's cyclic garbage
#: collector while a partition merges (the default is 700). A merge allocates several
#: short-lived objects per key (its entry, its state, the user's frames) and frees them
#: by reference count: at 700 the collector ran ~2,000 times a batch and took ~15 % of
#: the merge tasks' CPU (Zipf 1.0, 20,000 rows) finding no garbage; at this threshold
#: cyclic garbage still cannot pile up past about this many objects.
YOUNG_COLLECTION: int = 100_000


def merge_partition(pid: int, frames: Iterable[bytes], fold: StateFold, seq: int,
                    num_groups: int, per_group: bool, watch: frozenset | None = None,
                    move: Move | None = None, chunked: bool = False,
                    drop: Callable[[int, dict], None] | None = None,
                    watch_groups: set | None = None) -> Iterator[bytes]:
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

    ``chunked``: the batch arrives as the ``R`` frames of its routing shuffle (any
    number, none when no record was routed here) instead of one ``B`` frame; they are
    grouped here, values of a key in the order they arrive, and the items of a riding
    migration among them (keyed by :class:`~.frame_moves.Carry`) are the carried ones.

    ``move`` (a migration riding in this batch): the entries (frames) of the marked frames
    that leave ``pid`` are dropped (``moved_out``), the carried ones arriving here are
    taken in (``moved_in`` keys of ``bytes_in`` Σ S(k), counted before the batch folds into
    them). Both counts come from this result-stage task, so a retried task is counted once.

    ``drop(pid, batch)``: takes out of the gathered batch block, in place, the keys whose
    records were routed again to another partition (a look-ahead plan's misplaced ones).

    ``watch_groups``: the key groups of the ``watch`` keys the layout places on ``pid``
    (the driver knows them from the mask it builds); a frame passed on unread has its
    index read only when its group is one of them. None: the groups of every ``watch``
    key, hashed here.

    Examples
    --------
    >>> f = StateFold(update=lambda s, v: s + v, initial=0)
    >>> out = list(merge_partition(0, [data_frame(TAG_BATCH, {"a": [1, 2]})], f, 0, 4, False))
    >>> [chr(x[0]) for x in out], frame_payload(out[1])
    (['S', 'O', 'T'], [('a', 3)])
    """
    with _young_collections(YOUNG_COLLECTION):
        yield from _merge(pid, frames, fold, seq, num_groups, per_group, watch, move, chunked,
                          drop, watch_groups)


@contextlib.contextmanager
def _young_collections(threshold: int) -> Iterator[None]:
    """Python's young-generation collection threshold at least ``threshold`` inside the
    block, restored after it (unless something inside changed it again).

    Examples
    --------
    >>> before = gc.get_threshold()
    >>> with _young_collections(10 ** 6):
    ...     gc.get_threshold()[0]
    1000000
    >>> gc.get_threshold() == before
    True
    """
    old = gc.get_threshold()
    ours = (max(old[0], threshold),) + old[1:]
    gc.set_threshold(*ours)
    try:
        yield
    finally:
        if gc.get_threshold() == ours:
            gc.set_threshold(*old)


def _merge(pid: int, frames: Iterable[bytes], fold: StateFold, seq: int, num_groups: int,
           per_group: bool, watch: frozenset | None, move: Move | None, chunked: bool,
           drop: Callable[[int, dict], None] | None, watch_groups: set | None
           ) -> Iterator[bytes]:
    """:func:`merge_partition`'s steps."""
    by_group, batch, carried = _read_frames(pid, frames, chunked)
    if drop is not None:        # records routed again elsewhere (route_chunks.Misplaced)
        drop(pid, batch)
    # Entries decoded in this pass outside the batch fold: the stays of frames that lost
    # entries, and the arrivals (routing table). Their groups are re-pickled.
    extra: dict[int, dict] = {}
    moved: tuple[int, int, float] = (0, 0, 0.0)
    if move is not None:
        moved_out = _drop_leaving(pid, by_group, move, extra)
        moved = (moved_out, *_take_arrivals(pid, by_group, carried, num_groups, extra))
    elif carried:
        raise RuntimeError(f"partition {pid} received {len(carried)} migrating items but no "
                           "migration rides in this batch")
    batch_of = _by_group(prepare_block(fold, batch), num_groups)
    expire_before = None if fold.window is None else seq - fold.window
    stats = _PartitionStats(num_groups, per_group, watch, watch_groups)
    outputs: list = []
    for g in sorted(set(by_group) | set(batch_of) | set(extra)):
        fhs = by_group.get(g, [])
        bsub = batch_of.get(g)
        if (bsub is None and len(fhs) == 1 and g not in extra
                and not _expiring(fhs, expire_before)):
            f, h = fhs[0]
            yield f                 # untouched: passes through as bytes
            stats.passed(g, f, h)
            continue
        block = _group_block(pid, g, fhs, extra.get(g))
        block, outs, (_, keys, c, mem, nk) = merge_blocks(pid, block, bsub or {}, fold, seq)
        outputs.extend(outs)
        if block:
            yield state_frame(g, block)
        stats.merged(g, keys, c, mem, nk)
    yield data_frame(TAG_OUTPUTS, fold.finish(outputs), nkeys=len(outputs))
    yield stats.frame(pid, moved)


def _read_frames(pid: int, frames: Iterable[bytes], chunked: bool
                 ) -> tuple[dict[int, list[tuple[bytes, Header]]], dict, list]:
    """The partition's state frames by group, the batch block ``{key: [values]}`` and the
    items a riding migration carried here; a partition without exactly one batch block
    (or, ``chunked``, with a ``B`` frame) is a ``RuntimeError``."""
    by_group: dict[int, list[tuple[bytes, Header]]] = defaultdict(list)
    batch: dict | None = {} if chunked else None
    carried: list = []
    for f in frames:
        h = header(f)
        if h.tag == TAG_STATE:
            by_group[h.group].append((f, h))
        elif h.tag == TAG_CHUNK and chunked:
            gather(chunk_records(f, h), batch, carried)   # records, and riding state
        elif h.tag == TAG_BATCH and not chunked:
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
    return by_group, batch, carried


def _drop_leaving(pid: int, by_group: dict[int, list[tuple[bytes, Header]]], move: Move,
                  extra: dict[int, dict]) -> int:
    """Drop what leaves ``pid`` from the frames ``move`` marks: whole frames (key groups),
    else the leaving entries, the stays going to ``extra``. Returns the count that left."""
    moved_out = 0
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
            if move.leaving is not None:
                n = len(block)
                for k in move.leaving.get((pid, g), ()):
                    block.pop(k, None)
                stays = block
                moved_out += n - len(stays)
            else:
                fn = move.fn
                stays = {k: e for k, e in block.items() if fn(k) == pid}
                moved_out += len(block) - len(stays)
            _add_entries(extra, g, stays, pid)
        if kept:
            by_group[g] = kept
        else:
            del by_group[g]
    return moved_out


def _take_arrivals(pid: int, by_group: dict[int, list[tuple[bytes, Header]]],
                   carried: list, num_groups: int, extra: dict[int, dict]
                   ) -> tuple[int, float]:
    """Take in the carried items: whole frames join ``by_group``, entries go to ``extra``
    by their key group. Returns (keys in, Σ S(k) in), counted before the batch folds."""
    moved_in, bytes_in = 0, 0.0
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
    return moved_in, bytes_in


def _by_group(batch: dict, num_groups: int) -> dict[int, dict]:
    """The batch block cut by key group: ``{group: {key: [values]}}``."""
    bkeys = list(batch)
    batch_of: dict[int, dict] = defaultdict(dict)
    if bkeys:
        for k, g in zip(bkeys, key_groups(bkeys, num_groups).tolist()):
            batch_of[g][k] = batch[k]
    return batch_of


def _expiring(fhs: list[tuple[bytes, Header]], expire_before: int | None) -> bool:
    """A frame of the group holds a window segment at or before ``expire_before``."""
    return expire_before is not None and any(0 <= h.oldest <= expire_before
                                             for _, h in fhs)


def _group_block(pid: int, g: int, fhs: list[tuple[bytes, Header]], more: dict | None
                 ) -> dict:
    """Group ``g``'s entries decoded: its frames' and the ``more`` decoded by the move."""
    block = union_block([f for f, _ in fhs], g) if fhs else {}
    if more:
        both = block.keys() & more.keys()
        if both:
            raise RuntimeError(f"keys {sorted(map(repr, both))[:5]} are stored twice in "
                               f"key group {g} of partition {pid}; the state layout is "
                               "inconsistent")
        block.update(more)
    return block


class _PartitionStats:
    """The statistics (``T``) frame of a partition, added to group by group: per key (the
    batch's keys and the watched ones) or per group (``per_group``)."""

    __slots__ = ("per_group", "watch", "watch_groups", "keys", "cost", "mem", "g_cost",
                 "g_mem", "nkeys", "total")

    def __init__(self, num_groups: int, per_group: bool, watch: frozenset | None,
                 watch_groups: set | None = None) -> None:
        self.per_group = per_group
        self.watch = watch
        self.watch_groups: set | None = None
        if watch is not None and not per_group:
            if watch_groups is not None:
                self.watch_groups = watch_groups
            else:
                self.watch_groups = (set(key_groups(list(watch), num_groups).tolist())
                                     if watch else set())
        self.keys: list = []
        self.cost: list = []
        self.mem: list = []
        self.g_cost = np.zeros(num_groups) if per_group else None
        self.g_mem = np.zeros(num_groups) if per_group else None
        self.nkeys, self.total = 0, 0.0

    def passed(self, g: int, f: bytes, h: Header) -> None:
        """Group ``g``'s one frame passed on unread: sizes from its header, and per key its
        index, read only if it may hold a watched key."""
        self.nkeys += h.nkeys
        self.total += h.nbytes
        if self.per_group:
            self.g_mem[g] += h.nbytes
        elif self.watch_groups is None or g in self.watch_groups:
            keys, sizes = frame_index(f, h)
            if self.watch_groups is not None:
                sel = [i for i, k in enumerate(keys) if k in self.watch]
                keys, sizes = [keys[i] for i in sel], sizes[sel]
            self.keys.extend(keys)
            self.cost.append(np.zeros(len(keys)))
            self.mem.append(sizes)

    def merged(self, g: int, keys: list, c: np.ndarray, mem: np.ndarray, nk: int) -> None:
        """Group ``g`` folded with the batch: its keys' costs and sizes (per key, those the
        batch touched or the planner watches)."""
        self.nkeys += nk
        self.total += float(mem.sum())
        if self.per_group:
            self.g_cost[g] += c.sum()
            self.g_mem[g] += mem.sum()
            return
        if self.watch is not None:
            sel = [i for i, k in enumerate(keys) if c[i] > 0 or k in self.watch]
            keys, c, mem = [keys[i] for i in sel], c[sel], mem[sel]
        self.keys.extend(keys)
        self.cost.append(c)
        self.mem.append(mem)

    def frame(self, pid: int, moved: tuple[int, int, float]) -> bytes:
        """The ``T`` frame: ``(pid, keys, cost, memory, nkeys, total_bytes) + moved``."""
        if self.per_group:
            stats = (pid, None, self.g_cost, self.g_mem, self.nkeys, self.total) + moved
        else:
            stats = (pid, self.keys,
                     np.concatenate(self.cost) if self.cost else np.zeros(0),
                     np.concatenate(self.mem) if self.mem else np.zeros(0),
                     self.nkeys, self.total) + moved
        return data_frame(TAG_STATS, stats, nkeys=self.nkeys)


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
