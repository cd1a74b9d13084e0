"""The keyed state as one object: a frame RDD placed by one layout.

:class:`FramedState` is the narrow interface between the operator and the frames: the
operator merges a batch into it, reads statistics, state and outputs from the result
(:class:`Merged`), and hands it to :func:`~sparkbalance.state.frames.migration.migrate_state`
with a new layout; it never sees a frame tag. Only this module,
:mod:`~sparkbalance.state.frames.migration` and :mod:`~sparkbalance.state.frames.rdds` drive frame
operations (tags, masks, ``select``/``concat``).

Why the merge stays narrow: the state has one frame list per partition and each batch is
routed by the same layout into the same partitions, so ``concat(state, batch)`` then a
Python merge is a ``ZippedPartitionsRDD2`` with two one-to-one dependencies: only the
batch is shuffled (PySpark's ``union``/``cogroup`` would re-shuffle the state because the
JVM does not see a common partitioner). With the bridge jar the batch side is the routing
shuffle's chunks as they were written (``R`` frames, listing their key groups; a riding
migration's carried state too), so the merge task runs one Python pass; without it a Python
pass first groups each partition's records into one ``B`` frame.
Long because: :meth:`FramedState.merge` builds every lineage a batch can take (its own
layout, a riding migration routed with it, a look-ahead's written shuffle read again or
routed again) in one place, so that the operator sees one interface.
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from sparkbalance.routing.base import partition_func
from sparkbalance.routing.keygroups import key_groups
from sparkbalance.spark.rdd.shuffle import inlinable, keyed_by_function, shuffle_keyed
from sparkbalance.state.frames import moves as fm
from sparkbalance.state.frames import format as fr
from sparkbalance.state.frames.blocks import group_block
from sparkbalance.state.frames.merge import merge_partition
from sparkbalance.state.frames.rdds import FrameOps, as_frames, mask_of, summaries
from sparkbalance.state.control.layout import GroupLayout, TableLayout
from sparkbalance.state.frames.route_chunks import (MapSpan, Misplaced, batch_chunks,
                                                   carried_chunks, shuffle_chunks)
from sparkbalance.state.frames.riding import riding_chunks
from sparkbalance.state.frames.window import StateFold

__all__ = ["FramedState", "Merged", "move_of", "stats_of_frames"]


class FramedState:
    """The keyed state: frames (``bytes``, :mod:`~sparkbalance.state.frames.format`) of ``G`` key
    groups per partition, placed by ``layout``.

    Parameters
    ----------
    ops : the frame operations of the SparkContext (:func:`~.frame_rdds.frame_ops`).
    rdd : the frame RDD (``layout.num_physical`` partitions).
    layout : the layout the frames are placed by (routing table or key-group intervals).
    num_groups : G, the key groups the frames are cut by.
    cached : RDDs this state reads from cache and that the owner releases later (e.g. the
        arrivals of a migration).
    anchor : the persisted RDD whose ``S`` frames are exactly this state's, when ``rdd`` is
        a narrow view of it (a merged batch); None when ``rdd`` itself is the persisted
        one or nothing is. A checkpoint rebases the state on its files through it
        (:func:`~sparkbalance.state.durability.checkpoint.rebased`).

    Examples
    --------
    >>> s = FramedState.empty(frame_ops(sc), layout, 256)        # doctest: +SKIP
    >>> s.merge(pairs, fold, seq=0).outputs().collect()          # doctest: +SKIP
    [('a', 4), ('b', 2)]
    """

    def __init__(self, ops: FrameOps, rdd: Any, layout: TableLayout | GroupLayout,
                 num_groups: int, cached: tuple = (), anchor: Any = None) -> None:
        self.ops = ops
        self.rdd = rdd
        self.layout = layout
        self.num_groups = int(num_groups)
        self.cached = tuple(cached)
        self.anchor = anchor

    @classmethod
    def empty(cls, ops: FrameOps, layout: TableLayout | GroupLayout, num_groups: int
              ) -> "FramedState":
        """A state without keys: ``layout.num_physical`` empty partitions."""
        return cls(ops, ops.empty(layout.num_physical), layout, num_groups)

    @property
    def num_physical(self) -> int:
        return self.layout.num_physical

    # ------------------------------------------------------------------ one batch
    def merge(self, pairs: Any, fold: StateFold, seq: int,
              to: TableLayout | GroupLayout | None = None,
              candidates: frozenset | None = None, carried_level: Any = None,
              tally: Any = None, routed: Any = None) -> "Merged":
        """The lazy merge of ``pairs`` (an RDD of ``(key, value)``) into the state: the
        batch is routed by the layout (its one shuffle) and folded into the frames of its
        keys' groups (:func:`~sparkbalance.state.frames.merge.merge_partition`). No job runs.

        ``to``: a new layout ``F'`` with the same partition count; the batch is routed by
        ``F'`` and the state that must move rides in the same shuffle (the migration costs
        no job of its own): the frames that can hold a leaving key (for a routing table,
        those of the keys in ``candidates``, the table delta; for key groups, those of the
        groups that change partition) are read on the map side, their leaving entries (or
        whole frames) shuffled with the batch, and dropped from the frames on the reduce
        side by the same merge. With the bridge's ``StateRide`` the batch's own map tasks
        read those frames and write what leaves them
        (:func:`~sparkbalance.state.frames.riding.riding_chunks`: no map task more). What
        the migration reads (those frames, else the carried items) is cached
        (``carried_level``) and its lineage cut once the merge has run, so the state never
        refers to the batch before this one more than once.

        ``tally`` (a :class:`~sparkbalance.state.frames.route_chunks.KeyTally` accumulator;
        no ``to``): the routing shuffle's map side counts the batch's records per key into
        it, and :attr:`Merged.routed` is the shuffle's RDD (None when the bridge's chunks
        do not route the batch), whose map stage can run first
        (:func:`~sparkbalance.state.frames.route_chunks.run_map_stage`).

        ``routed`` (with ``to``): the batch's routing shuffle by this state's layout,
        its map stage already run (:attr:`Merged.routed` of the merge planned on): the
        batch is not routed again. Each partition reads that shuffle again — its own
        reduce partition and those its arriving keys were written to
        (:meth:`~sparkbalance.state.frames.rdds.FrameOps.reread`) — and keeps only the
        keys ``to`` places on it; only the carried state is shuffled. A jar without
        ``StateReread``: the records ``to`` places elsewhere are routed again, in a
        second small shuffle with the carried state, and the merge drops them from the
        first one's chunks (:class:`~sparkbalance.state.frames.route_chunks.Misplaced`).
        """
        G = self.num_groups
        src = self.layout
        layout = src if to is None or to == src else to
        fn, P = layout.fn, layout.num_physical
        per_group = isinstance(layout, GroupLayout)
        # Per-key statistics of the batch's keys and the table's: a key with no records in
        # the batch adds no load, and only a table key can move without adding load, so the
        # planner needs no other key (and a big state costs no per-key driver work).
        watch = None if per_group else frozenset(layout.table.routes)
        state = self.rdd
        chunked, reused, misplaced, span = False, routed, None, None
        routed = None
        if layout is src:
            if self.ops.chunks and inlinable(fn):
                # The routing shuffle's chunks are the merge's input as they are (R frames
                # listing their key groups): no Python pass groups the batch first, which
                # on local[8] was a second Python worker per merge task (~0.1 s a batch).
                if tally is not None:
                    span = self.ops.sc.accumulator(MapSpan().zero(()), MapSpan())
                batch_frames = routed = shuffle_chunks(
                    [batch_chunks(pairs, fn, G, tally, fold.weight, span)], P, fn, self.ops)
                chunked = True
            else:
                batch_frames = as_frames(pairs.partitionBy(P, partition_func(fn)).mapPartitions(
                    lambda it: fr.batch_frames(group_block(it)[0], None, G),
                    preservesPartitioning=True))
            move, carried, read = None, None, None
        else:
            move = move_of(src, layout, G, candidates)
            if P > src.num_physical:
                state = self.ops.pad(state, P)
            read = self.ops.sc.accumulator(0)
            touched = self.ops.select(self.rdd, fr.TAG_STATE, move.mask, G, True)
            keyed = self.ops.jvm and inlinable(fn) and (move.leaving is not None
                                                        or move.g2p is not None)
            chunked = keyed and self.ops.chunks
            riding = None
            if chunked and reused is None:
                # the batch's own map tasks read the frames and write what leaves them
                # (no map task of its own); the frames are what is kept and cut
                riding = riding_chunks(batch_chunks(pairs, fn, G), touched, move, read,
                                       self.ops)
            if riding is not None:
                carried = touched
            elif keyed:
                carried = carried_chunks(touched, move, read, chunked)
            else:
                def _carry(pid: int, it: Iterable[bytes]) -> Iterable:
                    def counted() -> Iterable[bytes]:
                        for f in it:
                            read.add(1)
                            yield f
                    return fm.carried_items(pid, counted(), move)

                carried = touched.mapPartitionsWithIndex(_carry)
            if carried_level is not None:
                carried.persist(carried_level)
            if chunked and reused is not None and self.ops.rereads:
                # the batch's shuffle by the old layout is written: each partition reads
                # it again where its new keys were written, and keeps only its own keys
                # (Misplaced.drop); only the moving state is shuffled
                misplaced = Misplaced(src, layout, G, candidates, reread=True)
                batch_frames = self.ops.concat(self.ops.reread(reused, misplaced.sources()),
                                               shuffle_chunks([carried], P, fn, self.ops))
            elif chunked and reused is not None and reused.getNumPartitions() == P:
                # a jar without StateReread: route only what moves
                misplaced = Misplaced(src, layout, G, candidates)
                batch_frames = self.ops.concat(reused, shuffle_chunks(
                    [batch_chunks(misplaced.select(pairs), fn, G), carried], P, fn, self.ops))
            elif riding is not None:   # one map side: the batch's tasks carry the state
                batch_frames = shuffle_chunks([riding], P, fn, self.ops)
            elif chunked:   # batch and carried chunks as R frames: one Python pass to merge
                batch_frames = shuffle_chunks([batch_chunks(pairs, fn, G), carried], P, fn, self.ops)
            else:
                routed = (shuffle_keyed([keyed_by_function(pairs, fn), carried], P, id(fn))
                          if keyed else pairs.union(carried).partitionBy(
                              P, partition_func(fm.RidePartitioner(fn))))
                batch_frames = as_frames(routed.mapPartitions(lambda it: fm.ride_block(it, G),
                                                              preservesPartitioning=True))
        # Python reads only the frames of the groups the batch touches, the planner
        # watches (table keys: their sizes are listed), a migration touches, or whose
        # window expires; the JVM passes every other frame on unread.
        mask = None
        watched: list | None = None      # per partition, the groups of its table keys
        if watch is not None:
            watched = [set() for _ in range(P)]
        if watch or move is not None:
            m = np.zeros(P * G, dtype=np.uint8)
            if watch:
                # a table key lives in one frame: (F(k), g(k)) under the layout merged to
                # (a key the riding move takes away is in move.mask on its old partition,
                # and arrives on F(k) with the batch). Marking its group on every
                # partition sent ~n times as many frames through Python; the merge task
                # gets its own groups too, so no task hashes the table's keys again.
                wl = list(watch)
                pids, gs = _partitions_of(fn, wl, P), key_groups(wl, G)
                m.reshape(P, G)[pids, gs] = 1
                for p, g in zip(pids.tolist(), gs.tolist()):
                    watched[p].add(g)
            if move is not None:
                mv = np.frombuffer(move.mask, dtype=np.uint8)
                m[:mv.size] |= mv
            mask = m.tobytes()
        expire = None if fold.window is None else seq - fold.window
        rdd = self.ops.merge_around(
            state, batch_frames, mask, G, expire,
            lambda pid, it: merge_partition(
                pid, it, fold, seq, G, per_group, watch, move, chunked,
                None if misplaced is None else misplaced.drop,
                None if watched is None else watched[pid]))
        return Merged(self, rdd, layout, carried, read, routed, misplaced, span)

    # ------------------------------------------------------------------ reading
    def stats(self) -> list[tuple]:
        """Zero-cost statistics of the state (sizes only; one job), in the shape of
        :meth:`Merged.stats` — for planning without a batch (``scale``)."""
        G, per_group = self.num_groups, isinstance(self.layout, GroupLayout)
        return self.rdd.mapPartitionsWithIndex(
            lambda pid, it: [fr.frames_stats(pid, it, G, per_group)]).collect()

    def summaries(self) -> list[tuple[int, int, float]]:
        """``(pid, keys, Σ S(k))`` per partition, from the frame headers (one job)."""
        return summaries(self.rdd)

    def pairs(self) -> Any:
        """``(key, state)`` pairs (lazy)."""
        return self.rdd.mapPartitions(lambda it: ((k, e[0]) for k, e in fr.entries_of(it)))

    def blocks(self) -> Any:
        """One ``{key: entry}`` block per physical partition (lazy; decodes every frame)."""
        return self.rdd.mapPartitions(lambda it: [fr.frames_to_block(it)])

    def collect(self) -> dict:
        """``{key: state}`` on the driver. A key stored twice is a ``RuntimeError`` (a
        broken layout), never silently merged."""
        out: dict = {}
        for k, e in self.rdd.mapPartitions(fr.entries_of).collect():
            if k in out:
                raise RuntimeError(f"key {k!r} is stored twice in the state; the state layout "
                                   "is inconsistent")
            out[k] = e[0]
        return out


def _partitions_of(fn: Any, keys: list, num_physical: int) -> np.ndarray:
    """``fn(k) % num_physical`` of every key (vectorised when ``fn`` has ``assign``), as
    ``partitionBy`` places them."""
    assign = getattr(fn, "assign", None)
    if assign is not None:
        pids = np.asarray(assign(keys), dtype=np.int64)
    else:
        pids = np.fromiter((int(fn(k)) for k in keys), dtype=np.int64, count=len(keys))
    return pids % num_physical


def move_of(src: TableLayout | GroupLayout, dst: TableLayout | GroupLayout, num_groups: int,
            candidates: frozenset | None = None) -> fm.Move:
    """The :class:`~sparkbalance.state.frames.moves.Move` from layout ``src`` to ``dst``
    (same partition count): the frames that can hold a key whose partition changes and,
    for a routing table, which keys of them leave (the table delta's keys whose partition
    changes, :func:`~sparkbalance.state.frames.moves.leaving_by_frame`).

    Examples
    --------
    >>> a = GroupLayout.initial(2, 4)                       # groups on [0, 0, 1, 1]
    >>> b = GroupLayout(2, 2, 4, np.array([0, 1, 4]), np.array([0, 1]), 1)   # [0, 1, 1, 1]
    >>> list(move_of(a, b, 4).mask)                         # group 1 leaves partition 0
    [0, 1, 0, 0, 0, 0, 0, 0]
    """
    G = int(num_groups)
    if src.num_partitions != dst.num_partitions:
        raise ValueError(f"a migration riding in a batch keeps n; got {src.num_partitions} "
                         f"-> {dst.num_partitions} partitions (use migrate_state to scale)")
    if isinstance(src, GroupLayout) and isinstance(dst, GroupLayout):
        if src.num_groups != G or dst.num_groups != G:
            raise ValueError(f"key-group layouts of {src.num_groups} and {dst.num_groups} "
                             f"groups over frames of {G} groups; expected equal counts")
        g2p_old, g2p_new = src.group_to_partition(), dst.group_to_partition()
        moving = np.flatnonzero(g2p_old != g2p_new)
        return fm.Move(mask_of(((int(g2p_old[g]), int(g)) for g in moving),
                               src.num_physical, G), G, None, g2p_new)
    if isinstance(src, GroupLayout) or isinstance(dst, GroupLayout):
        raise ValueError(f"a {src.kind} layout cannot move to a {dst.kind} layout")
    if candidates is None:
        candidates = frozenset(src.table.diff(dst.table).keys)
    leaving = fm.leaving_by_frame(candidates, src.fn, dst.fn, G)
    return fm.Move(mask_of(leaving, src.num_physical, G), G, dst.fn, None, leaving)


class Merged:
    """A batch merged into a :class:`FramedState` (lazy until :meth:`stats` runs a job):
    per partition the new state frames, one outputs frame and one statistics frame."""

    def __init__(self, base: FramedState, rdd: Any,
                 layout: TableLayout | GroupLayout | None = None, carried: Any = None,
                 frames_read: Any = None, routed: Any = None, misplaced: Any = None,
                 span: Any = None) -> None:
        self.base = base
        #: The records a riding plan placed elsewhere, routed again on their own
        #: (:class:`~sparkbalance.state.frames.route_chunks.Misplaced`; None: the whole
        #: batch was routed by the new layout, or nothing moves).
        self.misplaced = misplaced
        #: The routing shuffle's RDD when its map side tallies the batch's keys (else None).
        self.routed = routed
        #: Its map tasks' wall-clock span (a :class:`~.route_chunks.MapSpan` accumulator;
        #: None without ``routed``).
        self.span = span
        #: The merged frame RDD; persist it before :meth:`stats` so that :meth:`state` and
        #: :meth:`outputs` read the cache instead of re-running the merge.
        self.rdd = rdd
        #: The layout the batch was routed with and the new state is placed by.
        self.layout = base.layout if layout is None else layout
        #: What a riding migration reads of the state, kept and cut after the merge: the
        #: marked frames the batch's map tasks read (``StateRide``), else the migrating
        #: items of a map side of their own (None without a migration).
        self.carried = carried
        self._read = frames_read

    @property
    def moves(self) -> bool:
        """A migration rides in this batch's shuffle."""
        return self.carried is not None

    @property
    def frames_read(self) -> int:
        """State frames the map side of a riding migration read (-1 without one; a map
        stage count, so a re-run task may add twice)."""
        return -1 if self._read is None else int(self._read.value)

    @staticmethod
    def moved(stats: list[tuple]) -> tuple[int, int, float]:
        """``(keys out, keys in, Σ S(k) in)`` of a riding migration, summed over the
        statistics of :meth:`stats` (exact: one result-stage task per partition)."""
        out = sum(int(st[6]) for st in stats if len(st) > 8)
        got = sum(int(st[7]) for st in stats if len(st) > 8)
        nb = sum(float(st[8]) for st in stats if len(st) > 8)
        return out, got, nb

    def stats(self) -> list[tuple]:
        """Per-partition statistics ``(pid, keys|None, cost, memory, nkeys, total_bytes)``
        of the batch (one job; see :func:`~sparkbalance.state.frames.merge.merge_partition`).

        With the bridge jar no Python task runs: the JVM selects each partition's ``T``
        frame and its ``U`` frames and the raw bytes are decoded here (not a Python task
        per partition and batch for a few hundred bytes each)."""
        G, ops = self.base.num_groups, self.base.ops
        if ops.jvm:
            return self._checked(stats_of_frames(self._collect(fr.TAG_STATS, fr.TAG_BYPASS), G))
        return self._checked(ops.select(self.rdd, fr.TAG_STATS).mapPartitionsWithIndex(
            lambda pid, it: [_stats_of_partition(pid, it, G)]).collect())

    def stats_and_outputs(self) -> tuple[list[tuple], list, list[bytes]]:
        """:meth:`stats`, the ``(key, output)`` list and the ``O`` frames (one per partition,
        in order: what a checkpoint keeps of the outputs) in one job (bridge jar only)."""
        raw = self._collect(fr.TAG_STATS, fr.TAG_BYPASS, fr.TAG_OUTPUTS)
        stats = stats_of_frames([f for f in raw if f[0] != fr.TAG_OUTPUTS], self.base.num_groups)
        frames = [f for f in raw if f[0] == fr.TAG_OUTPUTS]
        return self._checked(stats), [o for f in frames for o in fr.frame_payload(f)], frames

    def _collect(self, *tags: int) -> list[bytes]:
        """The merged frames of ``tags``, selected and concatenated in the JVM, collected."""
        ops = self.base.ops
        rdd = ops.select(self.rdd, tags[0])
        for tag in tags[1:]:
            rdd = ops.concat(rdd, ops.select(self.rdd, tag))
        return rdd.collect()

    def _checked(self, stats: list[tuple]) -> list[tuple]:
        if len(stats) != self.layout.num_physical:
            raise RuntimeError(f"merge produced statistics of {len(stats)} partitions; "
                               f"expected {self.layout.num_physical}")
        return stats

    def state(self) -> FramedState:
        """The state after the batch (lazy, narrow over the merged frames)."""
        b = self.base
        return FramedState(b.ops, b.ops.select(self.rdd, fr.TAG_STATE), self.layout,
                           b.num_groups, anchor=self.rdd)

    def outputs(self) -> Any:
        """The batch's outputs, an RDD of ``(key, output)`` (lazy)."""
        return self.base.ops.select(self.rdd, fr.TAG_OUTPUTS).flatMap(fr.frame_payload)


def _stats_of_partition(pid: int, frames: Iterable[bytes], num_groups: int) -> tuple:
    """The statistics of one partition from its ``T`` frame and ``U`` frames."""
    stats, bypass = None, []
    for f in frames:
        if f[0] == fr.TAG_STATS:
            stats = fr.frame_payload(f)
        else:
            bypass.append(f)
    if stats is None:
        raise RuntimeError(f"merge produced no statistics for partition {pid}")
    return fr.with_bypass(stats, bypass, num_groups)


def stats_of_frames(frames: list[bytes], num_groups: int) -> list[tuple]:
    """Per-partition statistics from the collected frames of ``concat(T frames, U
    frames)``: partition ``i`` is its one ``T`` frame followed by its ``U`` frames, so each
    ``T`` frame opens the next partition's run.

    Examples
    --------
    >>> t = fr.data_frame(fr.TAG_STATS, (0, None, [1.0], [2.0], 1, 2.0))
    >>> stats_of_frames([t], 1)[0][4:]
    (1, 2.0)
    """
    runs: list[list[bytes]] = []
    for f in frames:
        if f[0] == fr.TAG_STATS:
            runs.append([f])
        elif not runs:
            raise RuntimeError("a U frame before any statistics frame; expected each "
                               "partition's T frame first")
        else:
            runs[-1].append(f)
    return [_stats_of_partition(i, run, num_groups) for i, run in enumerate(runs)]
