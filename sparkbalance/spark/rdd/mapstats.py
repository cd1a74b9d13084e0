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
per chunk) with the group hash inlined per record and a small per-task memo for repeated
keys, so routing costs about what ``portable_hash`` costs.

Without the bridge class in the JVM, :func:`available` is False and the adapters fall
back to a statistics pass (one WARNING per process).
"""
from __future__ import annotations

import logging
import zlib
from collections import Counter, defaultdict
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from sparkbalance.hashing import GROUP_HASH, P, family_constants, raw_hash
from sparkbalance.routing.base import check_num_partitions
from sparkbalance.routing.keygroups import GroupMapPartitioner
from sparkbalance.strategies.auto import DEFAULT_MIN_GAIN, check_min_gain
# plan_groups of strategies.auto, timed and noted for the operation's balance record.
from sparkbalance.spark.report.plan_report import plan_groups
from sparkbalance.spark.session.bridge import spark_context
from sparkbalance.spark.session.jvm_loader import bridge_class, bridge_has
from sparkbalance.spark.rdd.maptally import (TOP_KEYS, GroupTally, heavy_in_buckets, key_bound, read_tally,
                       zero_tally)
from sparkbalance.spark.rdd.shuffle import combine_over, next_batch
from sparkbalance.spark.rdd.key_errors import bad_record_error

__all__ = ["MAPSTATS_CLASS", "MAP_OUTPUT", "available", "num_groups_for", "shuffle_by_groups",
           "combine_by_groups", "zero_pass_options", "fitted_function", "MAX_GROUPS"]

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
_SEED_STR = zlib.crc32(b"s")
_SEED_INT = zlib.crc32(b"i")
_MEMO_CAP = 1 << 14
_MEMO_PROBE = 1 << 10
#: ``stats=MAP_OUTPUT`` asks an RDD adapter for the zero-pass statistics explicitly.
MAP_OUTPUT = "map-output"
#: Parameters the zero-pass path takes (the rest of "auto"'s are Mixed's, for stats paths).
_ZERO_PASS_PARAMS = ("min_gain", "num_groups", "balance")
#: Parameters that ask for a statistics pass (precomputed stats, sampling, measured times...).
_STATS_PARAMS = ("stats", "sample_fraction", "current", "weights", "listener", "stats_method")
_NO_RECORD = object()
_available: dict[int, bool] = {}
_warned = [False]


def available(spark_or_sc: Any) -> bool:
    """True when the JVM holds the bridge's ``MapStats`` class (cached per context)."""
    sc = spark_context(spark_or_sc)
    key = id(sc)
    if key not in _available:
        _available[key] = bridge_has(sc, MAPSTATS_CLASS)  # brought in if it can be
    return _available[key]


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
    """mapPartitionsWithIndex body: PySpark's ``add_shuffle_key`` with the group hash inlined.

    Yields ``pack_long(group), pickled chunk`` pairs as ``RDD.partitionBy`` does, so the JVM
    side is PySpark's ``PairwiseRDD`` + ``PythonPartitioner`` unchanged.
    """

    def __init__(self, num_groups: int, serializer: Any, limit: float,
                 tally: Any = None) -> None:
        self.m = num_groups
        self.serializer = serializer
        self.limit = limit
        self.tally = tally  # accumulator of (records per group, heavy keys), or None

    def _flush(self, buckets: dict[int, list], flushed: int, records: list[int],
               heavy: Counter) -> Iterator[bytes]:
        """Yield every bucket as ``pack_long(group), pickled chunk``; count what it holds."""
        from pyspark.serializers import pack_long
        dumps = self.serializer.dumps
        heavy_in_buckets(buckets, flushed, self.m, heavy)
        for s in list(buckets.keys()):
            items = buckets.pop(s)
            records[s] += len(items)
            yield pack_long(s)
            yield dumps(items)

    def __call__(self, split: int, iterator: Iterable[Any]) -> Iterator[bytes]:
        from pyspark.shuffle import get_used_memory
        m, limit = self.m, self.limit
        records = [0] * m
        heavy: Counter = Counter()
        crc, a1, b1, p = zlib.crc32, _A1, _B1, P
        seed_str, seed_int = _SEED_STR, _SEED_INT
        memo: dict[Any, int] | None = {}
        hits = 0
        buckets: dict[int, list] = defaultdict(list)
        # PySpark starts at min(10 n, 1000) records per flush; with m >> n buckets that gives
        # ~2 records per pickled chunk, so start at ~50 per group (memory is still checked).
        c, batch = 0, 50 * m
        kv: Any = _NO_RECORD
        try:
            for kv in iterator:
                k, v = kv  # unpacked as PySpark does: a non-pair fails here
                g = None
                if memo is not None:
                    try:
                        g = memo.get(k)
                    except TypeError:  # unhashable: raw_hash raises the clear error below
                        g = None
                if g is None:
                    t = type(k)
                    if t is str:
                        r = crc(k.encode("utf-8", "surrogatepass"), seed_str)
                    elif t is int:
                        r = crc(b"%d" % k, seed_int)
                    else:
                        r = raw_hash(k)
                    g = ((r * a1 + b1) % p) % m
                    if memo is not None:
                        size = len(memo)
                        if size >= _MEMO_PROBE and hits < size:
                            memo = None  # keys rarely repeat: the memo costs more than it saves
                        elif size < _MEMO_CAP:
                            memo[k] = g
                else:
                    hits += 1
                buckets[g].append((k, v))  # a tuple, as PySpark's loop makes
                c += 1
                # PySpark's chunking: bounded memory, chunks of about 1-10 MB.
                if (c % 1000 == 0 and get_used_memory() > limit) or c > batch:
                    n, size = len(buckets), 0
                    for d in self._flush(buckets, c, records, heavy):
                        size += len(d)
                        yield d
                    batch = next_batch(batch, size, n)  # size: chunks + 8-byte group ids
                    c = 0
        except (TypeError, ValueError, IndexError):
            # Outside the loop, so free per record; a valid pair here means the error
            # came from upstream (the iterator), which is re-raised as it was.
            bad = _bad_record(kv)
            if bad is None:
                raise
            raise bad from None

        yield from self._flush(buckets, c, records, heavy)
        if self.tally is not None:
            self.tally.add((np.asarray(records, dtype=np.int64),
                            dict(heavy.most_common(TOP_KEYS))))


def _bad_record(kv: Any) -> Exception | None:
    """The clear error for a record the group routing could not take, or None when ``kv``
    is a (key, value) pair whose key routes (the failure was not this record's)."""
    if kv is _NO_RECORD:  # the input failed before its first record
        return None
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


def zero_pass_options(rdd: Any, strategy: Any, params: dict[str, Any]) -> dict[str, Any] | None:
    """The keyword arguments of :func:`shuffle_by_groups` when an adapter call takes the
    zero-pass path, else None (the caller fits a partition function as before).

    The path applies to strategy "auto" (the default, ``strategy=None``) without a
    statistics parameter, or to any call with ``stats="map-output"``. The zero-pass keys
    (``min_gain``, ``num_groups``, ``balance``) are popped from ``params``. Without the
    bridge jar it logs one WARNING per process and returns None (the statistics pass).

    Examples
    --------
    >>> zero_pass_options(rdd, "mixed", {})  # doctest: +SKIP
    """
    from sparkbalance import strategies
    asked = params.get("stats") == MAP_OUTPUT
    if asked:
        params.pop("stats")
    if not isinstance(strategy, (str, type(None))):
        if asked:
            raise ValueError("stats='map-output' plans key groups itself; it takes a strategy "
                             f"name ('auto' or None), not a fitted {type(strategy).__name__}")
        return None
    spec = strategies.get(strategies.DEFAULT_STRATEGY if strategy is None else strategy)
    if spec.name != "auto":
        if asked:
            raise ValueError(f"stats='map-output' plans key groups from the shuffle's sizes: "
                             f"strategy must be 'auto' or None; got {strategy!r}")
        return None
    if any(params.get(k) is not None for k in _STATS_PARAMS):
        if asked:
            bad = sorted(k for k in _STATS_PARAMS if params.get(k) is not None)
            raise TypeError(f"stats='map-output' reads no other statistics; got {bad}")
        return None
    other = sorted(k for k in params if k not in _ZERO_PASS_PARAMS)
    if other:
        if asked:
            raise TypeError(f"stats='map-output' takes {', '.join(_ZERO_PASS_PARAMS)}; got "
                            f"{other}")
        return None  # Mixed's parameters given: the user wants the statistics path
    if not available(rdd.context):
        if not _warned[0]:
            _warned[0] = True
            _LOG.warning("sparkbalance: the JVM bridge (%s) could not be loaded, so strategy "
                         "'auto' gathers key statistics in an extra pass; start the session "
                         "with sparkbalance.configure(SparkSession.builder) for zero-pass "
                         "statistics", MAPSTATS_CLASS)
        return None
    options = {k: params.pop(k) for k in _ZERO_PASS_PARAMS if k in params}
    if "min_gain" in options:  # refused before the map stage runs, not after
        check_min_gain(options["min_gain"])
    return options
