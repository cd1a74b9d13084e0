"""A riding migration's map side, written by the batch's own map tasks.

A migration riding in a batch's routing shuffle (Fang et al. §4, Fig. 5 steps 3-7 folded
into the batch) reads the state frames that can hold a leaving key and writes the leaving
items as shuffle chunks beside the batch's records. Written by a map task of its own
(:func:`~sparkbalance.state.frames.route_chunks.carried_chunks`), that task is one more
than the batch's: ``n + 1`` map tasks on ``n`` slots, so the last waits for a slot —
measured on ``local[8]`` (20,000 records, the 8 hottest keys moved, load ~7, medians of 12
interleaved runs), the map stage 0.36 s against 0.27 s without a move, the carried
task launched ~0.1 s after the others, once the first of them ended.

Here map task ``i`` of the batch writes both: the bridge's ``StateRide`` puts before batch
partition ``i`` the selected frames of the state partitions it is given, then an empty
element (:class:`RideDeserializer` reads up to it), and the task writes the leaving items
(:class:`CarryWriter`) before it routes its records with the batch's own pipeline
(the function PySpark composed for it, unchanged). No task, stage or Python worker is
added; the frames move as bytes where whole frames move (key groups).

Spark side of the keyed state (imports pyspark inside the functions).
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from sparkbalance.state.frames import format as fr
from sparkbalance.state.frames import moves as fm

__all__ = ["CARRY_CHUNK", "BATCH_FOLLOWS", "RideDeserializer", "CarryWriter",
           "riding_chunks"]

#: Bytes of marked frames a carrying map task reads before it writes the items leaving
#: them as shuffle chunks (PySpark's map-side chunks are 1-10 MB).
CARRY_CHUNK: int = 8 << 20


class _BatchFollows:
    """The element :class:`RideDeserializer` yields between the frames and the batch."""

    def __repr__(self) -> str:
        return "BATCH_FOLLOWS"


#: Yielded once per map task, after the state's frames and before the batch's records.
BATCH_FOLLOWS = _BatchFollows()


class RideDeserializer:
    """Reads a ``StateRide`` partition: the frames (raw ``bytes``, length-prefixed as
    PySpark writes a ``byte[]``) up to the empty separator, :data:`BATCH_FOLLOWS`, then
    the rest of the stream through the batch's own deserializer ``batch`` (any: it reads
    the batch's elements as they were written).

    Examples
    --------
    >>> import io, struct
    >>> from pyspark.serializers import NoOpSerializer, SpecialLengths
    >>> raw = b"".join(struct.pack(">i", len(b)) + b for b in (b"S1", b"", b"x"))
    >>> raw += struct.pack(">i", SpecialLengths.END_OF_DATA_SECTION)
    >>> list(RideDeserializer(NoOpSerializer()).load_stream(io.BytesIO(raw)))
    [b'S1', BATCH_FOLLOWS, b'x']
    """

    def __init__(self, batch: Any) -> None:
        self.batch = batch

    def load_stream(self, stream: Any) -> Iterator[Any]:
        from pyspark.serializers import read_int
        while True:
            length = read_int(stream)
            if length < 0:
                raise RuntimeError(f"a riding map task's input ended (length {length}) "
                                   "before the separator after the state's frames")
            if length == 0:
                break
            yield stream.read(length)
        yield BATCH_FOLLOWS
        yield from self.batch.load_stream(stream)

    def dump_stream(self, iterator: Iterable[Any], stream: Any) -> None:
        raise NotImplementedError("RideDeserializer only reads")

    def __repr__(self) -> str:
        return f"RideDeserializer({self.batch!r})"


class CarryWriter:
    """The leaving items of a riding migration's marked state frames, written as a
    routing shuffle's map side: ``pack_long(new pid)`` then a chunk of
    ``(Carry(new pid), item)`` (:func:`~sparkbalance.state.frames.moves.carried_items`),
    per destination, every :data:`CARRY_CHUNK` bytes of frames read (sooner when the
    worker nears ``limit`` bytes). ``chunked``: each chunk an ``R`` frame listing the key
    groups of the entries it carries (the merge reads it as the batch's chunks). ``read``
    (an accumulator, optional) counts the frames read.

    A frame's own partition is not known to the task that reads it (a carrying task may
    read several state partitions): a group's frame is read for each partition that marks
    the group in ``move.mask`` (key groups: one; a routing table: those whose listed
    leaving keys only that partition's frame can hold).
    """

    def __init__(self, move: fm.Move, serializer: Any, limit: float, read: Any = None,
                 chunked: bool = True) -> None:
        G = move.num_groups
        m = np.frombuffer(move.mask, dtype=np.uint8)
        marked = m[: m.size - m.size % G].reshape(-1, G)
        self.homes = {int(g): [int(p) for p in np.flatnonzero(marked[:, g])]
                      for g in np.flatnonzero(marked.any(axis=0))}
        self.move, self.serializer, self.limit = move, serializer, limit
        self.read, self.chunked = read, chunked
        self.chunk = CARRY_CHUNK     # read on the driver: a test may make it small

    def _dumps(self, items: list) -> bytes:
        pickled = self.serializer.dumps(items)
        if not self.chunked:
            return pickled
        keys = [it[1] for _, it in items if it[0] == "e"]
        return fr.chunk_frame(items, pickled, self.move.num_groups, keys)

    def __call__(self, frames: Iterable[bytes]) -> Iterator[bytes]:
        from pyspark.serializers import pack_long
        from pyspark.shuffle import get_used_memory
        buckets: dict[int, list] = {}
        held = 0
        for f in frames:
            if self.read is not None:
                self.read.add(1)
            for pid in self.homes.get(fr.header(f).group, ()):
                for c, item in fm.carried_items(pid, (f,), self.move):
                    buckets.setdefault(c.pid, []).append((c, item))
            held += len(f)
            # bounded memory, as PySpark's map-side loop
            if held >= self.chunk or get_used_memory() > self.limit:
                for to, items in buckets.items():
                    yield pack_long(to)
                    yield self._dumps(items)
                buckets, held = {}, 0
        for to, items in buckets.items():
            yield pack_long(to)
            yield self._dumps(items)


class _Ride:
    """The riding map task: the leaving items of the frames before the separator
    (:class:`CarryWriter`), then the batch's own pipeline ``route`` over the rest."""

    def __init__(self, carry: CarryWriter, route: Callable[[int, Iterable], Iterable]
                 ) -> None:
        self.carry, self.route = carry, route

    def __call__(self, split: int, it: Iterator[Any]) -> Iterator[bytes]:
        yield from self.carry(itertools.takewhile(lambda x: x is not BATCH_FOLLOWS, it))
        yield from self.route(split, it)


def riding_chunks(batch_keyed: Any, touched: Any, move: fm.Move, read: Any, ops: Any
                  ) -> Any | None:
    """The map side ``batch_keyed`` (the batch's records routed as ``R`` chunks,
    :func:`~sparkbalance.state.frames.route_chunks.batch_chunks`, not yet built) with the
    riding migration of ``touched`` (the state's marked frames, :meth:`~.rdds.FrameOps.
    select`) written by the same map tasks: one map side for the routing shuffle, as many
    tasks as the batch has partitions. None when the bridge has no ``StateRide`` or the
    batch has no partition (no map task to carry the state in): the caller carries it in
    a task of its own.

    Examples
    --------
    >>> keyed = riding_chunks(batch_chunks(pairs, fn, G), touched, move, read,
    ...                       ops)                                      # doctest: +SKIP
    >>> shuffle_chunks([keyed], P, fn, ops)                             # doctest: +SKIP
    """
    if not ops.rides or batch_keyed._jrdd_val is not None:
        return None
    jrdd = ops.static("StateRide", "withBatch")(touched._jrdd, batch_keyed._prev_jrdd)
    if jrdd is None:
        return None
    from sparkbalance.state.frames.rdds import built_rdd
    sc = batch_keyed.context
    carry = CarryWriter(move, sc._unbatched_serializer, batch_keyed._memory_limit() / 2, read)
    src = built_rdd(jrdd, sc, RideDeserializer(batch_keyed._prev_jrdd_deserializer))
    out = src.mapPartitionsWithIndex(_Ride(carry, batch_keyed.func), preservesPartitioning=True)
    out._bypass_serializer = True
    return out
