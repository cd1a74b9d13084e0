"""sb.enable and window functions: ``withColumn``/``withColumns`` over a skewed partition
key go through with_window_columns, equal to plain Spark (column order, non-window columns,
several specs); uniform keys and non-window calls stay Spark's own."""
from __future__ import annotations

import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

import sparkbalance as sb
from sparkbalance.spark.enable import decisions, is_installed
from sparkbalance.spark.session import conf
from sparkbalance.spark.window.payoff import SPLIT_CONF


@pytest.fixture(autouse=True)
def _plain_after(spark):
    spark.conf.set(SPLIT_CONF, "always")   # split hot keys of small data (payoff's override)
    yield
    sb.disable(spark)
    assert not is_installed()
    spark.conf.unset(SPLIT_CONF)
    spark.conf.unset(conf.CONF_ENABLED)


@pytest.fixture(scope="module")
def events(spark):
    # key 0 holds half the rows, key 1 a quarter; 40 cold keys share the rest
    rows = [(0 if i % 2 == 0 else (1 if i % 4 == 1 else 100 + i % 40), i, i % 7)
            for i in range(800)]
    return spark.createDataFrame(rows, "k int, t long, v long").repartition(2).cache()


def _plain(df, columns):
    sb.disable()
    return df.withColumns(columns).collect()


def test_a_skewed_window_column_is_split_and_equal(spark, events):
    col = F.row_number().over(Window.partitionBy("k").orderBy("t"))
    expected = events.withColumn("rn", col)
    rows = expected.collect()
    sb.enable(spark)
    got = events.withColumn("rn", col)
    last = decisions()[-1]
    assert (last.call, last.balanced) == ("DataFrame.withColumn", True), last
    assert last.gain > 1.25 and last.keys == ("Column<'k'>",)
    assert got.columns == ["k", "t", "v", "rn"]
    assertDataFrameEqual(got, rows)


def test_several_specs_mixed_with_plain_columns_equal_spark(spark, events):
    by_k = Window.partitionBy("k").orderBy("t")
    columns = {"v": F.col("v") * 10,                                   # replaced in place
               "s": F.sum("v").over(by_k.rowsBetween(-3, 0)),
               "d": F.col("t") + 1,
               "r": F.rank().over(Window.partitionBy("v").orderBy("t")),
               "c": F.count("t").over(Window.partitionBy("k"))}
    expected = _plain(events, columns)
    sb.enable(spark)
    got = events.withColumns(columns)
    last = decisions()[-1]
    assert (last.call, last.balanced) == ("DataFrame.withColumns", True), last
    assert got.columns == ["k", "t", "v", "s", "d", "r", "c"]
    assertDataFrameEqual(got, expected)


def test_uniform_window_keys_and_plain_columns_stay_spark(spark):
    # computed by the JVM (a DataFrame of a Python list is a Python RDD scan: not sampled)
    df = spark.range(800).selectExpr("CAST(id % 200 AS INT) AS k", "id AS t")
    col = F.lag("t").over(Window.partitionBy("k").orderBy("t"))
    sb.enable(spark)
    seen = len(decisions())
    df.withColumn("x", F.col("t") * 2)              # no window: no check, no decision
    assert len(decisions()) == seen
    got = df.withColumn("prev", col)
    last = decisions()[-1]
    assert (last.balanced, last.gain) == (False, 1.0), last
    assertDataFrameEqual(got, _plain(df, {"prev": col}))
