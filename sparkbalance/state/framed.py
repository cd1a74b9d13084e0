"""The keyed state as one object: a frame RDD placed by one layout.

:class:`FramedState` is the narrow interface between the operator and the frames: the
operator merges a batch into it, reads statistics, state and outputs from the result
(:class:`Merged`), and hands it to :func:`~sparkbalance.state.migration.migrate_state`
with a new layout; it never sees a frame tag. Only this module,
:mod:`~sparkbalance.state.migration` and :mod:`~sparkbalance.state.frame_rdds` drive frame
operations (tags, masks, ``select``/``concat``).

Why the merge stays narrow: the state has one frame list per partition and each batch is
routed by the same layout and grouped into one batch frame per partition, so
``concat(state, batch)`` then a Python merge is a ``ZippedPartitionsRDD2`` with two
one-to-one dependencies: only the batch is shuffled (PySpark's ``union``/``cogroup``
would re-shuffle the state because the JVM does not see a common partitioner).
"""
from __future__ import annotations

from typing import Any, Iterable

from . import frames as fr
from .blocks import group_block
from .frame_rdds import FrameOps, as_frames, summaries
from .layout import GroupLayout, TableLayout
from .window import StateFold

__all__ = ["FramedState", "Merged"]


class FramedState:
    """The keyed state: frames (``bytes``, :mod:`~sparkbalance.state.frames`) of ``G`` key
    groups per partition, placed by ``layout``.

    Parameters
    ----------
    ops : the frame operations of the SparkContext (:func:`~.frame_rdds.frame_ops`).
    rdd : the frame RDD (``layout.num_physical`` partitions).
    layout : the layout the frames are placed by (routing table or key-group intervals).
    num_groups : G, the key groups the frames are cut by.
    cached : RDDs this state reads from cache and that the owner releases later (e.g. the
        arrivals of a migration).

    Examples
    --------
    >>> s = FramedState.empty(frame_ops(sc), layout, 256)        # doctest: +SKIP
    >>> s.merge(pairs, fold, seq=0).outputs().collect()          # doctest: +SKIP
    [('a', 4), ('b', 2)]
    """

    def __init__(self, ops: FrameOps, rdd: Any, layout: TableLayout | GroupLayout,
                 num_groups: int, cached: tuple = ()) -> None:
        self.ops = ops
        self.rdd = rdd
        self.layout = layout
        self.num_groups = int(num_groups)
        self.cached = tuple(cached)

    @classmethod
    def empty(cls, ops: FrameOps, layout: TableLayout | GroupLayout, num_groups: int
              ) -> "FramedState":
        """A state without keys: ``layout.num_physical`` empty partitions."""
        return cls(ops, ops.empty(layout.num_physical), layout, num_groups)

    @property
    def num_physical(self) -> int:
        return self.layout.num_physical

    # ------------------------------------------------------------------ one batch
    def merge(self, pairs: Any, fold: StateFold, seq: int) -> "Merged":
        """The lazy merge of ``pairs`` (an RDD of ``(key, value)``) into the state: the
        batch is routed by the layout (its one shuffle) and folded into the frames of its
        keys' groups (:func:`~sparkbalance.state.frames.merge_partition`). No job runs."""
        layout, G = self.layout, self.num_groups
        fn, P = layout.fn, layout.num_physical
        batch_frames = as_frames(pairs.partitionBy(P, fn).mapPartitions(
            lambda it: [fr.data_frame(fr.TAG_BATCH, group_block(it)[0])],
            preservesPartitioning=True))
        per_group = isinstance(layout, GroupLayout)
        # Per-key statistics of the batch's keys and the table's: a key with no records in
        # the batch adds no load, and only a table key can move without adding load, so the
        # planner needs no other key (and a big state costs no per-key driver work).
        watch = None if per_group else frozenset(layout.table.routes)
        rdd = self.ops.map_frames(
            self.ops.concat(self.rdd, batch_frames),
            lambda pid, it: fr.merge_partition(pid, it, fold, seq, G, per_group, watch))
        return Merged(self, rdd)

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

    # ------------------------------------------------------------------ durability
    def save(self, uri: str) -> None:
        """Write the frames as ``(pid, frame)`` pairs (``saveAsPickleFile``) to ``uri``."""
        (self.rdd.mapPartitionsWithIndex(lambda pid, it: [(pid, b) for b in it])
         .saveAsPickleFile(uri))

    @classmethod
    def load(cls, ops: FrameOps, uri: str, layout: TableLayout | GroupLayout,
             num_groups: int, storage_level: Any) -> "FramedState":
        """Read frames written by :meth:`save`, each validated against ``layout`` and G
        (:func:`~sparkbalance.state.frames.check_state_frame`), cached. Lazy: the first
        job over the result raises if a frame is corrupt or misplaced."""
        P, G, fn = layout.num_physical, int(num_groups), layout.fn

        def _check(pid: int, it: Iterable) -> Iterable:
            for p, f in it:
                if p != pid:
                    raise ValueError(f"a frame of partition {p} read as partition {pid}")
                fr.check_state_frame(f, pid, G, fn)
                yield f

        rdd = as_frames(ops.sc.pickleFile(uri).partitionBy(P, lambda pid: pid)
                        .mapPartitionsWithIndex(_check, preservesPartitioning=True))
        rdd.persist(storage_level)
        return cls(ops, rdd, layout, G, (rdd,))


class Merged:
    """A batch merged into a :class:`FramedState` (lazy until :meth:`stats` runs a job):
    per partition the new state frames, one outputs frame and one statistics frame."""

    def __init__(self, base: FramedState, rdd: Any) -> None:
        self.base = base
        #: The merged frame RDD; persist it before :meth:`stats` so that :meth:`state` and
        #: :meth:`outputs` read the cache instead of re-running the merge.
        self.rdd = rdd

    def stats(self) -> list[tuple]:
        """Per-partition statistics ``(pid, keys|None, cost, memory, nkeys, total_bytes)``
        of the batch (one job; see :func:`~sparkbalance.state.frames.merge_partition`)."""
        P = self.base.num_physical
        stats = self.base.ops.select(self.rdd, fr.TAG_STATS).map(fr.frame_payload).collect()
        if len(stats) != P:
            raise RuntimeError(f"merge produced statistics of {len(stats)} partitions; "
                               f"expected {P}")
        return stats

    def state(self) -> FramedState:
        """The state after the batch (lazy, narrow over the merged frames)."""
        b = self.base
        return FramedState(b.ops, b.ops.select(self.rdd, fr.TAG_STATE), b.layout,
                           b.num_groups)

    def outputs(self) -> Any:
        """The batch's outputs, an RDD of ``(key, output)`` (lazy)."""
        return self.base.ops.select(self.rdd, fr.TAG_OUTPUTS).flatMap(fr.frame_payload)
