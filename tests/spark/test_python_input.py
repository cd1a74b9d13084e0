"""Strategy "auto" and the session-wide mode on keys a Python worker computes: no sample
re-runs that Python work (it would cost whole partitions of it: the worker runs ahead of
the JVM's limit), the call keeps Spark's own exchange, says why, and equals plain Spark.

Each Python step below appends one line per call to a file (a counter the workers share
with the test: local executors, one file system), so the test counts the Python work the
planning ran, not a Spark metric.
"""
from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

import sparkbalance as sb
from sparkbalance.spark.enable import decisions
from sparkbalance.spark.session import conf
from sparkbalance.spark.session.jobs import next_job_id
from sparkbalance.spark.sql.keysample import sample_keys
from sparkbalance.spark.sql.python_source import RDD_SCAN, python_source

N = 4
ROWS = 4_000
PARTS = 4


def _calls(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def _skewed(i: int) -> int:
    return 7 if i % 2 else i         # key 7: half the rows, enough to be balanced


def _rdd_frame(spark, path: Path):
    """A DataFrame over a Python RDD: every row made and converted by a Python worker."""
    def gen(index, it):
        with open(path, "a") as f:
            f.write(f"partition {index}\n")
        for i in it:
            yield (_skewed(i), i)
    rdd = spark.sparkContext.parallelize(range(ROWS), PARTS).mapPartitionsWithIndex(gen)
    return spark.createDataFrame(rdd, "k long, v long")


def _pandas_frame(spark, path: Path):
    """Keys made by a mapInPandas step over JVM rows."""
    def keyed(batches):
        for pdf in batches:
            with open(path, "a") as f:
                f.write(f"batch {len(pdf)}\n")
            yield pd.DataFrame({"k": [_skewed(int(i)) for i in pdf["id"]], "v": pdf["id"]})
    return spark.range(0, ROWS, numPartitions=PARTS).mapInPandas(keyed, "k long, v long")


FRAMES = {"createDataFrame(rdd)": (_rdd_frame, RDD_SCAN),
          "mapInPandas": (_pandas_frame, "MapInPandas")}


@pytest.mark.parametrize("kind", sorted(FRAMES))
def test_auto_takes_no_sample_of_python_computed_keys(spark, sc, tmp_path, caplog, kind):
    make, step = FRAMES[kind]
    counter = tmp_path / "calls"
    df = make(spark, counter)
    assert python_source(df.select("k")) == step
    j0 = next_job_id(sc)
    with caplog.at_level(logging.INFO, logger="sparkbalance"):
        out = sb.repartition(df, N, "k")
    # deciding ran no job and no Python work, and said which step it saw
    assert next_job_id(sc) == j0
    assert _calls(counter) == 0
    assert any("computed in Python" in r.getMessage() and step in r.getMessage()
               for r in caplog.records)
    # Spark's own exchange: the plan of df.repartition(N, "k"), rows equal plain Spark's
    plain = df.repartition(N, "k")
    assert out.rdd.getNumPartitions() == N
    assertDataFrameEqual(out, plain)
    assert (out.withColumn("p", F.spark_partition_id()).groupBy("k").agg(
        F.countDistinct("p").alias("parts")).where("parts > 1").count() == 0)
    # the job computes each Python partition once, as plain Spark's does
    before = _calls(counter)
    out.groupBy(F.spark_partition_id()).count().collect()
    ran = _calls(counter) - before
    before = _calls(counter)
    plain.groupBy(F.spark_partition_id()).count().collect()
    assert ran == _calls(counter) - before


def test_sample_keys_says_what_it_skipped(spark, tmp_path):
    got = sample_keys(_rdd_frame(spark, tmp_path / "calls"), ["k"], N, rows=1_000, look=100,
                      could_matter=lambda c, r: True)
    assert (got.rows, got.spread, got.skipped, got.keys) == (0, False, RDD_SCAN, [])


def test_jvm_computed_keys_beside_an_unused_udf_are_still_sampled(spark, tmp_path):
    """A Python UDF the key does not read is pruned from the sampled projection."""
    counter = tmp_path / "calls"

    @F.udf("long")
    def tap(v):
        with open(counter, "a") as f:
            f.write("row\n")
        return v
    df = (spark.range(0, ROWS, numPartitions=PARTS)
          .selectExpr("IF(id % 2 = 1, 7, id) AS k", "id AS v").withColumn("u", tap("v")))
    assert python_source(df.select("k")) is None
    assert python_source(df.select("u")) is not None
    got = sb.repartition(df, N, "k")
    assert _calls(counter) == 0
    assert got.drop("u").count() == ROWS


def test_cached_python_input_is_read_not_computed(spark, tmp_path):
    df = _rdd_frame(spark, tmp_path / "calls").cache()
    try:
        df.count()
        assert python_source(df.select("k")) is None
        got = sample_keys(df, ["k"], N, rows=1_000, look=100, could_matter=lambda c, r: True)
        assert got.skipped is None and got.rows > 0 and got.keys[0] == 7
    finally:
        df.unpersist()


def test_a_checkpoint_of_python_rows_is_the_jvm_s(spark, tmp_path):
    df = _rdd_frame(spark, tmp_path / "calls").localCheckpoint()
    assert python_source(df.select("k")) is None


@pytest.fixture
def enabled(spark):
    sb.enable(spark)
    yield
    sb.disable(spark)
    spark.conf.unset(conf.CONF_ENABLED)


@pytest.mark.parametrize("kind", sorted(FRAMES))
def test_enabled_repartition_of_python_keys_stays_plain_without_running_them(
        spark, sc, tmp_path, enabled, kind):
    make, step = FRAMES[kind]
    counter = tmp_path / "calls"
    df = make(spark, counter)
    j0 = next_job_id(sc)
    out = df.repartition(N, "k")
    assert next_job_id(sc) == j0 and _calls(counter) == 0
    last = decisions()[-1]
    assert (last.call, last.balanced, last.sampled_rows) == ("DataFrame.repartition", False, 0)
    assert "computed in Python" in last.reason and step in last.reason
    sb.disable(spark)
    assertDataFrameEqual(out, df.repartition(N, "k"))
