"""Which withColumn(s) calls the session-wide mode treats as windows, and the gain it
predicts for splitting them (Spark-free: Spark Connect Columns are built without a server)."""
from __future__ import annotations

import numpy as np
import pytest

from sparkbalance.spark.enable.check import MIN_HOT_SAMPLES, listed_gain, split_gain

CF = pytest.importorskip("pyspark.sql.connect.functions", exc_type=ImportError)  # 3.5 without grpc
CW = pytest.importorskip("pyspark.sql.connect.window", exc_type=ImportError).Window


def _partitions(columns):
    from sparkbalance.spark.enable.windows import window_partitions
    got = window_partitions(columns)
    return None if got is None else [tuple(str(c) for c in p) for p in got]


def test_plain_columns_are_not_windows():
    assert _partitions({"x": CF.col("v") + 1, "y": CF.lit(3)}) is None


def test_each_distinct_partitioning_once_in_first_seen_order():
    by_k = CW.partitionBy("k").orderBy("t")
    got = _partitions({"a": CF.col("v") * 2,
                       "rn": CF.row_number().over(by_k),
                       "s": CF.sum("v").over(by_k.rowsBetween(-3, 0)),
                       "r": CF.rank().over(CW.partitionBy("u", CF.col("k") % 3).orderBy("t")),
                       "all": CF.count("v").over(CW.orderBy("t"))})
    assert got == [(str(CF.col("k")),), (str(CF.col("u")), str(CF.col("k") % 3)), ()]


def test_a_window_inside_an_expression_is_left_to_spark():
    # only a top-level window function is handed to with_window_columns
    assert _partitions({"x": CF.rank().over(CW.partitionBy("k").orderBy("t")) + 1}) is None


def test_split_gain_counts_the_hot_key_itself_as_splittable():
    # one key of 60 % over 4 partitions: key placement cannot go below 60, a split can (25)
    counts, homes = [600], [1]
    assert listed_gain(counts, homes, 1000, 4) == pytest.approx((600 + 100) / 600)
    assert split_gain(counts, homes, 1000, 4) == pytest.approx((600 + 100) / 250)


def test_split_gain_of_uniform_keys_is_exactly_one():
    rng = np.random.default_rng(3)
    counts = rng.integers(1, MIN_HOT_SAMPLES, 500)
    assert split_gain(counts, np.arange(500) % 8, int(counts.sum()), 8) == 1.0
