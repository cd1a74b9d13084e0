"""sb.enable: the calls users already write, balanced when skew pays, equal to plain Spark;
sb.disable puts Spark back exactly; sparkbalance's own calls never recurse into the hooks."""
from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

import sparkbalance as sb
from sparkbalance.spark.enable import decisions, install, is_installed
from sparkbalance.spark.report.balance_log import balance_log
from sparkbalance.spark.session import conf
from sparkbalance.spark.sql.placement import spark_hash_int_array

N = 4  # the shared session's spark.sql.shuffle.partitions


@pytest.fixture(autouse=True)
def _plain_after(spark):
    yield
    sb.disable(spark)
    assert not is_installed()
    for key in (conf.CONF_ENABLED, conf.CONF_STRATEGY):
        spark.conf.unset(key)


def _colliding_ints(count: int, n: int = N) -> list[int]:
    """INT keys Spark's hash partitioning sends to one partition (hot keys that collide)."""
    homes = np.mod(spark_hash_int_array(np.arange(1000)), n)
    return [int(k) for k in np.flatnonzero(homes == homes[0])[:count]]


@pytest.fixture(scope="module")
def skewed(spark):
    hot = _colliding_ints(3)   # three keys of 25 % each, all on Spark's partition of the first
    rows = [(hot[i % 3] if i % 4 else 1000 + i % 13, i) for i in range(1200)]
    return spark.createDataFrame(rows, "k int, v long").repartition(3).cache()


@pytest.fixture(scope="module")
def uniform(spark):
    # computed by the JVM (a DataFrame of a Python list is a Python RDD scan: not sampled)
    return spark.range(1200).selectExpr("CAST(id % 300 AS INT) AS k", "id AS v")


def _snapshot():
    return {(cls, name): cls.__dict__.get(name, "<inherited>")
            for cls, names, _ in install.patched_targets() for name in names}


def _count(pdf: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"k": [int(pdf["k"].iloc[0])], "n": [len(pdf)], "s": [int(pdf["v"].sum())]})


def test_enable_is_idempotent_and_disable_restores_spark_exactly(spark):
    before = _snapshot()
    sb.enable(spark)
    once = _snapshot()
    sb.enable(spark)
    assert _snapshot() == once != before
    assert spark.conf.get(conf.CONF_ENABLED) == "true"
    sb.disable()
    assert _snapshot() == before
    assert spark.conf.get(conf.CONF_ENABLED, None) is None


def test_concurrent_enables_patch_once(spark):
    before = _snapshot()
    threads = [threading.Thread(target=sb.enable) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert is_installed()
    sb.disable()
    assert _snapshot() == before


def test_skewed_apply_in_pandas_is_balanced_and_equal(spark, skewed):
    plain = skewed.groupBy("k").applyInPandas(_count, "k int, n long, s long")
    expected = plain.collect()
    sb.enable(spark)
    got = skewed.groupBy("k").applyInPandas(_count, "k int, n long, s long")
    last = decisions()[-1]
    assert (last.call, last.balanced) == ("GroupedData.applyInPandas", True), last
    assertDataFrameEqual(got, expected)


def test_uniform_keys_stay_plain(spark, uniform):
    sb.enable(spark)
    out = uniform.groupBy("k").agg(F.sum("v").alias("s"))
    last = decisions()[-1]
    assert (last.balanced, last.gain) == (False, 1.0), last
    sb.disable()
    assertDataFrameEqual(out, uniform.groupBy("k").agg(F.sum("v").alias("s")))


def test_skewed_repartition_keeps_every_key_on_one_partition(spark, skewed):
    def tag(it):
        import pyspark
        pid = pyspark.TaskContext.get().partitionId()
        for pdf in it:
            yield pdf.assign(pid=pid)

    sb.enable(spark)
    out = skewed.repartition(N, "k").mapInPandas(tag, "k int, v long, pid int")
    assert decisions()[-1].balanced
    rows = out.collect()
    assert out.rdd.getNumPartitions() == N
    homes = {}
    for r in rows:
        homes.setdefault(r.k, set()).add(r.pid)
    assert all(len(p) == 1 for p in homes.values())
    assertDataFrameEqual(out.drop("pid"), skewed)


def test_skewed_agg_and_shorthands_equal_plain(spark, skewed):
    expected = skewed.groupBy("k").agg(F.count("*").alias("c"), F.max("v").alias("m")).collect()
    sums = skewed.groupBy(F.col("k")).sum("v").collect()
    sb.enable(spark)
    got = skewed.groupBy("k").agg(F.count("*").alias("c"), F.max("v").alias("m"))
    assert decisions()[-1].balanced
    # planned from the check's sample: the adapter itself ran no statistics job
    assert balance_log().last()["job_ids"] == []
    assertDataFrameEqual(got, expected)
    assertDataFrameEqual(skewed.groupBy(F.col("k")).sum("v"), sums)


def test_sparkbalance_own_calls_reach_the_originals(spark, skewed):
    sb.enable(spark)
    seen = len(decisions())
    g = sb.group_by(skewed, "k", num_partitions=N)   # statistics groupBy, placement... inside
    g.agg(F.sum("v")).collect()
    sb.repartition(skewed, N, "k").count()
    assert len(decisions()) == seen


def test_rdd_reduce_by_key_and_partition_by(spark, sc):
    hot = [0, N, 2 * N]          # PySpark's portable_hash(int) is the int: all on partition 0
    pairs = sc.parallelize([(hot[i % 3] if i % 4 else 100 + i % 89, 1) for i in range(1200)], 3)
    expected = sorted(pairs.reduceByKey(lambda a, b: a + b, N).collect())
    spark.conf.set(conf.CONF_STRATEGY, "pkg")   # whole-app: RDD reduce splits keys...
    sb.enable(spark)
    got = pairs.reduceByKey(lambda a, b: a + b, N)
    assert decisions()[-1].balanced and decisions()[-1].call == "RDD.reduceByKey"
    assert sorted(got.collect()) == expected
    parts = pairs.partitionBy(N).glom().collect()   # ...partitionBy keeps a key on one
    assert decisions()[-1].balanced
    homes = {}
    for p, records in enumerate(parts):
        for k, _ in records:
            homes.setdefault(k, set()).add(p)
    assert all(len(p) == 1 for p in homes.values()) and sum(map(len, parts)) == 1200
    custom = pairs.partitionBy(N, lambda k: 0)        # a custom partitionFunc: plain
    assert decisions()[-1].call != "RDD.partitionBy" or custom.getNumPartitions() == N


def test_a_bad_enabled_value_names_its_key_before_any_job(spark, skewed):
    sb.enable()
    spark.conf.set(conf.CONF_ENABLED, "yes")
    tracker = spark.sparkContext.statusTracker()
    before = len(tracker.getJobIdsForGroup(None))
    with pytest.raises(ValueError, match="spark.sparkbalance.enabled='yes'; expected true"):
        skewed.groupBy("k").count()
    assert len(tracker.getJobIdsForGroup(None)) == before


def test_conf_switches_a_session_at_run_time(spark, skewed):
    sb.enable()                                       # hooks only: the key decides
    seen = len(decisions())
    skewed.groupBy("k").count()
    assert len(decisions()) == seen                   # key unset: plain, no check
    spark.conf.set(conf.CONF_ENABLED, "true")
    skewed.groupBy("k").count()
    assert len(decisions()) == seen + 1


@pytest.mark.parametrize("func, schema", [(None, "k int"), (_count, "not a schema ("),
                                          (_count, "int"), (lambda a, b, c: a, "k int")])
def test_a_bad_grouped_map_call_fails_as_spark_fails_before_any_job(spark, skewed, func,
                                                                     schema):
    with pytest.raises(Exception) as plain:
        skewed.groupBy("k").applyInPandas(func, schema)
    sb.enable(spark)
    tracker = spark.sparkContext.statusTracker()
    before = len(tracker.getJobIdsForGroup(None))
    with pytest.raises(type(plain.value)) as enabled:
        skewed.groupBy("k").applyInPandas(func, schema)
    assert str(enabled.value) == str(plain.value)
    assert len(tracker.getJobIdsForGroup(None)) == before


def test_a_balanced_grouped_map_builds_spark_s_result_only_when_plain(spark, skewed, uniform):
    from pyspark.sql import functions as PF
    built, real = [], PF.pandas_udf     # count the grouped-map UDFs built, Spark's included
    sb.enable(spark)

    def counting(*args, **kwargs):
        built.append(kwargs.get("returnType"))
        return real(*args, **kwargs)
    try:
        PF.pandas_udf = counting
        out = skewed.groupBy("k").applyInPandas(_count, "k int, n long, s long")
        assert decisions()[-1].balanced
        balanced_builds = len(built)
        built.clear()
        uniform.groupBy("k").applyInPandas(_count, "k int, n long, s long")
        assert not decisions()[-1].balanced
    finally:
        PF.pandas_udf = real
    # balanced: the hook's check and the balanced call's UDF (Spark's own result not built);
    # plain: the hook's check and Spark's own result
    assert balanced_builds == 2 and len(built) == 2
    sb.disable(spark)
    assertDataFrameEqual(out, skewed.groupBy("k").applyInPandas(_count, "k int, n long, s long"))


@pytest.mark.parametrize("n, cols", [(N, ("nope",)), (0, ("k",)), (-1, ("k",)),
                                     (N, ("nope + 1",))])
def test_a_bad_repartition_fails_as_spark_fails_before_any_job(spark, skewed, n, cols):
    cols = tuple(F.expr(c) if " " in c else c for c in cols)
    with pytest.raises(Exception) as plain:
        skewed.repartition(n, *cols)
    sb.enable(spark)
    tracker = spark.sparkContext.statusTracker()
    before = len(tracker.getJobIdsForGroup(None))
    with pytest.raises(type(plain.value)) as enabled:
        skewed.repartition(n, *cols)
    assert str(enabled.value) == str(plain.value)
    assert len(tracker.getJobIdsForGroup(None)) == before


def test_a_balanced_repartition_builds_spark_s_result_only_when_plain(spark, skewed, uniform):
    from sparkbalance.spark.enable import hooks
    cls, calls = install._dataframe_class(), []
    spark_own = cls.repartition                   # not enabled yet: Spark's own

    def counting(self, *args):
        calls.append(args)
        return spark_own(self, *args)
    hook = hooks.dataframe_hooks({"repartition": counting,
                                  "groupBy": cls.groupBy})["repartition"]
    sb.enable(spark)
    out = hook(skewed, N, "k")
    assert decisions()[-1].balanced and calls == []
    hook(uniform, N, "k")
    assert not decisions()[-1].balanced and calls == [(N, "k")]
    sb.disable(spark)
    assertDataFrameEqual(out, skewed.repartition(N, "k"))
