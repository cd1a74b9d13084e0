"""Per-key statistics of a DataFrame, by one Spark SQL aggregation (no Python UDF).

The DataFrame counterpart of :mod:`sparkbalance.spark.rdd.keystats` (the RDD one): distinct
non-null keys and their record counts, exact or on a Bernoulli sample scaled up by
``1 / fraction`` (Horvitz-Thompson). A multi-column key is the Python tuple of its values,
a BINARY value is ``bytes``, so the keys hash exactly as the rows do in
:mod:`sparkbalance.spark.sql.hash_columns`. Rows with a null key column are left out: they cannot be
hashed and always go to one fixed partition.

The driver's memory is bounded independently of the number of keys: the aggregation runs in
the JVM and only the ``max_keys`` heaviest keys come back (Spark's ``TakeOrderedAndProject``:
each task keeps its own top ``max_keys``, the driver merges those). Their counts are exact
(sampled: estimated); the records of all other keys and the number of distinct keys come back
as two totals (:attr:`KeyStats.tail_count`, :attr:`KeyStats.num_distinct`), computed only when
the key space exceeds ``max_keys``, by a second job that scans the keys without a shuffle
(a row count and Spark's HyperLogLog++ ``approx_count_distinct``, relative error
:data:`DISTINCT_RSD`).

Examples
--------
>>> s = key_stats(df, "user")                                   # doctest: +SKIP
>>> s.top(3)                                                    # doctest: +SKIP
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, NamedTuple, Sequence

import numpy as np

from sparkbalance.stats.keystats import KeyStats
from sparkbalance.spark.sql import hash_columns as sqlhash
from sparkbalance.spark.sql.keysample import (SampledKeys, first_take_partitions, py_value,
                                              sample_keys)
# DEFAULT_MAX_KEYS (100,000; spark.sparkbalance.maxKeys): beyond that a routing table would
# not fit a SQL literal anyway, and the tail of a larger key space hashes evenly.
from sparkbalance.spark.session.conf import DEFAULT_MAX_KEYS, FROM_CONF, resolve_max_keys

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

__all__ = ["key_stats", "key_counts", "join_stats", "key_array", "bounded_key_stats", "py_value",
           "first_take_partitions", "first_look_records", "FIRST_LOOK_MIN", "look_floor",
           "LOOK_MIN_HITS",
           "KeyCounts", "SAMPLE_SEED", "DEFAULT_MAX_KEYS", "DISTINCT_RSD"]

_LOG = logging.getLogger("sparkbalance")

#: Seed of sampled statistics: the same sample, hence the same plan, on every run.
SAMPLE_SEED: int = 17
#: Relative standard deviation of the distinct-key count of a truncated listing.
DISTINCT_RSD: float = 0.01
_N = "__sb_n"


class KeyCounts(NamedTuple):
    """What one statistics aggregation returns: listed keys, their counts, the rest."""

    keys: list
    counts: np.ndarray
    #: Records of the keys not listed (0 when every key is).
    tail_count: float
    #: Distinct non-null keys (of the sample, when sampled; approximate when truncated).
    num_distinct: float


def _check_max_keys(max_keys: int | None) -> int | None:
    if max_keys is None:
        return None
    if isinstance(max_keys, bool) or not isinstance(max_keys, int) or max_keys < 1:
        raise ValueError(f"max_keys={max_keys!r}; expected an int >= 1 or None (every key)")
    return max_keys


def key_array(keys: list) -> np.ndarray:
    """Keys as the array :class:`KeyStats` takes: ``int64`` when all are ints, else objects.

    Examples
    --------
    >>> key_array([(1, "a"), (2, "b")])[0]
    (1, 'a')
    """
    if keys and all(type(k) is int for k in keys):
        return np.asarray(keys, dtype=np.int64)
    out = np.empty(len(keys), dtype=object)
    for i, k in enumerate(keys):  # element-wise: tuples must stay tuples
        out[i] = k
    return out


def key_counts(df: "DataFrame", cols: Sequence[str], sample_fraction: float | None = None,
               max_keys: int | None = FROM_CONF) -> KeyCounts:
    """The heaviest ``max_keys`` non-null keys of ``df`` over ``cols``, their record counts
    and the totals of the rest (one job; a second, shuffle-free one when there are more keys).

    ``max_keys=None`` collects every distinct key (driver memory grows with the key space).
    Keys come heaviest first, ties in key order, so the listing is deterministic.

    Examples
    --------
    >>> key_counts(spark.createDataFrame([(1,), (1,)], "k int"), ["k"])   # doctest: +SKIP
    KeyCounts(keys=[1], counts=array([2.]), tail_count=0.0, num_distinct=1.0)
    """
    from pyspark.sql import functions as F
    cols = sqlhash.check_key_columns(df, cols)
    max_keys = _check_max_keys(resolve_max_keys(df, max_keys))
    src = df.select(*cols).where(~sqlhash.any_null(df, cols))
    if sample_fraction is not None:
        src = src.sample(withReplacement=False, fraction=sample_fraction, seed=SAMPLE_SEED)
    agg = src.groupBy(*cols).agg(F.count(F.lit(1)).alias(_N))
    if max_keys is None:
        rows = agg.collect()
    else:
        # One more than asked: fewer than max_keys + 1 rows means every key is listed.
        rows = agg.orderBy(F.col(_N).desc(), *cols).limit(max_keys + 1).collect()
    truncated = max_keys is not None and len(rows) > max_keys
    rows = rows[:max_keys] if truncated else rows
    single = len(cols) == 1
    keys = [(py_value(r[0]) if single else tuple(py_value(v) for v in r[:-1])) for r in rows]
    counts = np.fromiter((r[-1] for r in rows), dtype=np.float64, count=len(rows))
    tail, distinct = 0.0, float(len(rows))
    if truncated:
        refs = [sqlhash.column_ref(src, c) for c in cols]
        key = refs[0] if single else F.struct(*refs)
        total = src.agg(F.count(F.lit(1)).alias("records"),
                        F.approx_count_distinct(key, DISTINCT_RSD).alias("keys")).first()
        tail = max(0.0, float(total["records"]) - float(counts.sum()))
        distinct = max(float(total["keys"]), float(len(rows)) + 1.0)
    if sample_fraction is not None:
        # Horvitz-Thompson scale-up to the whole data (the distinct count stays the sample's:
        # a lower bound of the data's)
        counts = counts / sample_fraction
        tail = tail / sample_fraction
    return KeyCounts(keys, counts, tail, distinct)


def key_stats(df: "DataFrame", *cols: str, sample_fraction: float | None = None,
              max_keys: int | None = FROM_CONF) -> KeyStats:
    """Per-key record counts of ``df`` over key ``cols`` (null keys left out).

    One aggregation over the data (or over a Bernoulli sample of ``sample_fraction``, with
    counts scaled by ``1 / sample_fraction``). A multi-column key is a Python tuple. Only the
    ``max_keys`` heaviest keys are listed; the others are summed in ``tail_count`` and
    ``num_distinct`` counts all (see :func:`key_counts`).

    Examples
    --------
    >>> s = key_stats(spark.createDataFrame([(1,), (1,), (2,)], "k int"), "k")  # doctest: +SKIP
    >>> sorted(s.as_dict().items())                                            # doctest: +SKIP
    [(1, 2.0), (2, 1.0)]
    """
    kc = key_counts(df, cols, sample_fraction, max_keys)
    return KeyStats(key_array(kc.keys), kc.counts, tail_count=kc.tail_count,
                    num_distinct=kc.num_distinct)


def bounded_key_stats(df: "DataFrame", cols: Sequence[str], num_partitions: int, *,
                      theta: float | None = None, records: int | None = None) -> KeyStats:
    """Strategy "auto"'s statistics of a DataFrame: the bounded key sample of
    :func:`sparkbalance.spark.sql.keysample.sample_keys` — a first look at the first
    :func:`first_look_records` non-null keys of input partition 0 and, only when that look
    shows a key at :func:`look_floor`, a sample spread over the other input partitions up
    to ``records`` rows in all (default
    :data:`~sparkbalance.spark.rdd.bounded.SAMPLE_RECORDS`) — counted on the driver;
    only the keys heavy enough to unbalance a partition are listed, the rest is the
    tail (:func:`sparkbalance.spark.rdd.bounded.listed_stats`).

    The first look is the fewest rows in which a key at the listing floor shows
    :data:`~sparkbalance.spark.rdd.bounded.MIN_LISTED` times on average (2,000 rows at
    n = 16): uniform keys list nothing there, and "auto" keeps Spark's own exchange having
    computed one partition's prefix (one job, one task; see
    ``integration/benchmarks/bench_bridge_on_demand.py --profile``). Skewed keys pay the
    look and then the spread (one more job, no row read twice), which the balancing they
    enable earns back.

    Keys computed in Python (a Python RDD under ``createDataFrame``, ``mapInPandas``, a
    Python UDF below the key: :mod:`sparkbalance.spark.sql.python_source`) are not sampled:
    a prefix of them re-runs the Python work of whole partitions, which plain hashing does
    not pay; "auto" keeps Spark's own exchange and logs which step it saw.

    A bounded cost whatever the input's size, and DataFrame operations only (the spread
    reads the JVM's rows of the chosen partitions: classic Spark). A shuffle upstream of
    ``df`` is run in full.

    Examples
    --------
    >>> df = spark.range(10_000).selectExpr("IF(id % 2 = 0, 0, id) AS k")   # doctest: +SKIP
    >>> bounded_key_stats(df, ["k"], 4).keys.tolist()                       # doctest: +SKIP
    [0]
    """
    from sparkbalance.spark.rdd.bounded import SAMPLE_RECORDS
    from sparkbalance.planning.base import DEFAULT_THETA
    cols = sqlhash.check_key_columns(df, cols)
    n = int(num_partitions)
    theta = DEFAULT_THETA if theta is None else float(theta)
    limit = SAMPLE_RECORDS if records is None else int(records)
    look = min(first_look_records(n, theta), limit)
    got = sample_keys(df, cols, n, rows=limit, look=look,
                      could_matter=lambda c, rows: c.max() >= look_floor(rows, n, theta))
    stats = _listed(got, n, theta)
    from sparkbalance.spark.report.log_line import log_info
    if got.skipped is not None:
        log_info(_LOG, "sparkbalance: auto: the key columns %s are computed in Python (%s): "
                 "a sample would run that Python work again, so no sample: plain hashing, "
                 "Spark's own exchange (give stats= or a named strategy to balance them)",
                 ", ".join(cols), got.skipped)
    elif len(stats) == 0:
        log_info(_LOG, "sparkbalance: auto: no key of %d sampled rows (%s) is heavy enough "
                 "to unbalance one of %d partitions: plain hashing, Spark's own exchange",
                 got.rows, "spread over the input" if got.spread else
                 "the first input partition", n)
    return stats


def first_look_records(num_partitions: int, theta: float | None = None) -> int:
    """Rows of auto's first look: the fewest in which a key at the listing floor
    (``theta / 2`` of a partition's mean share,
    :func:`sparkbalance.spark.rdd.bounded.significant`) shows ``MIN_LISTED`` times on
    average, ``MIN_LISTED * 2 n / theta``; at least :data:`FIRST_LOOK_MIN`.

    Examples
    --------
    >>> first_look_records(16, 0.08), first_look_records(2, 0.08)
    (2000, 1000)
    """
    from sparkbalance.spark.rdd.bounded import MIN_LISTED
    from sparkbalance.planning.base import DEFAULT_THETA
    theta = DEFAULT_THETA if theta is None else float(theta)
    if not theta > 0:
        raise ValueError(f"theta={theta!r}; expected theta > 0")
    return max(FIRST_LOOK_MIN, int(np.ceil(MIN_LISTED * 2 * int(num_partitions) / theta)))


#: Fewest rows of a first look (below it a heavy key's count is mostly noise).
FIRST_LOOK_MIN: int = 1_000
#: The look's floor where theta allows it (:func:`look_floor`).
LOOK_MIN_HITS: int = 8


def look_floor(rows: int, num_partitions: int, theta: float) -> int:
    """Fewest times auto's look must see a key before the spread runs: the listing floor
    (:func:`sparkbalance.spark.rdd.bounded.significant`), raised to :data:`LOOK_MIN_HITS`
    as long as a key seen fewer times holds under ``theta`` of a partition's mean share
    (``theta rows / n`` rows), so a plan without it stays within its tolerance.

    The listing floor alone (5 or 6 rows of a look of 1,000-1,250) is reached by chance
    among many uniform keys (1,000 keys of 1.25 expected rows each: a key seen 6 times in
    most looks), which then paid the spread for nothing; 8 is reached by chance in ~5 % of
    such looks.

    Examples
    --------
    >>> look_floor(1250, 8, 0.08), look_floor(10_000, 200, 0.08)
    (8, 5)
    """
    from sparkbalance.spark.rdd.bounded import significant
    within = int(theta * rows / int(num_partitions))
    return max(significant(rows, num_partitions, theta), min(LOOK_MIN_HITS, within))


def _listed(got: SampledKeys, num_partitions: int, theta: float) -> KeyStats:
    from sparkbalance.spark.rdd.bounded import listed_stats
    stats = listed_stats(dict(zip(got.keys, got.counts.tolist())), got.rows, num_partitions,
                         theta)
    return KeyStats(key_array(list(stats.keys)), stats.counts, tail_count=stats.tail_count)


def join_stats(left: "DataFrame", right: "DataFrame", on: Sequence[str],
               sample_fraction: float | None = None, max_keys: int | None = FROM_CONF
               ) -> KeyStats:
    """Keys of both join sides; counts = left + right rows, cost = those + output rows.

    The output of key k is ``left(k) * right(k)`` rows, the work a skewed join piles on one
    partition; two aggregation jobs (one per side). With bounded statistics a key listed on
    one side only is in the other side's tail there: it counts that tail's mean rows per key,
    capped at the lightest key listed on that side (0 when that side lists every key), so a
    hot key of one side still carries its output estimate.

    Examples
    --------
    >>> s = join_stats(clicks, users, ["user"])     # doctest: +SKIP
    >>> s.cost[0] == s.counts[0] + l0 * r0          # doctest: +SKIP
    """
    lk, lc, lt, ld = key_counts(left, on, sample_fraction, max_keys)
    rk, rc, rt, rd = key_counts(right, on, sample_fraction, max_keys)
    index: dict[Any, int] = {}
    keys: list = []
    for k in lk + rk:
        if k not in index:
            index[k] = len(keys)
            keys.append(k)
    lv = np.full(len(keys), tail_mean(lc, lt, ld))
    rv = np.full(len(keys), tail_mean(rc, rt, rd))
    lv[[index[k] for k in lk]] = lc
    rv[[index[k] for k in rk]] = rc
    return KeyStats(key_array(keys), lv + rv, cost=lv + rv + lv * rv, tail_count=lt + rt)


def tail_mean(counts: np.ndarray, tail_count: float, num_distinct: float) -> float:
    """Estimated rows of one unlisted key: the tail's mean, at most the lightest listed key.

    Examples
    --------
    >>> tail_mean(np.array([9.0, 5.0]), 12.0, 6.0)
    3.0
    >>> tail_mean(np.array([9.0, 2.0]), 12.0, 3.0)
    2.0
    >>> tail_mean(np.array([9.0]), 0.0, 1.0)
    0.0
    """
    unlisted = num_distinct - len(counts)
    if tail_count <= 0 or unlisted <= 0:
        return 0.0
    mean = tail_count / unlisted
    return float(min(mean, counts.min())) if len(counts) else float(mean)
