"""Placement without repartitionById (Spark 3.5's path), checked on whichever Spark runs.

The route values must hash, by Spark's own ``hash`` (Murmur3, seed 42), onto their target
partition; the hash path must put every row exactly where its partition id says, in one
exchange, and the DataFrame adapters must give plain Spark's results on it.
"""
from __future__ import annotations

import numpy as np
import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from sparkbalance.spark.sql import dataframe as sbdf
from sparkbalance.spark.sql import join as df_join
from sparkbalance.spark.sql import placement


def test_python_murmur3_equals_sparks_hash(spark):
    vals = [0, 1, -1, 42, 2 ** 31 - 1, -2 ** 31] + list(range(1000, 1300, 7))
    got = spark.createDataFrame([(v,) for v in vals], "v int").select(
        "v", F.hash("v").alias("h")).collect()
    want = dict(zip(vals, placement.spark_hash_int_array(np.array(vals)).tolist()))
    assert {r["v"]: r["h"] for r in got} == want


@pytest.mark.parametrize("n", [1, 3, 8, 200])
def test_route_values_hash_onto_their_targets(n):
    v = placement.route_values(n)
    assert len(v) == n == len(set(v))
    assert (np.mod(placement.spark_hash_int_array(np.array(v)), n) == np.arange(n)).all()


@pytest.mark.parametrize("n", [1, 5, 64])
def test_the_hash_path_puts_every_row_on_its_partition(spark, n):
    df = spark.range(0, 2000).select((F.col("id") * 7919 % n).cast("int").alias("pid"),
                                     F.col("id"))
    placed = placement.place(df, n, "pid", by_id=False)
    rows = placed.select(F.spark_partition_id().alias("part"), "id").collect()
    assert len(rows) == 2000
    assert all(r["part"] == r["id"] * 7919 % n for r in rows)


@pytest.fixture
def hash_path(monkeypatch):
    """Every adapter as on Spark 3.5: no repartitionById."""
    monkeypatch.setattr(placement, "has_repartition_by_id", lambda df: False)


def test_adapters_on_the_hash_path_equal_plain_spark(spark, hash_path):
    rows = [(i % 3 if i % 4 else i % 17, i) for i in range(600)] + [(None, 5)]
    df = spark.createDataFrame(rows, "k int, v int")
    other = spark.createDataFrame([(k, k * 10) for k in range(-2, 20)], "k int, w int")
    g = sbdf.group_by(df, "k", num_partitions=4, strategy="mixed").agg(F.sum("v").alias("s"))
    plan = g._jdf.queryExecution().executedPlan().toString()
    assert plan.count("Exchange ") == 1, plan
    assertDataFrameEqual(g, df.groupBy("k").agg(F.sum("v").alias("s")))
    f = sbdf.fit_partitioner(df, 4, "k", strategy="mixed")
    placed = sbdf.repartition(df, 4, "k", partitioner=f)
    assert placed.columns == ["k", "v"]
    for r in placed.select(F.spark_partition_id().alias("p"), "k").collect():
        assert r["p"] == (0 if r["k"] is None else f(r["k"]))
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        for strategy in ("mixed", "split"):
            j = df_join.join_df(df, other, "k", num_partitions=4, strategy=strategy)
            assertDataFrameEqual(j, df.join(other, "k"))
        j = df_join.join_df(df, other, "k", num_partitions=4, strategy="hash")
        assert j._jdf.queryExecution().executedPlan().toString().count("Exchange ") == 2
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
