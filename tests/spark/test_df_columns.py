"""DataFrame adapters take Column objects as keys, as df.repartition / df.groupBy do."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

import sparkbalance as sb
from sparkbalance.spark.sql import dataframe as sbdf
from sparkbalance.spark.sql.key_columns import key_columns

N = 4


@pytest.fixture(scope="module")
def df(spark):
    rows = [(0 if i % 3 == 0 else i % 97, f"U{i % 5}", i % 11) for i in range(2000)]
    return spark.createDataFrame(rows, "k int, s string, v int").coalesce(1).cache()


def test_references_become_names_and_expressions_helpers(df):
    kc = key_columns(df, ["k", F.col("s"), df["v"], F.col("k") % 7])
    assert kc.names == ["k", "s", "v", "__sb_key3"]
    assert kc.hidden == ["__sb_key3"] and kc.output[3] == "(k % 7)"
    with pytest.raises(TypeError, match="expected a column name"):
        key_columns(df, [3])


@pytest.mark.parametrize("strategy", ["mixed", "keygroups", "hash"])
def test_repartition_by_columns_equals_plain(df, strategy):
    for key in (F.col("k"), F.col("k") % 7, F.lower("s")):
        out = sbdf.repartition(df, N, key, strategy=strategy)
        assert out.columns == df.columns
        assert out.rdd.getNumPartitions() == N
        assertDataFrameEqual(out, df)
    # rows of one expression key share one partition
    out = sbdf.repartition(df, N, F.col("k") % 7, strategy=strategy)
    pids = out.select((F.col("k") % 7).alias("g"), F.spark_partition_id().alias("p")).distinct()
    assert pids.groupBy("g").count().where("count > 1").count() == 0


@pytest.mark.parametrize("strategy", ["mixed", "keygroups"])
def test_group_by_columns_equals_plain(df, strategy):
    cases = [[F.col("k")], [F.col("k") % 7], [F.lower("s"), "v"], [(F.col("k") + 1).alias("k1")]]
    for keys in cases:
        g = sbdf.group_by(df, *keys, num_partitions=N, strategy=strategy)
        assertDataFrameEqual(g.count(), df.groupBy(*keys).count())
        assertDataFrameEqual(g.agg(F.sum("v").alias("t")), df.groupBy(*keys).agg(
            F.sum("v").alias("t")))
        assert g.sum().columns == df.groupBy(*keys).sum().columns
        assertDataFrameEqual(g.sum(), df.groupBy(*keys).sum())


def test_fit_partitioner_takes_a_column(df):
    f = sb.fit_partitioner(df, N, F.col("k") % 7, strategy="mixed")
    assert f.num_partitions == N and 0 <= f(3) < N


def test_grouped_map_functions_take_expression_keys(df):
    # Full contract against plain Spark: tests/spark/test_grouped_exprs.py.
    g = sbdf.group_by(df, F.col("k") % 7, num_partitions=N, strategy="hash")
    out = g.applyInPandas(lambda pdf: pdf, "k int, s string, v int")
    assert out.columns == df.columns
    assertDataFrameEqual(out, df)
