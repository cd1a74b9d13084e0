"""Zero-pass key statistics for the RDD adapters: Spark's own map-output sizes, AQE-style.

The user's shuffle is the statistics. Its map side routes every record to one of ``m``
fine key groups (``m >> n``; ``key_group = h_1(k) mod m``, the group hash of
:mod:`sparkbalance.routing.keygroups`); the JVM bridge
(``io.sparkbalance.bridge.MapStats``) submits only the map stage of that shuffle
(``SparkContext.submitMapStage``, what Spark's adaptive execution uses) and returns
``MapOutputStatistics.bytesByPartitionId``, the bytes of each group, while the map tasks
count each group's records and its heavy keys into one accumulator
(:mod:`sparkbalance.spark.rdd.maptally`; records, because a hot key's records compress so well
that bytes hide it). Python assigns the groups, weighed by records, to the ``n`` reduce
tasks (:func:`sparkbalance.strategies.auto.plan_groups`: contiguous runs of groups, or LPT
when runs would be more than 5 % slower, or hash placement when balancing would gain too
little) and the shuffle is read once through an RDD whose task ``i`` reads the groups the
plan gives it. That RDD is narrow over the materialised shuffle, so its job skips the map
stage: one pass over the input and no statistics job. The shuffle is written with a
relocatable serializer (the bridge's ``PairSerializer``), so a task reads a run of groups
as one block per map output, as adaptive execution reads a coalesced partition: ``n``
blocks per task, as plain ``partitionBy`` reads, not ``m``.

The map side is PySpark's own ``partitionBy`` loop (pickled buckets, one ``pack_long``
per chunk; :func:`sparkbalance.spark.rdd.shuffle.route_records`, the loop the inline
shuffle runs too) routing by the group hash with a small per-task memo for repeated keys,
so routing costs about what ``portable_hash`` costs.

Without the bridge class in the JVM, :func:`available` is False and "auto" plans from a
bounded sample of the input instead (:mod:`sparkbalance.spark.rdd.bounded`; the bridge's
own one line says so).
"""
from __future__ import annotations

import logging
from collections import Counter
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from sparkbalance.hashing import GROUP_HASH, family_constants, raw_hash
from sparkbalance.routing.base import check_num_partitions
from sparkbalance.routing.keygroups import GroupMapPartitioner
from sparkbalance.strategies.auto import DEFAULT_MIN_GAIN
# plan_groups of strategies.auto, timed and noted for the operation's balance record.
from sparkbalance.spark.report.plan_report import plan_groups
from sparkbalance.spark.session.bridge import spark_context
from sparkbalance.spark.session.jvm_loader import bridge, bridge_class, bridge_has
from sparkbalance.spark.rdd.maptally import (TOP_KEYS, GroupTally, heavy_in_buckets, key_bound, read_tally,
                       zero_tally)
from sparkbalance.spark.rdd.shuffle import combine_over, route_records
from sparkbalance.spark.rdd.key_errors import bad_record_error

__all__ = ["MAPSTATS_CLASS", "MAP_OUTPUT", "available", "num_groups_for", "shuffle_by_groups",
           "combine_by_groups", "loaded", "fitted_function", "MAX_GROUPS"]

_LOG = logging.getLogger("sparkbalance")

#: The bridge class (jvm_bridge/src/main/java/io/sparkbalance/bridge/MapStats.java).
MAPSTATS_CLASS = "io.sparkbalance.bridge.MapStats"
#: Above ``spark.shuffle.minNumPartitionsToHighlyCompress`` (2000) reduce partitions Spark
#: keeps only an average block size per map task, so the group sizes would be lost.
MAX_GROUPS: int = 2000
#: Key groups per reduce task: enough that LPT balances to a few percent of the mean.
GROUPS_PER_TASK: int = 32
#: ``spark.shuffle.sort.bypassMergeThreshold``'s default. Up to this many reduce partitions
#: each map task writes one file per partition and concatenates them: measured on local[4]
#: with 4 map tasks, m = 128 groups cost 28-32 s of map stage against 2-5 s for m = 16, 208
#: or 512 (above the threshold the sort writer writes one file per map task).
BYPASS_MERGE_THRESHOLD: int = 200

_A1, _B1 = family_constants(GROUP_HASH)
#: ``stats=MAP_OUTPUT`` asks an RDD adapter for the zero-pass statistics explicitly.
MAP_OUTPUT = "map-output"
_warned = [False]


def available(spark_or_sc: Any) -> bool:
    """True when the JVM holds the bridge's ``MapStats`` class: brought in if it can be, and
    remembered per session by :mod:`~sparkbalance.spark.session.jvm_loader`."""
    return bridge_has(spark_context(spark_or_sc), MAPSTATS_CLASS)


def num_groups_for(num_partitions: int) -> int:
    """``m``: a multiple of ``n`` (so ``n`` equal runs of groups are hash placement), above
    BYPASS_MERGE_THRESHOLD and at most MAX_GROUPS.

    Examples
    --------
    >>> num_groups_for(2), num_groups_for(16), num_groups_for(64), num_groups_for(3000)
    (202, 512, 1984, 3000)
    """
    n = check_num_partitions(num_partitions)
    per_task = max(GROUPS_PER_TASK, -(-(BYPASS_MERGE_THRESHOLD + 1) // n))
    return n * max(1, min(per_task, MAX_GROUPS // n))


class _GroupBuckets:
    """mapPartitionsWithIndex body: PySpark's ``add_shuffle_key`` routing by the group hash.

    Yields ``pack_long(group), pickled chunk`` pairs as ``RDD.partitionBy`` does, so the JVM
    side is PySpark's ``PairwiseRDD`` + ``PythonPartitioner`` unchanged.
    """

    def __init__(self, num_groups: int, serializer: Any, limit: float,
                 tally: Any = None) -> None:
        self.m = num_groups
        self.serializer = serializer
        self.limit = limit
        self.tally = tally  # accumulator of (records per group, heavy keys), or None

    def __call__(self, split: int, iterator: Iterable[Any]) -> Iterator[bytes]:
        m = self.m
        records = [0] * m
        heavy: Counter = Counter()

        def flushing(buckets: dict[int, list], flushed: int) -> None:
            heavy_in_buckets(buckets, flushed, m, heavy)
            for s, items in buckets.items():
                records[s] += len(items)

        # PySpark starts at min(10 n, 1000) records per flush; with m >> n buckets that gives
        # ~2 records per pickled chunk, so start at ~50 per group (memory is still checked).
        yield from route_records(iterator, None, self.serializer.dumps, 50 * m, self.limit,
                                 _bad_record, flushing, group_hash=(_A1, _B1, m))
        if self.tally is not None:
            self.tally.add((np.asarray(records, dtype=np.int64),
                            dict(heavy.most_common(TOP_KEYS))))


def _bad_record(kv: Any) -> Exception | None:
    """The clear error for a record the group routing could not take, or None when ``kv``
    is a (key, value) pair whose key routes (the failure was not this record's)."""
    return bad_record_error(kv, raw_hash, GroupMapPartitioner)


def shuffle_by_groups(rdd: Any, num_partitions: int, *, num_groups: int | None = None,
                      min_gain: float = DEFAULT_MIN_GAIN, balance: bool | None = None,
                      decision: dict[str, Any] | None = None) -> Any:
    """``rdd.partitionBy(n)`` with the groups placed from the shuffle's own map-output sizes.

    Runs the map stage (one Spark job over the input), plans, and returns the reduce side
    as an RDD of ``n`` partitions whose ``partitioner`` is the fitted
    :class:`~sparkbalance.routing.keygroups.GroupMapPartitioner` (so later PySpark
    operations that check ``partitioner`` see a partitioned RDD).

    Parameters
    ----------
    rdd : pair RDD.
    num_partitions : n reduce tasks.
    num_groups : m; default :func:`num_groups_for` (n).
    min_gain, balance : see :func:`sparkbalance.strategies.auto.plan_groups`.
    decision : a dict to receive the plan's decision, the group sizes planned on
        (``sizes``: records per group, counted by the map tasks; the bytes of Spark's
        map-output statistics only if no count arrived), ``bytes`` (those statistics),
        ``heavy_keys`` (up to 8 ``(key, records)`` found by the map tasks, counts being
        lower bounds) and ``key_bound`` (``max(1, n p_1)`` of the heaviest key found).

    Examples
    --------
    >>> shuffle_by_groups(sc.parallelize([("a", 1)] * 9), 2).glom().map(len).collect()  # doctest: +SKIP
    [9, 0]
    """
    from pyspark import RDD
    from pyspark.serializers import BatchedSerializer
    try:
        from pyspark.core.rdd import Partitioner
    except ImportError:  # PySpark 3.5: pyspark.rdd
        from pyspark.rdd import Partitioner

    n = check_num_partitions(num_partitions)
    m = num_groups_for(n) if num_groups is None else check_num_partitions(num_groups,
                                                                          "num_groups")
    sc = rdd.context
    serializer = sc._unbatched_serializer
    tally = sc.accumulator(zero_tally(m), GroupTally())
    keyed = rdd.mapPartitionsWithIndex(
        _GroupBuckets(m, serializer, rdd._memory_limit() / 2, tally),
        preservesPartitioning=True)
    keyed._bypass_serializer = True
    jvm = sc._jvm
    bridge = bridge_class(sc, MAPSTATS_CLASS)  # brought in if it can be
    pair = jvm.PairwiseRDD(keyed._jrdd.rdd()).asJavaPairRDD()
    # A relocatable serializer, so a task fetches its run of groups as one block per map
    # output (bridge PairSerializer) instead of one block per group.
    shuffled = bridge.shuffle(pair, jvm.PythonPartitioner(m, id(_GroupBuckets)))
    text = bridge.submitMapStage(shuffled)
    sizes_bytes = [int(x) for x in text.split(",")] if text else [0] * m
    records, heavy = read_tally(tally)
    total = int(records.sum())
    # Records, not bytes: a hot key's records compress well, so bytes hide it (maptally).
    sizes = records.tolist() if total > 0 else sizes_bytes
    f, info = plan_groups(sizes, n, min_gain=min_gain, balance=balance)
    top = sorted(heavy.items(), key=lambda kc: -kc[1])[:8]
    info = {**info, "key_bound": key_bound(heavy, total, n)}
    if top:
        _LOG.debug("sparkbalance auto: heaviest keys %s of %d records; key-grouping bound "
                   "%.2f x the mean, planned %.2f", top[:3], total, info["key_bound"],
                   info["planned_max_over_mean"])
    if decision is not None:
        decision.update(info, sizes=sizes, bytes=sizes_bytes, heavy_keys=top)
    owner = ",".join(map(str, f.owner_of_group.tolist()))
    jrdd = jvm.PythonRDD.valueOfPair(bridge.coalesce(shuffled, owner, n))
    out = RDD(jrdd, sc, BatchedSerializer(serializer))
    out.partitioner = Partitioner(n, f)
    return out


def combine_by_groups(rdd: Any, num_partitions: int, create: Callable, merge_value: Callable,
                      merge_combiners: Callable, **kw: Any) -> Any:
    """``rdd.combineByKey(...)`` over :func:`shuffle_by_groups` (PySpark's own mergers).

    Each reduce task reads several key groups, but a key lives in exactly one group, so
    merging everything a task reads gives each key's one combiner, as ``combineByKey`` does.
    """
    return combine_over(rdd, lambda local: shuffle_by_groups(local, num_partitions, **kw),
                        create, merge_value, merge_combiners)


def fitted_function(rdd: Any) -> GroupMapPartitioner | None:
    """The GroupMapPartitioner a :func:`shuffle_by_groups` RDD was placed with, if any."""
    part = getattr(rdd, "partitioner", None)
    f = getattr(part, "partitionFunc", None)
    return f if isinstance(f, GroupMapPartitioner) else None


def loaded(rdd: Any) -> bool:
    """Whether the zero-pass shuffle can run on ``rdd``'s context (the bridge's class is in
    the JVM); without it "auto" plans from a bounded sample. The missing bridge is the
    bridge's one log line (:mod:`~sparkbalance.spark.session.jvm_loader`); only a bridge
    jar without ``MapStats`` (an older jar) warns here, once per process.

    The strategy resolver (:func:`sparkbalance.strategies.resolve`, ``map_output=``) asks
    this only for a call that would take the zero-pass path.

    Examples
    --------
    >>> loaded(sc.parallelize([(1, 2)]))  # doctest: +SKIP
    True
    """
    if available(rdd.context):
        return True
    if not _warned[0] and bridge(rdd.context) is not None:
        _warned[0] = True
        _LOG.warning("sparkbalance: the bridge jar in this session has no %s (an older "
                     "jar), so strategy 'auto' plans from a bounded sample of the input; "
                     "use the jar of this installation (sparkbalance.bridge_jar())",
                     MAPSTATS_CLASS)
    return False
