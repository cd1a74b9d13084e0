"""Bounded key statistics: what strategy "auto" reads where the shuffle cannot count for it.

With the JVM bridge the user's own shuffle counts the keys (:mod:`.mapstats`, zero passes).
Without it (Spark Connect, a platform that forbids adding class paths, an installation
without the jar) a full statistics pass would cost more than balancing earns back whenever
the keys turn out uniform (measured: 1.52x plain's wall time). So "auto" reads a bounded
sample instead: the first records of a few input partitions spread over the input
(:func:`sampled_partitions`), at most :data:`SAMPLE_RECORDS` records in all, in one small
job (``SparkContext.runJob`` on those partitions only: the other partitions are not
computed). Its cost does not grow with the input.

Only the keys heavy enough to unbalance a partition on their own are listed
(:func:`significant`: at least ``theta / 2`` of a partition's mean share of the sample);
everything else is the unlisted tail, which hash placement spreads evenly
(:class:`~sparkbalance.stats.keystats.KeyStats` ``tail_count``). Uniform keys then list
nothing and "auto" keeps plain hashing; a Zipf head is listed with a few percent of error
and Mixed places it.

The sample is the input's order: data clustered by key across partitions (sorted input)
shows only its sampled partitions' keys. Each partition's prefix is counted, so the
upstream work of a partition is paid only up to the records read (a Python pipeline stops
there); a shuffle upstream of the input is run in full, as any statistics would run it.

Examples
--------
>>> sampled_partitions(16, 4), sampled_partitions(2, 4)
([2, 6, 10, 14], [0, 1])
>>> significant(10_000, 16, 0.08)
25
"""
from __future__ import annotations

from itertools import islice
from typing import Any, Iterator

from sparkbalance.planning.base import DEFAULT_THETA
from sparkbalance.routing.base import check_num_partitions
from sparkbalance.stats.keystats import KeyStats
from sparkbalance.spark.rdd.keystats import STATS_JOB_GROUP, _BadKey, _local_counts, _to_stats

__all__ = ["bounded_key_stats", "sample_counts", "sampled_partitions", "significant",
           "listed_stats", "SAMPLE_RECORDS", "SAMPLE_PARTITIONS", "MIN_LISTED"]

#: Records the sample reads in all. At 10^4 a key of 1 % of the records is counted to
#: +-10 % (one standard deviation), and a Python task counts them in a few milliseconds.
SAMPLE_RECORDS: int = 10_000
#: Input partitions the sample reads (fewer when the input has fewer): one small job.
SAMPLE_PARTITIONS: int = 4
#: Fewest sampled records of a listed key: below it a count is mostly sampling noise.
MIN_LISTED: int = 5


def sampled_partitions(num_input: int, k: int = SAMPLE_PARTITIONS) -> list[int]:
    """``k`` input partitions spread evenly over ``num_input`` (the middle of each of ``k``
    equal runs), all of them when there are at most ``k``."""
    if num_input <= k:
        return list(range(num_input))
    return [(2 * i + 1) * num_input // (2 * k) for i in range(k)]


def significant(sample: int, num_partitions: int, theta: float = DEFAULT_THETA) -> int:
    """Fewest sampled records for a key to be listed: ``theta / 2`` of a partition's mean
    share of the sample (a lighter key cannot push a partition past θ on its own), and at
    least :data:`MIN_LISTED`."""
    return max(MIN_LISTED, int(theta * sample / (2 * num_partitions)))


def _prefix_counts(per_partition: int, num_partitions: int | None = None):
    def run(records: Iterator[Any]) -> Iterator[Any]:
        counts = _local_counts(islice(records, per_partition))
        if isinstance(counts, _BadKey):
            yield counts
            return
        # Keys seen once in a partition's prefix are tail whatever the other partitions
        # hold (k of them sum to k < MIN_LISTED): only their total travels.
        kept = {k: c for k, c in counts.items() if c > 1}
        homes = None
        if num_partitions is not None:   # PySpark's default partitionFunc, in the worker
            from pyspark.rdd import portable_hash   # (its string hash needs the workers' seed)
            homes = {k: portable_hash(k) % num_partitions for k in kept}
        yield (sum(counts.values()), kept, homes)
    return run


def listed_stats(counts: dict, sample: int, num_partitions: int,
                 theta: float = DEFAULT_THETA) -> KeyStats:
    """KeyStats of the keys of ``counts`` (sampled records per key) heavy enough to list
    (:func:`significant`), the rest of the ``sample`` as the tail.

    Examples
    --------
    >>> s = listed_stats({"hot": 500, "warm": 40, "cold": 3}, 1000, 4)
    >>> s.keys.tolist(), s.tail_count
    (['hot', 'warm'], 460.0)
    """
    floor = significant(sample, num_partitions, theta)
    rows = [(k, c) for k, c in counts.items() if c >= floor]
    rows.sort(key=lambda kc: -kc[1])
    stats = _to_stats(rows)
    return KeyStats(stats.keys, stats.counts, tail_count=float(sample - stats.total_count))


def bounded_key_stats(rdd: Any, num_partitions: int, *, theta: float | None = None,
                      records: int = SAMPLE_RECORDS, partitions: int = SAMPLE_PARTITIONS
                      ) -> KeyStats:
    """Key statistics of ``rdd`` from at most ``records`` records of at most ``partitions``
    input partitions (one job over those partitions, job group ``sparkbalance-stats``).

    Counts are of the sample (the plan weighs keys relative to each other; the tail
    holds the sample's unlisted records). A bad key (unhashable, NaN) fails here with the
    line :mod:`sparkbalance.spark.rdd.keystats` gives it.

    Examples
    --------
    >>> s = bounded_key_stats(sc.parallelize([("hot", 1)] * 900 + [(i, 1) for i in range(900)], 4), 4)  # doctest: +SKIP
    >>> s.keys.tolist(), s.tail_count                                        # doctest: +SKIP
    (['hot'], 900.0)
    """
    n = check_num_partitions(num_partitions)
    theta = DEFAULT_THETA if theta is None else float(theta)
    total, merged, _ = sample_counts(rdd, records=records, partitions=partitions)
    return listed_stats(merged, total, n, theta)


def sample_counts(rdd: Any, *, records: int = SAMPLE_RECORDS,
                  partitions: int = SAMPLE_PARTITIONS, homes_for: int | None = None
                  ) -> tuple[int, dict, dict]:
    """``(records read, {key: sampled records}, {key: home})`` of the bounded sample of
    :func:`bounded_key_stats` (one job, job group ``sparkbalance-stats``). Keys seen once in
    a partition's prefix are left out of the counts (they are tail, see
    :func:`listed_stats`); ``homes_for=n`` also gives each counted key the partition of
    ``n`` PySpark's default ``partitionFunc`` sends it to (computed in the workers, whose
    string hash is seeded as the shuffle's), else the homes are empty.

    Examples
    --------
    >>> sample_counts(sc.parallelize([("a", 1)] * 6 + [("b", 1)], 2), homes_for=4)  # doctest: +SKIP
    (7, {'a': 6}, {'a': 1})
    """
    from sparkbalance.spark.session.jobs import sparkbalance_job_group
    parts = sampled_partitions(rdd.getNumPartitions(), max(1, int(partitions)))
    if not parts:
        return 0, {}, {}
    per = max(1, int(records) // len(parts))
    with sparkbalance_job_group(rdd.context, STATS_JOB_GROUP,
                                f"sparkbalance: auto's bounded sample ({per} records of "
                                f"{len(parts)} partitions)"):
        got = rdd.context.runJob(rdd, _prefix_counts(per, homes_for), parts)
    total, merged, homes = 0, {}, {}
    for part in got:
        if isinstance(part, _BadKey):
            part.raise_()
        seen, counts, part_homes = part
        total += seen
        for k, c in counts.items():
            merged[k] = merged.get(k, 0) + c
        homes.update(part_homes or {})
    return total, merged, homes
