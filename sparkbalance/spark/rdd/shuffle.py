"""The adapters' shuffle for a fitted key-grouping function: ``partitionBy`` routed inline.

PySpark's ``RDD.partitionBy(n, f)`` calls ``f(key)`` once per record inside its map-side
loop. For a sparkbalance function that call goes through the adapter's
:class:`~sparkbalance.spark.rdd.key_errors.KeyGuard` (clear errors for refused keys) and the
function's per-process memo: three Python frames per record, where ``portable_hash`` is one.
On 500,000 uniform int keys that made the adapters' ``partitionBy`` 1.16-1.24x plain
``partitionBy``'s wall time although the routing itself costs what ``portable_hash`` costs.

:func:`partition_by_function` runs PySpark's own loop (the same pickled chunks, the same
``PairwiseRDD`` + ``PythonPartitioner`` on the JVM side, the same memory-bounded flushes)
with the routing inlined: a small per-task memo looked up in the loop (a repeated key costs
one dict lookup and no call), the function's uncached ``partition`` on a miss (one frame),
and a refused key translated *outside* the loop (free per record), as
:mod:`sparkbalance.spark.rdd.mapstats` does for key groups. :func:`combine_by_function` is
``combineByKey`` over it, with PySpark's own mergers. Records land exactly where
``f(key)`` says, so results equal PySpark's with ``partitionFunc=f``; the returned RDD's
``partitioner`` compares equal across adapter calls with the same ``f``.

Only for key-grouping functions: a splitting function's choice depends on its per-task
load vector, which its own ``__call__`` keeps (the adapters route those through their
merge step).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Iterable, Iterator

from sparkbalance.hashing import P, _SEED_INT, _SEED_STR, _crc32, raw_hash
from sparkbalance.routing.base import MEMO_CAPACITY, MEMO_PROBE, PartitionFunction, partition_func
from sparkbalance.spark.rdd.key_errors import KeyGuard, bad_record_error

__all__ = ["next_batch", "route_records", "inlinable", "partition_by_function",
           "keyed_by_function",
           "shuffle_keyed", "combine_by_function", "combine_over"]

_NO_RECORD = object()


def inlinable(f: Any) -> bool:
    """Whether ``f`` (or the function of a guard) can be routed inline: a key-grouping
    :class:`~sparkbalance.routing.base.PartitionFunction` whose ``__call__`` is the base
    class's (the memo over ``partition``), so ``partition`` gives what a call gives.

    Examples
    --------
    >>> from sparkbalance.routing import HashPartitioner, PKGPartitioner
    >>> inlinable(HashPartitioner(4)), inlinable(PKGPartitioner(4)), inlinable(len)
    (True, False, False)
    """
    g = f.f if isinstance(f, KeyGuard) else f
    return (isinstance(g, PartitionFunction) and not g.splits_keys
            and type(g).__call__ is PartitionFunction.__call__)


def next_batch(batch: int, size: int, chunks: int) -> int:
    """PySpark's rule for the records between two flushes of a map-side shuffle loop, after
    a flush wrote ``size`` bytes in ``chunks`` chunks: grow by half while chunks stay under
    1 MB, shrink by a third past 10 MB. Once per flush, off the per-record path.

    >>> next_batch(1000, 100_000, 10), next_batch(1000, 200 << 20, 10), next_batch(1000, 50 << 20, 10)
    (1500, 666, 1000)
    """
    avg = int(size / chunks) >> 20
    if avg < 1:
        return int(batch * 1.5)
    if avg > 10:
        return max(int(batch / 1.5), 1)
    return batch


def route_records(iterator: Iterable[Any], route: Callable[[Any], int] | None,
                  dumps: Callable[[list], bytes], batch: int, limit: float,
                  refuse: Callable[[Any], Exception | None],
                  flushing: Callable[[dict[int, list], int], None] | None = None,
                  group_hash: tuple[int, int, int] | None = None) -> Iterator[bytes]:
    """The one map-side routing loop: PySpark's ``add_shuffle_key`` with ``route`` inlined.

    Each ``(k, v)`` goes to bucket ``route(k)`` (a small per-task memo first: a repeated key
    costs one dict lookup and no call; switched off when keys rarely repeat); buckets are
    written as ``pack_long(bucket)``, ``dumps(pairs)`` when memory nears ``limit`` or more
    than ``batch`` records wait (PySpark's chunking, :func:`next_batch`). ``flushing(buckets,
    records)`` sees the buckets before each write (off the per-record path). A record that
    fails is translated *outside* the loop (free per record): ``refuse(kv)`` gives its clear
    error, or None when the failure came from upstream (re-raised as it was).
    ``group_hash = (a, b, m)`` routes by ``((a raw_hash(k) + b) mod P) mod m`` computed in
    the loop instead of calling ``route`` (the key groups of the zero-pass shuffle: no
    Python frame per record when keys rarely repeat and the memo is off). Used by
    :class:`_RouteBuckets` (a fitted function) and :mod:`sparkbalance.spark.rdd.mapstats`
    (key groups); the keyed state writes its ``R`` frames through the former.
    """
    from pyspark.serializers import pack_long
    from pyspark.shuffle import get_used_memory
    a, b, m = group_hash if group_hash is not None else (0, 0, 0)
    crc, seed_str, seed_int, p_ = _crc32, _SEED_STR, _SEED_INT, P
    memo: dict[Any, int] | None = {}
    hits = 0
    buckets: dict[int, list] = defaultdict(list)
    c = 0
    kv: Any = _NO_RECORD
    try:
        for kv in iterator:
            k, v = kv  # unpacked as PySpark does: a non-pair fails here
            p = None
            if memo is not None:
                try:
                    p = memo.get(k)
                except TypeError:  # unhashable: routed below (or refused clearly)
                    p = None
            if p is None:
                if m:  # raw_hash's str and int cases inlined, as HashPartitioner.partition
                    t = type(k)
                    if t is str:
                        r = crc(k.encode("utf-8", "surrogatepass"), seed_str)
                    elif t is int:
                        r = crc(b"%d" % k, seed_int)
                    else:
                        r = raw_hash(k)
                    p = ((r * a + b) % p_) % m
                else:
                    p = route(k)
                if memo is not None:
                    size = len(memo)
                    if size >= MEMO_PROBE and hits < size:
                        memo = None  # keys rarely repeat: the memo costs more than it saves
                    elif size < MEMO_CAPACITY:
                        try:
                            memo[k] = p
                        except TypeError:
                            pass
            else:
                hits += 1
            buckets[p].append((k, v))  # a tuple, as PySpark's loop makes
            c += 1
            # PySpark's chunking: bounded memory, chunks of about 1-10 MB.
            if (c % 1000 == 0 and get_used_memory() > limit) or c > batch:
                if flushing is not None:
                    flushing(buckets, c)
                n, size = len(buckets), 0
                for s in list(buckets.keys()):
                    d = dumps(buckets.pop(s))
                    size += len(d)
                    yield pack_long(s)
                    yield d
                batch = next_batch(batch, size, n)
                c = 0
    except (TypeError, ValueError, IndexError):
        bad = None if kv is _NO_RECORD else refuse(kv)
        if bad is None:
            raise
        raise bad from None
    if flushing is not None:
        flushing(buckets, c)
    for s, items in buckets.items():
        yield pack_long(s)
        yield dumps(items)


class _RouteBuckets:
    """mapPartitionsWithIndex body: PySpark's ``add_shuffle_key`` with ``f`` inlined."""

    def __init__(self, f: PartitionFunction, serializer: Any, limit: float,
                 wrap: Callable[[list, bytes], bytes] | None = None) -> None:
        self.f = f
        self.serializer = serializer
        self.limit = limit
        self.wrap = wrap

    def __call__(self, split: int, iterator: Iterable[Any]) -> Iterator[bytes]:
        route, dumps, wrap = self.f.partition, self.serializer.dumps, self.wrap
        if wrap is not None:
            pickled = dumps

            def dumps(items: list) -> bytes:   # once per chunk, off the per-record path
                return wrap(items, pickled(items))
        return route_records(iterator, route, dumps, min(10 * self.f.num_partitions, 1000),
                             self.limit, lambda kv: bad_record_error(kv, route, self.f))


def partition_by_function(rdd: Any, f: PartitionFunction | KeyGuard) -> Any:
    """``rdd.partitionBy(f.num_partitions, f)`` with ``f`` routed inline (see the module).

    ``f`` must be :func:`inlinable`. The result's ``partitioner`` holds
    the bound ``__call__`` of ``f``'s :class:`~sparkbalance.spark.rdd.key_errors.KeyGuard`, so
    it equals the partitioner of any other adapter output routed by the same ``f``, and an
    RDD already partitioned that way is returned as it is (PySpark's rule).

    Examples
    --------
    >>> from sparkbalance.routing import HashPartitioner
    >>> out = partition_by_function(sc.parallelize([(1, "a")]), HashPartitioner(4))  # doctest: +SKIP
    >>> out.getNumPartitions()                                                       # doctest: +SKIP
    4
    """
    try:
        from pyspark.core.rdd import Partitioner
    except ImportError:  # PySpark 3.5: pyspark.rdd
        from pyspark.rdd import Partitioner
    if isinstance(f, KeyGuard):
        f = f.f
    if not inlinable(f):
        raise ValueError(f"{type(f).__name__} cannot be routed inline (see inlinable); use "
                         "rdd.partitionBy(n, partition_func(f))")
    n = f.num_partitions
    guard = KeyGuard.of(f)
    partitioner = Partitioner(n, partition_func(guard))
    if rdd.partitioner == partitioner:
        return rdd
    out = shuffle_keyed([keyed_by_function(rdd, f)], n, id(guard))
    out.partitioner = partitioner
    return out


def keyed_by_function(rdd: Any, f: PartitionFunction,
                      wrap: Callable[[list, bytes], bytes] | None = None) -> Any:
    """The map side of :func:`partition_by_function`: ``rdd``'s records routed by ``f``
    (inlinable) as PySpark's ``partitionBy`` writes them, a partition number (``pack_long``)
    then a pickled chunk of the pairs it gets; for :func:`shuffle_keyed`. ``wrap(pairs,
    pickled)`` (optional) turns each chunk into the bytes written instead (the keyed
    state's ``R`` frames), called once per chunk."""
    serializer = rdd.context._unbatched_serializer
    keyed = rdd.mapPartitionsWithIndex(_RouteBuckets(f, serializer, rdd._memory_limit() / 2,
                                                     wrap),
                                       preservesPartitioning=True)
    keyed._bypass_serializer = True
    return keyed


def shuffle_keyed(keyed: list, num_partitions: int, partitioner_id: int,
                  serializer: Any = None) -> Any:
    """One shuffle of the map sides ``keyed`` (each as :func:`keyed_by_function` writes,
    e.g. routed by different functions) to ``num_partitions`` partitions: their union on
    the JVM, ``PairwiseRDD`` + ``PythonPartitioner`` as PySpark's ``partitionBy``. Records
    come out as pairs; ``partitioner_id`` names the partitioner (PySpark's ``id(f)``).
    ``serializer`` (optional) reads the chunks instead, e.g. ``NoOpSerializer()``: one
    ``bytes`` per chunk as the map side wrote it."""
    from pyspark import RDD
    from pyspark.serializers import BatchedSerializer
    sc = keyed[0].context
    jrdd = keyed[0]._jrdd
    for other in keyed[1:]:
        jrdd = jrdd.union(other._jrdd)
    jvm = sc._jvm
    pair = jvm.PairwiseRDD(jrdd.rdd()).asJavaPairRDD()
    out = jvm.PythonRDD.valueOfPair(
        pair.partitionBy(jvm.PythonPartitioner(int(num_partitions), partitioner_id)))
    return RDD(out, sc, BatchedSerializer(sc._unbatched_serializer)
               if serializer is None else serializer)


def combine_over(rdd: Any, shuffle: Callable[[Any], Any], create: Callable,
                 merge_value: Callable, merge_combiners: Callable) -> Any:
    """PySpark's ``combineByKey`` with its shuffle replaced by ``shuffle(rdd)``: combine
    per map task, shuffle, merge the combiners of each key (PySpark's own mergers). Exact
    whenever ``shuffle`` puts all records of a key in one partition."""
    from pyspark.shuffle import Aggregator, ExternalMerger
    serializer = rdd.context.serializer
    memory = rdd._memory_limit()
    agg = Aggregator(create, merge_value, merge_combiners)

    def combine_locally(iterator: Iterable[Any]) -> Iterable[Any]:
        merger = ExternalMerger(agg, memory * 0.9, serializer)
        merger.mergeValues(iterator)
        return merger.items()

    def merge(iterator: Iterable[Any]) -> Iterable[Any]:
        merger = ExternalMerger(agg, memory, serializer)
        merger.mergeCombiners(iterator)
        return merger.items()

    local = rdd.mapPartitions(combine_locally, preservesPartitioning=True)
    return shuffle(local).mapPartitions(merge, preservesPartitioning=True)


def combine_by_function(rdd: Any, f: PartitionFunction | KeyGuard, create: Callable,
                        merge_value: Callable, merge_combiners: Callable) -> Any:
    """``rdd.combineByKey(create, merge_value, merge_combiners, f.num_partitions,
    partitionFunc=f)`` over :func:`partition_by_function`; same result."""
    return combine_over(rdd, lambda local: partition_by_function(local, f), create,
                        merge_value, merge_combiners)
