"""Delta migration of the keyed state on its own (Fang et al. §4, Fig. 5 steps 3-7, in
Spark terms): for ``scale()`` and for a decided migration that must move before the next
batch (a read of the state, a checkpoint). Between batches the operator does not call it:
the keys move in the next batch's own shuffle
(:meth:`FramedState.merge <sparkbalance.state.frames.framed_state.FramedState.merge>` with ``to=``).

The state is an RDD of frames, each the entries of one key group on one partition
(:mod:`sparkbalance.state.frames.format`). Given the layout ``F`` the state is placed by and a
new layout ``F'``:

1. *touched* frames — the only ones that can hold a key with ``F'(k) != F(k)`` — are
   selected by (partition, group) in the JVM (:mod:`~sparkbalance.state.frames.rdds`):
   for key groups, the groups whose partition changes; for a routing table with an
   unchanged ``n``, the frames ``(F(k), g(k))`` of the keys of the table delta. Nothing
   else of the state enters a Python worker;
2. key groups: a touched frame moves *as it is* (its bytes, never unpickled) to its new
   partition. Routing table: the driver lists the delta's leaving keys per frame
   (:func:`~sparkbalance.state.frames.moves.leaving_by_frame`), and one Python pass over
   the touched frames looks them up (no partition-function call per stored key) and packs
   Δ into frames per new partition; the entries that stay are filtered out of those
   frames lazily, by the next pass over the state (the next batch's merge);
3. the one shuffle carries exactly Δ; the arrivals are cached (a scaling migration groups
   its arriving entries into frames; a delta's arrive as frames, stored undecoded — with
   the bridge jar they are routed, counted from their headers and cached in the JVM, so
   only the map side runs Python: :meth:`FrameOps.shuffle_frames
   <sparkbalance.state.frames.rdds.FrameOps.shuffle_frames>`);
4. the new state is ``concat(untouched ∪ stays, arrivals)`` per partition — narrow, in
   the JVM, with no second shuffle and no copy of the untouched state.

Growing the physical partition count pads the stays with empty partitions (a narrow
``UnionRDD`` keeps positions). The new layout (table version) is used for routing only
after the arrivals are materialised: the stage boundary is the paper's pause/resume.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sparkbalance.routing.base import partition_func
from sparkbalance.state.frames import moves as fm
from sparkbalance.state.frames import format as fr
from sparkbalance.state.frames.rdds import FrameOps, as_frames, mask_of, summaries
from sparkbalance.state.frames.framed_state import FramedState
from sparkbalance.state.control.layout import GroupLayout, TableLayout
from sparkbalance.state.control.records import MigrationRecord

__all__ = ["MigrationResult", "migrate_state", "migrate", "full_repartition"]


@dataclass(frozen=True)
class MigrationResult:
    rdd: Any                 # new state RDD (frames)
    keys_moved: int
    bytes_moved: float       # Σ S(k) of the moved entries (what the shuffle carried)
    num_keys: int            # -1 when not counted
    state_bytes: float       # nan when not measured
    cached: tuple = field(default=())   # RDDs holding cached data to release later
    frames_touched: int = -1            # state frames a Python worker read (-1: not counted;
    #                                     map-stage count: a re-run task may add twice)


def migrate_state(state: FramedState, new_layout: TableLayout | GroupLayout, *, seq: int,
                  reason: str, planned_bytes: float, candidates: frozenset | None = None,
                  storage_level: Any = None, cut: Any = None
                  ) -> tuple[FramedState, MigrationRecord]:
    """Move ``state`` to ``new_layout``, shuffling only the keys whose partition changes.

    Parameters
    ----------
    state : the state, placed by its own layout.
    new_layout : F', the layout to move to.
    seq : batches applied so far (recorded). reason : "imbalance", "scale" or "forecast"
    (recorded).
    planned_bytes : the planner's migration cost M (recorded beside the bytes moved).
    candidates : for a routing table with an unchanged n, the only keys whose partition can
        change (the table delta); None = any key.
    storage_level : where the arrivals are cached (default ``MEMORY_AND_DISK``).
    cut : ``cut(rdd)`` cuts the lineage of a persisted RDD once computed
        (:meth:`~sparkbalance.state.frames.caching.BatchCache.cut`). Given, the new state is
        materialised into one cached RDD whose lineage is cut (one more job, over the
        frames in the JVM): the view below refers to the old state three times, and a
        chain of such views recomputes each level once per reference.

    Returns
    -------
    The new state (without ``cut``: a lazy narrow view, stays ∪ arrivals, the arrivals
    cached; with ``cut``: the materialised state) — the cached RDDs in its ``cached`` —
    and the :class:`~sparkbalance.state.control.records.MigrationRecord`.

    Examples
    --------
    >>> new, rec = migrate_state(state, decision.layout, seq=3, reason="imbalance",
    ...                          planned_bytes=decision.planned_bytes)   # doctest: +SKIP
    >>> rec.keys_moved                                                   # doctest: +SKIP
    12
    """
    if storage_level is None:
        from pyspark import StorageLevel
        storage_level = StorageLevel.MEMORY_AND_DISK
    t0 = time.perf_counter()
    old = state.layout
    res = migrate(state.ops, state.rdd, old, new_layout, state.num_groups, storage_level,
                  candidates=candidates)
    rdd, cached = res.rdd, res.cached
    if cut is not None:
        rdd.persist(storage_level)
        cut(rdd)
        rdd._jrdd.count()          # materialise (JVM only: frames are not decoded)
        for r in cached:
            r.unpersist()
        cached = (rdd,)
    new = FramedState(state.ops, rdd, new_layout, state.num_groups, cached)
    rec = MigrationRecord(seq, reason, old.num_partitions, new_layout.num_partitions,
                          res.keys_moved, res.bytes_moved, planned_bytes,
                          time.perf_counter() - t0, new_layout.version, res.frames_touched)
    return new, rec


def _counting(ops: FrameOps, pairs_or_frames: Any, to_frames: Any, storage_level: Any
              ) -> tuple[Any, int, float]:
    """``to_frames`` applied per partition, cached and materialised in one job; returns
    (rdd, keys, Σ S) counted from the frame headers as they are made (in the job's result
    stage, where Spark applies each task's accumulator updates exactly once)."""
    sc = ops.sc
    nk_acc, nb_acc = sc.accumulator(0), sc.accumulator(0.0)

    def _frames(it: Any) -> Any:
        for f in to_frames(it):
            h = fr.header(f)
            nk_acc.add(h.nkeys)
            nb_acc.add(h.nbytes)
            yield f

    out = as_frames(pairs_or_frames.mapPartitions(_frames, preservesPartitioning=True))
    out.persist(storage_level)
    out._jrdd.count()          # materialise in the JVM (no extra Python pass)
    return out, int(nk_acc.value), float(nb_acc.value)


def _arrive(ops: FrameOps, moving: Any, num_partitions: int, storage_level: Any
            ) -> tuple[Any, int, float]:
    """The frames of ``moving`` (``(new pid, frame)`` pairs) shuffled to their partitions
    as bytes (:meth:`~sparkbalance.state.frames.rdds.FrameOps.shuffle_frames`: with the
    bridge, routed and counted in the JVM, so the job's second stage starts no Python
    worker), cached and materialised in one job; returns (rdd, keys, Σ S)."""
    out, counts = ops.shuffle_frames(moving, num_partitions)
    out.persist(storage_level)
    out._jrdd.count()
    keys, nbytes = counts()
    return out, keys, nbytes


def _check_counts(arrived: Any, keys_in: int, left: int, recount: Any) -> None:
    """Refuse a migration whose keys out (``left``) and keys in differ: a key lost or
    duplicated. ``left`` comes from a map-stage accumulator, which may double count a
    re-run task, so a mismatch is first recounted exactly (``recount()``, one job)."""
    if keys_in != left:
        left = recount()
    if keys_in != left:
        arrived.unpersist()
        raise RuntimeError(f"migration moved {left} keys out but {keys_in} arrived; "
                           "refusing the new layout (state kept as before)")


def migrate(ops: FrameOps, state: Any, old: Any, new: Any, num_groups: int,
            storage_level: Any, candidates: frozenset | None = None) -> MigrationResult:
    """Move only the entries whose partition under ``new.fn`` differs from ``old.fn``.

    ``state``: frames placed by ``old`` (``old.num_physical`` partitions); ``num_groups``:
    G, the frame groups. ``candidates``: for a routing table with an unchanged ``n``, the
    only keys whose partition can change (the table delta); None = any key (a new ``n``).
    One Spark job: the touched frames are read, Δ shuffled, the arrivals cached.
    Raises ``RuntimeError`` when the keys that left and the keys that arrived differ in
    number (a key lost or duplicated) — never silently; the old state is then untouched.
    """
    P = new.num_physical
    G = num_groups
    if isinstance(new, GroupLayout) and isinstance(old, GroupLayout):
        return _migrate_groups(ops, state, old, new, G, storage_level)
    if candidates is not None:
        return _migrate_delta(ops, state, old, new, G, storage_level, candidates)
    fn = new.fn
    sc = ops.sc
    out_keys, read = sc.accumulator(0), sc.accumulator(0)

    def _moved(pid: int, it: Any) -> Any:
        for k, e in fm.moved_entries(pid, _counted(it, read), fn):
            out_keys.add(1)
            yield k, e

    touched = ops.select(state, fr.TAG_STATE)
    # one Python pass over the touched frames feeds the shuffle of Δ directly
    arrived, keys_in, bytes_in = _counting(
        ops, touched.mapPartitionsWithIndex(_moved).partitionBy(P, partition_func(fn)),
        lambda it: fr.frames_of_entries(it, G), storage_level)
    _check_counts(arrived, keys_in, out_keys.value, lambda: touched.mapPartitionsWithIndex(
        lambda pid, it: [sum(1 for _ in fm.moved_entries(pid, it, fn))]).sum())
    # The stays are dropped from the touched frames lazily, by the next pass over the
    # state (the next batch's merge reads those frames anyway).
    stays = ops.map_frames(touched, lambda pid, it: fm.stay_frames(pid, it, fn))
    view = ops.concat(ops.pad(stays, P), arrived)
    return MigrationResult(view, keys_in, bytes_in, -1, float("nan"), (arrived,),
                           int(read.value))


def _counted(frames: Any, read: Any) -> Any:
    for f in frames:
        read.add(1)
        yield f


def _migrate_delta(ops: FrameOps, state: Any, old: TableLayout, new: TableLayout, G: int,
                   storage_level: Any, candidates: frozenset) -> MigrationResult:
    """A routing-table delta (unchanged ``n``): the driver lists the leaving keys per frame
    (:func:`~sparkbalance.state.frames.moves.leaving_by_frame`: |delta| partition-function
    calls, vectorised), so a worker only looks those keys up in the frames that hold one —
    no call of the partition function per stored key. The map side packs the leaving
    entries into frames per new partition
    (:func:`~sparkbalance.state.frames.moves.leaving_frames`), so the reduce side stores
    the frames it receives without decoding or regrouping them."""
    P = new.num_physical
    leaving = fm.leaving_by_frame(candidates, old.fn, new.fn, G)
    mask = mask_of(leaving, old.num_physical, G)
    sc = ops.sc
    out_keys, read = sc.accumulator(0), sc.accumulator(0)

    def _moved(pid: int, it: Any) -> Any:
        for to, f in fm.leaving_frames(pid, _counted(it, read), leaving):
            out_keys.add(fr.header(f).nkeys)
            yield to, f

    touched = ops.select(state, fr.TAG_STATE, mask, G, True)
    arrived, keys_in, bytes_in = _arrive(ops, touched.mapPartitionsWithIndex(_moved), P,
                                         storage_level)
    _check_counts(arrived, keys_in, out_keys.value, lambda: touched.mapPartitionsWithIndex(
        lambda pid, it: [sum(1 for _ in fm.leaving_entries(pid, it, leaving))]).sum())
    # The leaving entries are dropped from the touched frames lazily, by the next pass
    # over the state (the next batch's merge reads those frames anyway).
    stays = ops.concat(ops.select(state, fr.TAG_STATE, mask, G, False),
                       ops.map_frames(touched, lambda pid, it: fm.kept_frames(pid, it, leaving)))
    view = ops.concat(ops.pad(stays, P), arrived)
    return MigrationResult(view, keys_in, bytes_in, -1, float("nan"), (arrived,),
                           int(read.value))


def _migrate_groups(ops: FrameOps, state: Any, old: GroupLayout, new: GroupLayout, G: int,
                    storage_level: Any) -> MigrationResult:
    if old.num_groups != G or new.num_groups != G:
        raise ValueError(f"key-group layouts of {old.num_groups} and {new.num_groups} groups "
                         f"over frames of {G} groups; expected equal counts")
    g2p_old, g2p_new = old.group_to_partition(), new.group_to_partition()
    moving = np.flatnonzero(g2p_old != g2p_new)
    mask = mask_of(((int(g2p_old[g]), int(g)) for g in moving), old.num_physical, G)
    P = new.num_physical
    sc = ops.sc
    out_keys, read = sc.accumulator(0), sc.accumulator(0)

    def _route(it: Any) -> Any:
        for p, f in fm.reroute_groups(it, g2p_new):
            out_keys.add(fr.header(f).nkeys)
            read.add(1)
            yield p, f

    touched = ops.select(state, fr.TAG_STATE, mask, G, True)
    arrived, keys_in, bytes_in = _arrive(ops, touched.mapPartitions(_route), P,
                                         storage_level)
    _check_counts(arrived, keys_in, out_keys.value,
                  lambda: sum(r[1] for r in summaries(touched)))
    stays = ops.select(state, fr.TAG_STATE, mask, G, False)
    view = ops.concat(ops.pad(stays, P), arrived)
    return MigrationResult(view, keys_in, bytes_in, -1, float("nan"), (arrived,),
                           int(read.value))


def full_repartition(ops: FrameOps, state: Any, new: Any, num_groups: int,
                     storage_level: Any) -> MigrationResult:
    """Baseline: shuffle *every* entry by ``new.fn`` (what ``repartition`` of the state
    does), grouped into frames and cached — one job, like :func:`migrate`."""
    G = num_groups
    pairs = ops.select(state, fr.TAG_STATE).mapPartitions(fr.entries_of)
    out, nk, nb = _counting(ops, pairs.partitionBy(new.num_physical, partition_func(new.fn)),
                            lambda it: fr.frames_of_entries(it, G), storage_level)
    return MigrationResult(out, nk, nb, nk, nb, (out,))
