"""The map side of a batch's routing shuffle when the bridge jar reads ``R`` frames: the
batch's records, and the state of a migration riding with them, written as shuffle chunks
the merge reads as they are (:func:`~sparkbalance.state.frames.merge.merge_partition` with
``chunked``), so the merge stage is one Python pass.

Spark side of :mod:`sparkbalance.state.frames.framed_state` (imports pyspark inside the functions).
"""
from __future__ import annotations

import functools
import itertools
import time
from typing import Any, Iterable

import numpy as np

from sparkbalance.spark.rdd.shuffle import keyed_by_function, shuffle_keyed
from sparkbalance.state.frames import moves as fm
from sparkbalance.state.frames import format as fr
from sparkbalance.state.frames.riding import CarryWriter
from sparkbalance.state.frames.tally import key_counts

__all__ = ["batch_chunks", "carried_chunks", "shuffle_chunks", "KeyTally",
           "MapSpan", "run_map_stage", "Misplaced"]


class KeyTally:
    """PySpark ``AccumulatorParam`` of a batch's records per key (dicts summed)."""

    def zero(self, value: dict) -> dict:
        return {}

    def addInPlace(self, value1: dict, value2: dict) -> dict:
        for k, c in value2.items():
            value1[k] = value1.get(k, 0) + c
        return value1


class MapSpan:
    """PySpark ``AccumulatorParam`` of the wall-clock span ``(first start, last end)`` of
    a map stage's tasks (epoch seconds): the look-ahead's job boundary is the map-stage
    job's wall time less this span (:meth:`~sparkbalance.state.forecast.Forecasting.ahead`).

    Examples
    --------
    >>> MapSpan().addInPlace((5.0, 6.0), (4.0, 5.5))
    (4.0, 6.0)
    """

    def zero(self, value: tuple) -> tuple:
        return (float("inf"), float("-inf"))

    def addInPlace(self, value1: tuple, value2: tuple) -> tuple:
        return (min(value1[0], value2[0]), max(value1[1], value2[1]))


class _TalliedChunk:
    """The ``R`` frame of a chunk, its keys counted into ``tally`` on the way (C speed,
    once per chunk: no per-record Python call), or weighed by the merge's weight hook
    (:func:`~sparkbalance.state.frames.tally.key_counts`); ``span`` (a :class:`MapSpan`
    accumulator, optional) gets the task's start (when its worker unpickles this object:
    PySpark reads a task's function as it starts) and each chunk's end: a clock read per
    chunk, not a Python generator step per record."""

    def __init__(self, num_groups: int, tally: Any = None, weight: Any = None,
                 span: Any = None) -> None:
        self.num_groups, self.tally, self.weight, self.span = num_groups, tally, weight, span
        self._t0 = time.time()

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_t0"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._t0 = time.time()

    def __call__(self, items: list, pickled: bytes) -> bytes:
        if self.tally is not None:
            self.tally.add(key_counts(items, self.weight))
        frame = fr.chunk_frame(items, pickled, num_groups=self.num_groups)
        if self.span is not None:
            self.span.add((self._t0, time.time()))
        return frame


def batch_chunks(pairs: Any, fn: Any, num_groups: int, tally: Any = None,
                 weight: Any = None, span: Any = None) -> Any:
    """``pairs`` routed by ``fn`` (inlinable) as keyed ``R`` frames: each chunk of records
    behind the key groups it holds, for :func:`~sparkbalance.spark.rdd.shuffle.shuffle_keyed`.
    ``tally`` (a :class:`KeyTally` accumulator, optional) gets the records per key, each
    weighed by ``weight`` (the fold's hook) when given; ``span`` (a :class:`MapSpan`
    accumulator, optional) the tasks' wall-clock span (stamped per chunk: no extra pass)."""
    wrap = (functools.partial(fr.chunk_frame, num_groups=num_groups) if tally is None
            and span is None else _TalliedChunk(num_groups, tally, weight, span))
    return keyed_by_function(pairs, fn, wrap)


def run_map_stage(routed: Any, ops: Any = None) -> None:
    """Run only the map stage of the routing shuffle read by ``routed`` (the RDD
    :func:`shuffle_chunks` returns), as adaptive execution does: a later job over the
    same shuffle skips it (:meth:`~sparkbalance.state.frames.rdds.FrameOps.run_map_stage`;
    ``ops`` the state's, None: its context's)."""
    if ops is None:
        from sparkbalance.state.frames.rdds import frame_ops
        ops = frame_ops(routed.context)
    ops.run_map_stage(routed)


def shuffle_chunks(keyed: list, num_partitions: int, fn: Any, ops: Any = None) -> Any:
    """The routing shuffle of the map sides ``keyed`` (:func:`batch_chunks`, and
    :func:`carried_chunks` when a migration rides), read as frames: one ``bytes`` per
    chunk, as the map side wrote it (built in one bridge call where ``ops``, the state's
    :class:`~sparkbalance.state.frames.rdds.FrameOps`, can: :meth:`~.rdds.FrameOps.route`)."""
    if ops is not None:
        return ops.route(keyed, num_partitions, id(fn))
    from pyspark.serializers import NoOpSerializer
    return shuffle_keyed(keyed, num_partitions, id(fn), NoOpSerializer())


def carried_chunks(touched: Any, move: fm.Move, read: Any, chunked: bool = False) -> Any:
    """The map side of a riding migration (bridge jar): the items leaving the marked
    state frames ``touched`` (:func:`~.frame_moves.carried_items`), written as a shuffle's
    map side (:func:`~sparkbalance.spark.rdd.shuffle.shuffle_keyed`: ``Carry(new pid)``
    keyed chunks), counting the frames read in ``read``. ``chunked``: each chunk an ``R``
    frame listing the key groups of the entries it carries (the merge reads it as it reads
    the batch's chunks, :func:`~.frame_merge.merge_partition`).

    One Python pass per executor reads every partition's marked frames (a JVM
    ``coalesce``; on ``local[n]`` one task) and writes the shuffle's chunks itself. Before,
    each state partition was a task of two chained Python passes (the items, then
    PySpark's ``partitionBy`` over the union with the batch): n cached-block tasks that the
    scheduler launched before any batch task (those have no locality preference), each
    wanting one more Python worker, started cold (measured on local[8]: a migrating
    batch's route stage 1.0-1.5 s against 0.2-0.5 s without one). A frame's partition is
    known from its group: the partitions that mark the group in ``move.mask`` (key
    groups: one; a routing table: each, whose listed leaving keys only that partition's
    frame can hold, :func:`~.frame_moves.leaving_entries`).
    """
    carry = CarryWriter(move, touched.context._unbatched_serializer,
                        touched._memory_limit() / 2, read, chunked)
    # the driver is listed too; on local[n] it is the one executor
    executors = max(1, len(touched.context._jsc.sc().statusTracker().getExecutorInfos()) - 1)
    out = touched.coalesce(min(executors, touched.getNumPartitions())).mapPartitions(
        carry)
    out._bypass_serializer = True
    return out


class Misplaced:
    """The records of a batch routed by layout ``src`` that a plan ``dst`` places
    elsewhere, once the batch's routing shuffle is written (its map stage run first, for
    the look-ahead's tally, :mod:`sparkbalance.state.control.lookahead`).

    Only the keys whose partition changes are misplaced, so the batch is not routed
    again: :meth:`select` keeps their records (a filter pass, no routing of the rest),
    a second small shuffle sends them by ``dst`` with the migration's carried state, and
    :meth:`drop` takes them out of the batch block the merge gathers from the first
    shuffle's chunks.

    Parameters
    ----------
    src, dst : the layouts (same partition count; both routing tables or both key groups).
    num_groups : G, the frames' key groups.
    candidates : a routing table's delta keys (None: ``src.table.diff(dst.table)``).
    reread : the merge reads the first shuffle again where the moving keys were written
        (:meth:`sources`) instead of routing them a second time (:meth:`select`).

    Examples
    --------
    >>> from sparkbalance.routing.table import RoutingTable
    >>> from sparkbalance.state.control.layout import TableLayout
    >>> a = TableLayout(2, 2, RoutingTable())
    >>> k = next(k for k in range(9) if a.fn.assign([k])[0] == 0)
    >>> m = Misplaced(a, TableLayout(2, 2, RoutingTable({k: 1})), 4)
    >>> m.keys == {k: 1}
    True
    """

    reread: bool = False    #: see the parameter; :meth:`drop` then keeps only dst's keys

    def __init__(self, src: Any, dst: Any, num_groups: int,
                 candidates: frozenset | None = None, reread: bool = False) -> None:
        from sparkbalance.routing.keygroups import key_groups
        from sparkbalance.state.control.layout import GroupLayout
        self.reread = bool(reread)
        self.num_groups = G = int(num_groups)
        P = dst.num_physical
        self.num_physical = P
        self.routed: Any = None              # records routed again (select's accumulator)
        self.keys: dict | None = None        # moved key -> its new partition (tables)
        self.groups: dict = {}                # moved group -> its new partition
        #: new partition -> the partitions its arriving keys were routed to first
        self.arrivals: dict[int, set] = {}
        self._src: Any = None                 # src's fn (tables) or group -> partition
        self._dst: Any = None                 # dst's fn (tables) or group -> partition
        if isinstance(dst, GroupLayout):
            old, new = src.group_to_partition(), dst.group_to_partition()
            self.groups = {int(g): int(new[g]) for g in np.flatnonzero(old != new)}
            for g, q in self.groups.items():
                self.arrivals.setdefault(q, set()).add(int(old[g]))
            self._src, self._dst = (np.asarray(old, dtype=np.int64),
                                    np.asarray(new, dtype=np.int64))
            return
        self._src, self._dst = src.fn, dst.fn
        cand = list(src.table.diff(dst.table).keys if candidates is None else candidates)
        self.keys = {}
        if cand:
            a = np.asarray(src.fn.assign(cand)) % P
            b = np.asarray(dst.fn.assign(cand)) % P
            # one pass: each moving key's new partition, and where its records were written
            for k, p, q in zip(cand, a.tolist(), b.tolist()):
                if p != q:
                    self.keys[k] = int(q)
                    self.arrivals.setdefault(int(q), set()).add(int(p))
        moved = list(self.keys)
        self.groups = dict.fromkeys(key_groups(moved, G).tolist()) if moved else {}

    def records(self, counts: dict) -> int:
        """The misplaced records of a batch of records per key ``counts`` (its tally).

        Examples
        --------
        >>> m = Misplaced.__new__(Misplaced)
        >>> m.keys, m.groups = {"a": 1}, {}
        >>> m.records({"a": 3, "b": 5})
        3
        """
        if self.keys is not None:
            return int(sum(counts.get(k, 0) for k in self.keys))
        if not self.groups or not counts:
            return 0
        from sparkbalance.routing.keygroups import key_groups
        keys = list(counts)
        gs = key_groups(keys, self.num_groups).tolist()
        return int(sum(counts[k] for k, g in zip(keys, gs) if g in self.groups))

    def _kept(self, recs: list, pid: int | None) -> list:
        """``recs`` without the misplaced ones (``pid`` None: only the misplaced ones)."""
        if self.keys is not None:
            keys = self.keys
            if pid is None:
                return [r for r in recs if r[0] in keys]
            return [r for r in recs if keys.get(r[0], pid) == pid]
        from sparkbalance.routing.keygroups import key_groups
        groups = self.groups
        gs = key_groups([r[0] for r in recs], self.num_groups).tolist()
        if pid is None:
            return [r for r, g in zip(recs, gs) if g in groups]
        return [r for r, g in zip(recs, gs) if groups.get(g, pid) == pid]

    def sources(self) -> list[list[int]]:
        """Per partition of ``dst``, the partitions of the first shuffle its merge reads
        when that shuffle is read again (:meth:`~.rdds.FrameOps.reread`): its own, then
        those its arriving keys were routed to (each once).

        Examples
        --------
        >>> m = Misplaced.__new__(Misplaced)
        >>> m.num_physical, m.arrivals = 3, {0: {2}, 1: {2, 0}}
        >>> m.sources()
        [[0, 2], [1, 0, 2], [2]]
        """
        return [[p, *sorted(self.arrivals.get(p, ()))] for p in range(self.num_physical)]

    def read_again(self, counts: dict) -> int:
        """Records the merge decodes twice when the first shuffle is read again: those of
        every partition a moving key leaves, once per partition it reaches (a key's
        partition under ``src`` is where its records were written). ``counts``: the
        batch's tally.

        Examples
        --------
        >>> m = Misplaced.__new__(Misplaced)
        >>> m.arrivals, m.num_physical = {}, 2
        >>> m.read_again({"a": 3})
        0
        """
        if not self.arrivals or not counts:
            return 0
        reads = np.zeros(self.num_physical, dtype=np.int64)
        for qs in self.arrivals.values():
            for q in qs:
                reads[q] += 1
        at = self._written(list(counts))
        return int(sum(c * int(reads[q]) for c, q in zip(counts.values(), at.tolist())))

    def _written(self, keys: list) -> np.ndarray:
        """The first shuffle's partition of each of ``keys`` (``src``'s)."""
        if not keys:
            return np.zeros(0, dtype=np.int64)
        if self.keys is not None:
            return np.asarray(self._src.assign(keys), dtype=np.int64) % self.num_physical
        from sparkbalance.routing.keygroups import key_groups
        return self._src[key_groups(keys, self.num_groups)]

    def _keep_own(self, pid: int, batch: dict) -> None:
        """Keep in ``pid``'s block only the keys ``dst`` places on ``pid`` (the block read
        its own partition and others of the first shuffle whole)."""
        keys = list(batch)
        if not keys:
            return
        if self.keys is not None:
            where = np.asarray(self._dst.assign(keys), dtype=np.int64) % self.num_physical
        else:
            from sparkbalance.routing.keygroups import key_groups
            where = self._dst[key_groups(keys, self.num_groups)]
        for k, q in zip(keys, where.tolist()):
            if q != pid:
                del batch[k]

    def select(self, pairs: Any) -> Any:
        """The misplaced records of the RDD ``pairs`` (lazy; one pass, in slices),
        counted in :attr:`routed` (an accumulator: the records routed a second time)."""
        kept = self._kept
        self.routed = count = pairs.context.accumulator(0)

        def _select(it: Iterable) -> Iterable:
            while True:
                recs = list(itertools.islice(it, 4096))
                if not recs:
                    return
                out = kept(recs, None)
                count.add(len(out))
                yield from out
        return pairs.mapPartitions(_select)

    def drop(self, pid: int, batch: dict) -> None:
        """Take the misplaced keys out of partition ``pid``'s batch block ``{key:
        [values]}``, in place, as the merge has gathered it from the first shuffle's
        chunks (and the second's: a key moving *to* ``pid`` stays). Per key of the
        block, not per record: the merge decodes the chunks anyway. Before, the chunks
        listing a moved key's group were decoded and pickled again ahead of the merge,
        which decoded them once more — every chunk when hot keys move (measured on
        local[8], 29 % of the records misplaced: 0.62 s CPU against 0.42 s for routing
        the whole batch again).

        Examples
        --------
        >>> m = Misplaced.__new__(Misplaced)
        >>> m.keys, m.groups = {"a": 1, "b": 0}, {}
        >>> block = {"a": [1, 2], "b": [3], "c": [4]}
        >>> m.drop(0, block); block        # "a" left partition 0, "b" arrived there
        {'b': [3], 'c': [4]}
        """
        if self.reread and pid in self.arrivals:
            self._keep_own(pid, batch)
            return
        if self.keys is not None:
            for k, q in self.keys.items():
                if q != pid:
                    batch.pop(k, None)
            return
        if not self.groups or not batch:
            return
        from sparkbalance.routing.keygroups import key_groups
        keys = list(batch)
        groups = self.groups
        for k, g in zip(keys, key_groups(keys, self.num_groups).tolist()):
            if groups.get(g, pid) != pid:
                del batch[k]
