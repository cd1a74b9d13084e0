"""Spark side of the state frames: RDDs of raw ``bytes`` frames, selected and concatenated
without passing untouched frames through Python.

Every frame RDD uses PySpark's ``NoOpSerializer``: one Python ``bytes`` object is exactly
one JVM ``byte[]`` element, so the JVM can read a frame's tag and group
(:mod:`sparkbalance.state.frames.format`). Two narrow operations:

- :func:`select` keeps the frames of a tag whose (partition, group) is in a mask;
- :func:`concat` puts partition ``i`` of one RDD after partition ``i`` of another
  (a ``ZippedPartitionsRDD2``).

and one shuffle, :meth:`FrameOps.shuffle_frames`, that sends frames to new partitions
as bytes and counts them from their headers, with no Python worker after the map side.

They run in the JVM (``io.sparkbalance.bridge.StateFrames`` from ``jvm_bridge/``) when the
bridge jar is on the classpath (``spark.jars``; ``make`` builds it), else in Python with
the same results — correct but every frame then crosses into a Python worker. The choice
is made once per SparkContext and logged.
"""
from __future__ import annotations

import logging
import struct
from typing import Any, Callable, Iterable

import numpy as np

from sparkbalance.spark.session.bridge import STATE_FRAMES_CLASS
from sparkbalance.spark.session.jvm_loader import bridge_has
from sparkbalance.state.frames import format as fr
from sparkbalance.state.frames.passes import PYTHON_PASSES_CLASS, Passes

#: The bridge class that builds and runs the keyed state's routing shuffle.
STATE_SHUFFLE_CLASS: str = "io.sparkbalance.bridge.StateShuffle"
#: The bridge class that reads a written routing shuffle again under a new plan.
STATE_REREAD_CLASS: str = "io.sparkbalance.bridge.StateReread"
#: The bridge class that puts a riding migration's frames before a batch's partitions.
STATE_RIDE_CLASS: str = "io.sparkbalance.bridge.StateRide"
#: The bridge class that writes a frames RDD's state frames to a checkpoint in the JVM.
STATE_WRITE_CLASS: str = "io.sparkbalance.bridge.StateWrite"

__all__ = ["STATE_SHUFFLE_CLASS", "STATE_REREAD_CLASS", "STATE_RIDE_CLASS", "STATE_WRITE_CLASS",
           "FrameOps", "frame_ops", "as_frames", "mask_of", "summaries", "built_rdd"]

_LOG = logging.getLogger(__name__)


def _routed(pair: tuple[int, bytes]) -> tuple[bytes, bytes]:
    """A moving frame as ``StateFrames.moveFrames`` reads it: its destination (big-endian
    int32) then the frame."""
    return struct.pack(">i", pair[0]), pair[1]


class _NoId:
    """Stands for a Java RDD in ``RDD.__init__``, which asks it for its id (a round trip)."""

    @staticmethod
    def id() -> None:
        return None


_BUILT: list = []


def _built_class() -> type:
    if not _BUILT:
        from pyspark import RDD

        class BuiltRDD(RDD):
            """An RDD over a Java RDD the keyed state built (never in a barrier stage):
            its id is read when asked, and a Python pass over it does not ask the JVM
            whether it is a barrier RDD."""

            def __init__(self, jrdd: Any, ctx: Any, deserializer: Any) -> None:
                super().__init__(_NoId, ctx, deserializer)
                self._jrdd = jrdd

            def id(self) -> int:
                if self._id is None:
                    self._id = self._jrdd.id()
                return self._id

            def _is_barrier(self) -> bool:
                return False

        _BUILT.append(BuiltRDD)
    return _BUILT[0]


def built_rdd(jrdd: Any, sc: Any, deserializer: Any = None) -> Any:
    """A PySpark RDD over ``jrdd`` (frames by default: ``NoOpSerializer``), a Java RDD
    the keyed state built and that is no barrier RDD (frames selected, concatenated,
    shuffled; a micro-batch as Arrow batches; state files read back).

    ``RDD(jrdd, sc, ...)`` reads the RDD's id (one py4j round trip) and each Python pass
    over it asks the JVM whether it is a barrier RDD (two more, and a reference to
    release): about three round trips per RDD a batch builds, some twenty a batch. This
    one reads its id only when asked and answers the barrier question itself: no. That
    answer is only the pass's own flag; the JVM still makes a pass over a barrier RDD a
    barrier RDD (``RDD.isBarrier`` also asks the narrow parents).
    """
    if deserializer is None:
        from pyspark.serializers import NoOpSerializer
        deserializer = NoOpSerializer()
    return _built_class()(jrdd, sc, deserializer)


def as_frames(rdd: Any) -> Any:
    """``rdd`` (a Python RDD whose elements are frames) serialised one ``bytes`` per
    element (pipelined into the producing stage: no extra pass)."""
    from pyspark.serializers import NoOpSerializer
    return rdd._reserialize(NoOpSerializer())


def mask_of(pairs: Iterable[tuple[int, int]], num_physical: int, num_groups: int) -> bytes:
    """Mask marking ``(partition, group)`` pairs: byte ``partition * num_groups + group``.

    Examples
    --------
    >>> list(mask_of([(1, 0)], 2, 2))
    [0, 0, 1, 0]
    """
    m = np.zeros(num_physical * num_groups, dtype=np.uint8)
    for p, g in pairs:
        m[p * num_groups + g] = 1
    return m.tobytes()


def summaries(rdd: Any) -> list[tuple[int, int, float]]:
    """``(pid, keys, Σ S(k))`` per partition of a frames RDD, from the frame headers."""
    return rdd.mapPartitionsWithIndex(lambda pid, it: [fr.frames_summary(pid, it)]).collect()


class FrameOps:
    """``select``/``concat`` over frame RDDs of one SparkContext (JVM or Python)."""

    def __init__(self, sc: Any, jvm: bool) -> None:
        self.sc = sc
        self.jvm = jvm
        self._cls = sc._jvm.io.sparkbalance.bridge.StateFrames if jvm else None
        self._statics: dict[tuple[str, str], Any] = {}
        #: The JVM reads ``R`` frames (protocol 2): a batch reaches the merge as its routing
        #: shuffle's chunks, with no Python pass grouping it first.
        self.chunks = jvm and _protocol(self._cls) >= 2
        #: The JVM builds the routing shuffle and runs its map stage in one call each
        #: (``StateShuffle``; a jar before it: the same shuffle built step by step).
        self.routes = jvm and bridge_has(sc, STATE_SHUFFLE_CLASS)
        #: The JVM reads a written routing shuffle's reduce partitions again under a new
        #: plan (``StateReread``; a jar before it: the moving records are routed again).
        self.rereads = self.routes and self.chunks and bridge_has(sc, STATE_REREAD_CLASS)
        #: The batch's map tasks read a riding migration's frames too (``StateRide``; a jar
        #: before it: the frames are read by a map task of their own).
        self.rides = self.routes and self.chunks and bridge_has(sc, STATE_RIDE_CLASS)
        #: The JVM writes a batch's state frames to its checkpoint in the merge job
        #: (``StateWrite``; a jar before it: a Python pass reads and writes them).
        self.writes = jvm and bridge_has(sc, STATE_WRITE_CLASS)
        #: Python passes' Java RDDs built in one bridge call each (:mod:`.passes`).
        self.passes = Passes(sc, self.static("PythonPasses", "pass")
                             if jvm and bridge_has(sc, PYTHON_PASSES_CLASS) else None)

    def static(self, cls: str, name: str) -> Any:
        """The static method ``name`` of the bridge's class ``io.sparkbalance.bridge.<cls>``,
        looked up once per SparkContext: each step of a py4j lookup (``_jvm.io``, ``.x``,
        ..., the method) is a round trip to the JVM, and a batch calls a handful of them."""
        m = self._statics.get((cls, name))
        if m is None:
            owner = self._cls if cls == "StateFrames" and self._cls is not None else \
                getattr(self.sc._jvm.io.sparkbalance.bridge, cls)
            m = self._statics[(cls, name)] = getattr(owner, name)
        return m

    def wrap(self, jrdd: Any) -> Any:
        """The frames RDD over ``jrdd`` (:func:`built_rdd`)."""
        return built_rdd(jrdd, self.sc)

    def route(self, keyed: list, num_partitions: int, partitioner_id: int) -> Any:
        """The routing shuffle of the map sides ``keyed`` (one or two, each as
        :func:`~sparkbalance.spark.rdd.shuffle.keyed_by_function` writes) to
        ``num_partitions`` partitions, read as its chunks (one ``bytes`` each): one call
        into the JVM (``StateShuffle.route``) where PySpark's steps are about ten py4j
        round trips, each leaving a reference to release; those steps without it."""
        if not self.routes or len(keyed) > 2:
            from pyspark.serializers import NoOpSerializer
            from sparkbalance.spark.rdd.shuffle import shuffle_keyed
            return shuffle_keyed(keyed, num_partitions, partitioner_id, NoOpSerializer())
        args = [self.passes.built(k) for k in keyed]
        return self.wrap(self.static("StateShuffle", "route")(*args, int(num_partitions),
                                                             int(partitioner_id)))

    def reread(self, routed: Any, sources: list[list[int]]) -> Any:
        """The shuffle ``routed`` reads (:meth:`route`'s result, its map stage run) read
        again: partition ``p`` is the chunks of reduce partitions ``sources[p]``, as
        written (``StateReread.read``; one call, no job). Only with :attr:`rereads`."""
        if not self.rereads:
            raise RuntimeError("StateReread is not in the bridge jar; route the batch again")
        enc = b"".join(struct.pack(f">i{len(s)}i", len(s), *s) for s in sources)
        return self.wrap(self.static("StateReread", "read")(routed._jrdd, enc))

    def run_map_stage(self, routed: Any) -> None:
        """Run only the map stage of the shuffle ``routed`` (:meth:`route`'s result)
        reads, as adaptive execution does: a later job over it skips the stage. One call
        into the JVM (``StateShuffle.runMapStage``), else the lineage walked from Python
        (``SparkContext.submitMapStage``, public in the bytecode). An empty batch has no
        map stage to run (Spark refuses to submit one)."""
        if self.routes:
            self.static("StateShuffle", "runMapStage")(routed._jrdd)
            return
        values = routed._jrdd.rdd()                        # the shuffle's values
        shuffled = values.dependencies().head().rdd()      # the ShuffledRDD
        dep = shuffled.dependencies().head()
        if dep.rdd().getNumPartitions() == 0:
            return
        routed.context._jsc.sc().submitMapStage(dep).get()

    def select(self, rdd: Any, tag: int, mask: bytes | None = None, num_groups: int = 0,
               member: bool = True) -> Any:
        """Frames of ``tag`` whose (partition, group) is marked (``member``) or unmarked
        in ``mask`` (None: all frames of ``tag``). Narrow."""
        if self.jvm:
            return self.wrap(self.static("StateFrames", "select")(rdd._jrdd, tag, mask, int(num_groups), member))

        def _keep(pid: int, it: Iterable[bytes]) -> Iterable[bytes]:
            for f in it:
                if f[0] != tag:
                    continue
                if mask is None:
                    yield f
                    continue
                g = fr.header(f).group
                at = pid * num_groups + g
                if (at < len(mask) and mask[at] != 0) == member:
                    yield f

        return as_frames(rdd.mapPartitionsWithIndex(_keep, preservesPartitioning=True))

    def concat(self, a: Any, b: Any) -> Any:
        """Partition ``i``: the frames of ``a``'s partition ``i`` then ``b``'s. Narrow.

        Unequal partition counts raise: a ``ValueError`` here in Python, Spark's own
        ``IllegalArgumentException`` (naming both counts) when the JVM's zipped RDD is first
        planned — not checked here, as reading the counts costs four py4j round trips."""
        if self.jvm:
            return self.wrap(self.static("StateFrames", "concat")(a._jrdd, b._jrdd))
        if a.getNumPartitions() != b.getNumPartitions():
            raise ValueError(f"concat of {a.getNumPartitions()} and {b.getNumPartitions()} "
                             "partitions; expected equal counts")
        pa = a.mapPartitions(lambda it: [list(it)])
        pb = b.mapPartitions(lambda it: [list(it)])
        return as_frames(pa.zip(pb).flatMap(lambda t: t[0] + t[1]))

    def merge_around(self, state: Any, batch: Any, mask: bytes | None, num_groups: int,
                     expire_before: int | None, merge: Callable) -> Any:
        """The merge ``merge(pid, frames)`` of ``batch``'s frames (each partition a ``G``
        frame then its ``B`` frame, or ``R`` chunk frames) into ``state``'s, feeding Python
        only the state frames it must read (JVM): those of the groups the ``G`` or ``R``
        frames list, the groups marked in ``mask`` (``partition * num_groups + group``)
        and the frames whose window expires (``oldest <= expire_before``); the others are
        appended after the merge's output, unread, with one ``U`` frame summarising them. A chain of three narrow
        RDDs in one task (divert, the Python merge, rejoin). Without the bridge jar every
        frame goes through ``merge`` (the same result, no ``U`` frame)."""
        if not self.jvm:
            return self.map_frames(self.concat(state, batch), merge)
        import uuid
        tag = uuid.uuid4().hex
        low = -(2 ** 63) if expire_before is None else int(expire_before)
        diverted = self.wrap(self.static("StateFrames", "divert")(self.concat(batch, state)._jrdd, mask,
                                              int(num_groups), low, tag))
        merged = self.passes.built(self.map_frames(diverted, merge))
        return self.wrap(self.static("StateFrames", "rejoin")(merged, tag))

    def shuffle_frames(self, moving: Any, num_partitions: int
                       ) -> tuple[Any, Callable[[], tuple[int, float]]]:
        """``moving``'s ``(new pid, frame)`` pairs shuffled to their partitions (the frames
        as bytes, never decoded), and ``counts()``: the keys and Σ S(k) of the frames that
        arrived, from their headers, once the result is computed in one job (as its result
        stage: counted once per partition). JVM: after the map side that makes ``moving``,
        no Python worker — the JVM routes the frames and reads their headers. Python:
        ``partitionBy`` and a Python pass (a second Python stage)."""
        P = int(num_partitions)
        if self.jvm:
            jsc = self.sc._jsc.sc()
            keys, nbytes = jsc.longAccumulator(), jsc.doubleAccumulator()
            routed = as_frames(moving.flatMap(_routed))
            out = self.wrap(self.static("StateFrames", "moveFrames")(routed._jrdd, P, keys, nbytes))
            return out, lambda: (int(keys.value()), float(nbytes.value()))
        nk_acc, nb_acc = self.sc.accumulator(0), self.sc.accumulator(0.0)

        def _arrived(it: Iterable[tuple[int, bytes]]) -> Iterable[bytes]:
            for _, f in it:
                h = fr.header(f)
                nk_acc.add(h.nkeys)
                nb_acc.add(h.nbytes)
                yield f

        out = as_frames(moving.partitionBy(P, _same).mapPartitions(
            _arrived, preservesPartitioning=True))
        return out, lambda: (int(nk_acc.value), float(nb_acc.value))

    def empty(self, num_partitions: int) -> Any:
        """An RDD of ``num_partitions`` empty partitions (frames)."""
        return as_frames(self.sc.parallelize([], num_partitions))

    def pad(self, rdd: Any, num_partitions: int) -> Any:
        """``rdd`` extended with empty partitions to ``num_partitions`` (a narrow
        ``UnionRDD``: partition ``i < n`` is still ``rdd``'s partition ``i``)."""
        have = rdd.getNumPartitions()
        if have > num_partitions:
            raise ValueError(f"cannot shrink {have} physical partitions to {num_partitions} "
                             "narrowly")
        if have == num_partitions:
            return rdd
        return self.sc.union([rdd, self.empty(num_partitions - have)])

    def map_frames(self, rdd: Any, f: Callable[[int, Iterable[bytes]], Iterable[bytes]]
                   ) -> Any:
        """A Python pass ``f(pid, frames) -> frames`` (kept partitioning, bytes out)."""
        return as_frames(rdd.mapPartitionsWithIndex(f, preservesPartitioning=True))


def _protocol(cls: Any) -> int:
    """The frame protocol of the bridge's ``StateFrames`` (1 for a jar before ``R``
    frames, which has no ``protocol`` method)."""
    from py4j.protocol import Py4JError
    try:
        return int(cls.protocol())
    except Py4JError:
        return 1


def _same(pid: int) -> int:
    return pid


_OPS: dict[int, FrameOps] = {}


def frame_ops(sc: Any, prefer_jvm: bool = True) -> FrameOps:
    """The :class:`FrameOps` of ``sc``: JVM when the bridge class loads, else Python."""
    key = id(sc._jsc)
    ops = _OPS.get(key)
    if ops is None or (ops.jvm and not prefer_jvm):
        jvm = False
        if prefer_jvm:
            jvm = bridge_has(sc, STATE_FRAMES_CLASS)  # brought in if it can be
        ops = FrameOps(sc, jvm)
        if prefer_jvm:
            _LOG.info("sparkbalance keyed state: %s", "frames selected in the JVM (bridge jar)"
                      if jvm else "bridge jar not loadable; frames selected in Python "
                      "(correct, slower migrations: every frame crosses into Python)")
            _OPS[key] = ops
    return ops
