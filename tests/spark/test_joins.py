"""``sb.join``: one name for the RDD join and the DataFrame join, chosen by the sides' type."""
from __future__ import annotations

import pytest
from pyspark.sql import DataFrame
from pyspark.testing import assertDataFrameEqual

import sparkbalance as sb
from sparkbalance.spark.session.jobs import next_job_id

needs_repartition_by_id = pytest.mark.skipif(
    not hasattr(DataFrame, "repartitionById"),
    reason="DataFrame adapters need DataFrame.repartitionById (Spark >= 4.1)")


def test_two_pair_rdds_join_as_rdd_join(sc):
    left = sc.parallelize([(0, "hot")] * 40 + [(k, f"v{k}") for k in range(1, 20)], 3)
    right = sc.parallelize([(k, k * 10) for k in range(0, 25, 2)], 2)
    got = sb.join(left, right, 4, strategy="mixed")
    assert got.getNumPartitions() == 4
    assert sorted(got.collect()) == sorted(left.join(right).collect())


@needs_repartition_by_id
def test_two_dataframes_join_as_dataframe_join(spark):
    clicks = spark.createDataFrame([(0, i) for i in range(30)] + [(k, k) for k in range(1, 9)],
                                   "user int, amount int")
    users = spark.createDataFrame([(k, f"u{k}") for k in range(0, 6)], "user int, name string")
    for strategy in ("mixed", "split"):
        got = sb.join(clicks, users, "user", num_partitions=4, strategy=strategy)
        assertDataFrameEqual(got, clicks.join(users, "user"))
    left = sb.join(clicks, users, "user", "left", num_partitions=4, strategy="split")
    assertDataFrameEqual(left, clicks.join(users, "user", "left"))


def test_an_rdd_and_a_dataframe_are_refused_before_any_job(spark, sc):
    rdd = sc.parallelize([(1, 2)])
    df = spark.createDataFrame([(1, "a")], "k int, v string")
    before = next_job_id(sc)
    with pytest.raises(TypeError, match=r"left=RDD, right=DataFrame.*both"):
        sb.join(rdd, df, 2)
    with pytest.raises(TypeError, match=r"left=DataFrame, right=RDD"):
        sb.join(df, rdd, "k")
    with pytest.raises(TypeError, match=r"on='k'.*DataFrames"):
        sb.join(rdd, rdd, "k")
    with pytest.raises(TypeError, match=r"got how"):
        sb.join(rdd, rdd, 2, how="left")
    assert next_job_id(sc) == before
