"""Bounded key statistics: top-k with exact heavy counts, totals for the rest, whatever the
number of distinct keys (DataFrame and RDD paths)."""
from __future__ import annotations

import numpy as np
import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from sparkbalance.spark.sql import dataframe as sbdf
from sparkbalance.spark.sql import keystats as df_keystats
from sparkbalance.spark.rdd import keystats

N = 4


def test_dataframe_stats_of_ten_million_keys_send_only_the_top_k(spark):
    """10^7 rows, ~9*10^6 distinct keys: three heavy keys (every 10th id, by id mod 3)."""
    n = 10 ** 7
    df = spark.range(n).select(
        F.when(F.col("id") % 10 == 0, -(F.col("id") % 3) - 1).otherwise(F.col("id")).alias("k"))
    s = df_keystats.key_stats(df, "k", max_keys=8)
    assert len(s) == 8  # what reached the driver: 8 keys (+1 probe row) and 2 totals
    # ids 10m with m % 3 == j: m in [0, 10^6): 333334 for j = 0, 333333 otherwise
    assert s.keys[:3].tolist() == [-1, -2, -3] or s.keys[:3].tolist() == [-1, -3, -2]
    heavy = dict(zip(s.keys[:3].tolist(), s.counts[:3].tolist()))
    assert heavy == {-1: 333334.0, -2: 333333.0, -3: 333333.0}
    assert np.all(s.counts[3:] == 1.0)
    assert s.data_count == n
    assert s.tail_count == n - s.total_count
    assert s.num_distinct == pytest.approx(9 * 10 ** 6 + 3, rel=0.04)  # HyperLogLog++


def test_dataframe_stats_list_every_key_below_the_bound(spark):
    df = spark.createDataFrame([(i % 7,) for i in range(100)], "k int")
    s = df_keystats.key_stats(df, "k", max_keys=7)
    assert sorted(s.as_dict().items()) == sorted(
        (k, float(sum(1 for i in range(100) if i % 7 == k))) for k in range(7))
    assert s.tail_count == 0 and s.num_distinct == 7
    with pytest.raises(ValueError, match="max_keys=0"):
        df_keystats.key_stats(df, "k", max_keys=0)


def test_bounded_stats_plan_a_placement_equal_to_plain_spark(spark):
    rows = [(0 if i % 3 == 0 else i, i) for i in range(3000)]
    df = spark.createDataFrame(rows, "k int, v int")
    s = df_keystats.key_stats(df, "k", max_keys=20)
    assert len(s) == 20 and s.keys[0] == 0 and s.counts[0] == 1000
    got = sbdf.group_by(df, "k", num_partitions=N, strategy="mixed", stats=s).sum("v")
    assertDataFrameEqual(got, df.groupBy("k").sum("v"))


def test_rdd_top_counts_send_o_k_entries_to_the_driver(sc):
    k, keys = 16, 200_000
    rdd = sc.parallelize(range(keys), 4).map(lambda i: ((-1 if i % 5 == 0 else i), None))
    counts = rdd.mapPartitions(keystats._count_partition).reduceByKey(keystats._add)
    sizes = keystats.top_summaries(counts, k).map(len).collect()
    assert len(sizes) == counts.getNumPartitions() and max(sizes) <= k
    s = keystats.top_counts(rdd, k)
    assert len(s) == k
    assert s.keys[0] == -1 and s.counts[0] == keys // 5  # the heavy key, exact
    assert s.data_count == keys
    assert s.num_distinct == keys - keys // 5 + 1


def test_rdd_default_statistics_equal_exact_counts_below_the_bound(sc):
    rdd = sc.parallelize([(i % 13, i) for i in range(500)], 3)
    bounded = keystats.gather_key_stats(rdd)
    assert bounded.as_dict() == keystats.exact_counts(rdd).as_dict()
    assert bounded.tail_count == 0 and bounded.num_distinct == 13
    sampled = keystats.gather_key_stats(rdd, sample_fraction=1.0, max_keys=4)
    assert len(sampled) == 4 and sampled.data_count == 500
    ss = keystats.gather_key_stats(rdd, method="spacesaving", capacity=4)
    assert ss.data_count == pytest.approx(500)


def test_rdd_bad_keys_still_named_on_the_bounded_path(sc):
    with pytest.raises(TypeError, match="unhashable|list"):
        keystats.gather_key_stats(sc.parallelize([([1], 1), (1, 2)], 2))


def test_max_keys_from_the_conf_key(spark, sc):
    """spark.sparkbalance.maxKeys bounds the statistics of both paths unless max_keys is
    given; 'all' lists every key; a bad value names its key before any job."""
    df = spark.createDataFrame([(i % 50,) for i in range(500)], "k int")
    rdd = sc.parallelize([(i % 50, 1) for i in range(500)], 2)
    key = "spark.sparkbalance.maxKeys"
    try:
        spark.conf.set(key, "5")
        assert len(df_keystats.key_stats(df, "k")) == 5
        assert len(keystats.gather_key_stats(rdd)) == 5
        assert len(df_keystats.key_stats(df, "k", max_keys=9)) == 9  # explicit wins
        spark.conf.set(key, "all")
        assert len(df_keystats.key_stats(df, "k")) == 50
        assert len(keystats.gather_key_stats(rdd)) == 50
        spark.conf.set(key, "many")
        with pytest.raises(ValueError, match="spark.sparkbalance.maxKeys='many'"):
            df_keystats.key_stats(df, "k")
    finally:
        spark.conf.unset(key)
    assert len(df_keystats.key_stats(df, "k")) == 50  # default 100,000: every key here


def test_join_stats_estimate_a_key_in_the_other_sides_tail(spark):
    """Left lists its hot key 0; on the right, 0 is one of 50 unlisted keys of 2 rows each:
    its output estimate uses the right tail's mean (2 rows), not 0 rows."""
    left = spark.createDataFrame([(0,)] * 40 + [(k,) for k in range(1, 6)], "k int")
    right = spark.createDataFrame([(100,)] * 9 + [(k,) for k in range(50) for _ in range(2)],
                                  "k int")
    s = df_keystats.join_stats(left, right, ["k"], max_keys=1)
    est = dict(zip(s.keys.tolist(), s.cost.tolist()))
    # key 0: 40 left + ~2 right rows, ~80 output rows (approx_count_distinct: within 5 %)
    assert est[0] == pytest.approx(40 + 2 + 80, rel=0.06)
    # key 100: right's listed hot key, in left's tail: 9 + ~1 row, ~9 output rows
    assert est[100] == pytest.approx(9 + 1 + 9, rel=0.06)
    # a side that lists every key adds exactly 0 for keys it does not hold
    full = df_keystats.join_stats(left, right, ["k"], max_keys=None)
    assert dict(zip(full.keys.tolist(), full.cost.tolist()))[100] == 9.0


def test_tail_mean_is_capped_by_the_lightest_listed_key():
    assert df_keystats.tail_mean(np.array([9.0, 5.0]), 12.0, 6.0) == 3.0
    assert df_keystats.tail_mean(np.array([9.0, 2.0]), 12.0, 3.0) == 2.0
    assert df_keystats.tail_mean(np.array([9.0]), 0.0, 1.0) == 0.0
