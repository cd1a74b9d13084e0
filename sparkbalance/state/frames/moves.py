"""Moving state entries between partitions, frame by frame (Fang et al. §4, Fig. 5 steps
3-7): what a migration reads on the map side and drops on the reduce side, both for a
migration of its own (:mod:`sparkbalance.state.frames.migration`) and for one riding in a batch's
routing shuffle (:class:`Move`, :func:`carried_items`, :func:`ride_block`).

Which entries leave. Key groups: whole frames, moved as bytes. Routing table with an
unchanged ``n``: only keys of the table delta can change partition, so the driver lists
them once, per frame (:func:`leaving_by_frame`, ``{(old pid, group): {key: new pid}}``),
and a worker looks each up in the decoded frame (:func:`leaving_entries`) instead of
calling the partition function on every key of every touched frame — with a delta of
many random keys every frame is touched, and that per-key Python call cost more than the
shuffle of the moving entries. A new ``n`` (scaling) may move any key: then the partition
function decides per key (:func:`moved_entries`, :func:`stay_frames`).

Pure Python (no pyspark): runs inside executors and in unit tests.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping

import numpy as np

from sparkbalance.routing.base import partition_func
from sparkbalance.routing.keygroups import key_groups
from sparkbalance.state.frames.format import TAG_STATE, batch_frames, frame_block, header, state_frame

__all__ = ["Carry", "RidePartitioner", "Move", "carried_items", "ride_block", "gather",
           "leaving_by_frame", "leaving_frames", "leaving_entries", "kept_frames", "moved_entries",
           "stay_frames", "reroute_groups"]

#: ``{(old pid, group): {key: new pid}}``: the keys that leave, per state frame.
Leaving = Mapping[tuple[int, int], Mapping[Any, int]]


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
        self._route = partition_func(fn)

    def __call__(self, k: Any) -> int:
        return k.pid if type(k) is Carry else self._route(k)

    def __reduce__(self) -> tuple:
        return (RidePartitioner, (self.fn,))


@dataclass(frozen=True)
class Move:
    """A migration riding in one batch's shuffle (Fang et al. §4, Fig. 5 steps 3-7 folded
    into the next batch): the frames marked in ``mask`` (byte ``pid * G + group``, placed
    by the old layout) may hold leaving state. Routing table: the entries of the keys in
    ``leaving`` leave (:func:`leaving_by_frame`), or, without it, an entry leaves when
    ``fn(key) != pid``; key groups: a whole frame leaves when ``g2p[group] != pid``.
    (A frozen dataclass, not a NamedTuple, so that its annotations resolve in this module.)"""

    mask: bytes
    num_groups: int
    fn: Any = None                  # new partition function (routing table)
    g2p: Any = None                 # new group -> partition array (key groups)
    leaving: Any = None             # {(old pid, group): {key: new pid}} (routing table)

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
        if move.leaving is not None:
            for to, (k, e) in leaving_entries(pid, (f,), move.leaving):
                yield Carry(to), ("e", k, e)
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
    >>> from sparkbalance.state.frames.format import frame_payload
    >>> frame_payload(f)
    ({'a': [1, 3]}, [('e', 'b', [2, 1.0, None])])
    """
    block: dict[Any, list] = {}
    carried: list = []
    gather(it, block, carried)
    return batch_frames(block, carried, num_groups)


def gather(it: Iterable[tuple[Any, Any]], block: dict, carried: list) -> None:
    """Add a routing shuffle's records to ``block`` (``{key: [values]}``, in arrival order)
    and the state items riding with them (keyed by :class:`Carry`) to ``carried``.

    Examples
    --------
    >>> block, carried = {"a": [0]}, []
    >>> gather([("a", 1), (Carry(1), ("f", b"")), ("b", 2)], block, carried)
    >>> block, carried
    ({'a': [0, 1], 'b': [2]}, [('f', b'')])
    """
    for k, v in it:
        if type(k) is Carry:
            carried.append(v)
            continue
        vals = block.get(k)
        if vals is None:
            block[k] = [v]
        else:
            vals.append(v)


def leaving_by_frame(keys: Iterable[Any], fn_old: Any, fn_new: Any, num_groups: int
                     ) -> dict[tuple[int, int], dict[Any, int]]:
    """The keys among ``keys`` whose partition changes from ``fn_old`` to ``fn_new``, per
    state frame they live in: ``{(old pid, group): {key: new pid}}``.

    Driver side, once per migration: the partition functions of the table delta's keys
    (vectorised), where a worker would otherwise call ``fn_new`` on every key of every
    touched frame.

    Examples
    --------
    >>> old, new = (lambda k: 0), (lambda k: 1 if k == "hot" else 0)
    >>> leaving_by_frame(["hot", "cold"], old, new, 1)
    {(0, 0): {'hot': 1}}
    """
    keys = list(keys)
    if not keys:
        return {}
    a_all, b_all = _partitions(fn_old, keys), _partitions(fn_new, keys)
    sel = np.flatnonzero(a_all != b_all)
    out: dict[tuple[int, int], dict[Any, int]] = defaultdict(dict)
    if sel.size:
        moving = [keys[i] for i in sel.tolist()]
        groups = key_groups(moving, num_groups).tolist()
        for k, a, b, g in zip(moving, a_all[sel].tolist(), b_all[sel].tolist(), groups):
            out[(a, g)][k] = b
    return dict(out)


def _partitions(fn: Any, keys: list) -> np.ndarray:
    """``fn`` of every key: vectorised when ``fn`` has ``assign`` (a partition function
    of :mod:`sparkbalance.routing`), one call per key otherwise."""
    assign = getattr(fn, "assign", None)
    if assign is not None:
        return np.asarray(assign(keys), dtype=np.int64)
    return np.fromiter((int(fn(k)) for k in keys), dtype=np.int64, count=len(keys))


def leaving_frames(pid: int, frames: Iterable[bytes], leaving: Leaving
                   ) -> Iterator[tuple[int, bytes]]:
    """``(new pid, frame)``: the entries :func:`leaving_entries` yields, packed on the map
    side into one state frame per (touched frame, new partition). A frame keeps its key
    group wherever it lives, so the receiving side stores these frames as they arrive,
    without decoding them (a partition may then hold several frames of a group; the next
    merge that touches the group unites them).

    Examples
    --------
    >>> f = state_frame(5, {"a": [1, 1.0, None], "b": [2, 1.0, None]})
    >>> [(to, header(x).group, frame_block(x)) for to, x in
    ...  leaving_frames(0, [f], {(0, 5): {"b": 3}})]
    [(3, 5, {'b': [2, 1.0, None]})]
    """
    for f in frames:
        h = header(f)
        if h.tag != TAG_STATE:
            raise RuntimeError(f"partition {pid}: a {chr(h.tag)!r} frame among the state frames")
        out = leaving.get((pid, h.group))
        if not out:
            continue
        block = frame_block(f, h)
        by_dest: dict[int, dict] = defaultdict(dict)
        for k, to in out.items():
            if k in block:
                by_dest[to][k] = block[k]
        for to, sub in by_dest.items():
            yield to, state_frame(h.group, sub)


def leaving_entries(pid: int, frames: Iterable[bytes], leaving: Leaving
                    ) -> Iterator[tuple[int, tuple[Any, Any]]]:
    """``(new pid, (key, entry))`` of the entries of partition ``pid``'s state ``frames``
    whose key is listed in ``leaving`` (:func:`leaving_by_frame`). A frame with no
    leaving key is not decoded; a listed key the state does not hold is skipped.

    Examples
    --------
    >>> f = state_frame(0, {"a": [1, 1.0, None], "b": [2, 1.0, None]})
    >>> list(leaving_entries(0, [f], {(0, 0): {"b": 3}}))
    [(3, ('b', [2, 1.0, None]))]
    """
    for f in frames:
        h = header(f)
        if h.tag != TAG_STATE:
            raise RuntimeError(f"partition {pid}: a {chr(h.tag)!r} frame among the state frames")
        out = leaving.get((pid, h.group))
        if not out:
            continue
        block = frame_block(f, h)
        for k, to in out.items():
            if k in block:
                yield to, (k, block[k])


def kept_frames(pid: int, frames: Iterable[bytes], leaving: Leaving) -> Iterator[bytes]:
    """Partition ``pid``'s state ``frames`` without the entries :func:`leaving_entries`
    takes away (a frame losing nothing passes on as it is, undecoded).

    Examples
    --------
    >>> f = state_frame(0, {"a": [1, 1.0, None], "b": [2, 1.0, None]})
    >>> [frame_block(x) for x in kept_frames(0, [f], {(0, 0): {"b": 3}})]
    [{'a': [1, 1.0, None]}]
    """
    for f in frames:
        h = header(f)
        out = leaving.get((pid, h.group))
        if not out:
            yield f
            continue
        block = frame_block(f, h)
        n = len(block)
        for k in out:
            block.pop(k, None)
        if len(block) == n:
            yield f
        elif block:
            yield state_frame(h.group, block)


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

def reroute_groups(frames: Iterable[bytes], group_to_partition: np.ndarray
                   ) -> Iterator[tuple[int, bytes]]:
    """``(new partition, frame)`` of whole-group frames (key-group layouts): the frame
    moves as it is, never unpickled."""
    g2p = group_to_partition
    for f in frames:
        yield int(g2p[header(f).group]), f
