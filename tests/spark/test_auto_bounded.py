"""Strategy "auto" without the JVM bridge: a bounded sample, never a statistics pass.

The bridge is switched off for the process (``$SPARKBALANCE_BRIDGE=off``, what a Spark
Connect session or a platform that forbids class paths amounts to), so the default call
cannot have the shuffle's own counts. It must read at most the bounded sample on top of the
shuffle (one small job over a few input partitions), say so in one log line, keep plain
hashing on uniform keys, still place a hot key, and equal plain PySpark.
"""
from __future__ import annotations

import logging
import operator
import re

import pytest

import sparkbalance as sb
from sparkbalance.routing.hash import HashPartitioner
from sparkbalance.spark.rdd import bounded, mapstats
from sparkbalance.spark.rdd.keystats import STATS_JOB_GROUP
from sparkbalance.spark.session.jvm_loader import BRIDGE_SWITCH_ENV
from sparkbalance.spark.sql.keystats import bounded_key_stats as bounded_df_stats

N = 4
RECORDS = 24_000
PARTS = 8


@pytest.fixture
def no_bridge(monkeypatch):
    monkeypatch.setenv(BRIDGE_SWITCH_ENV, "off")
    monkeypatch.setattr(mapstats, "_warned", [False])


def _stats_jobs(sc) -> set[int]:
    return set(sc.statusTracker().getJobIdsForGroup(STATS_JOB_GROUP))


def _tasks(sc, jobs) -> int:
    t = sc.statusTracker()
    return sum(t.getStageInfo(s).numTasks for j in jobs for s in t.getJobInfo(j).stageIds)


def _uniform(sc, seen):
    def tap(i):
        seen.add(1)
        return (i * 7919) % 1_000_003, 1
    return sc.parallelize(range(RECORDS), PARTS).map(tap)


def test_no_jar_auto_reads_a_bounded_sample_not_a_pass(sc, no_bridge, caplog):
    seen = sc.accumulator(0)
    rdd = _uniform(sc, seen)
    before = _stats_jobs(sc)
    with caplog.at_level(logging.WARNING, logger="sparkbalance"):
        got = sb.reduce_by_key(rdd, operator.add, N).collect()
        again = sb.partition_by(rdd, N).count()
    assert again == RECORDS
    # the sample: one job per call over at most SAMPLE_PARTITIONS of the 8 input partitions
    jobs = _stats_jobs(sc) - before
    assert len(jobs) == 2 and _tasks(sc, jobs) <= 2 * bounded.SAMPLE_PARTITIONS
    # the input is read once per call plus at most the sample: no second pass
    assert seen.value <= 2 * RECORDS + 2 * (bounded.SAMPLE_RECORDS + 100), seen.value
    assert sorted(got) == sorted(rdd.reduceByKey(operator.add, N).collect())
    lines = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) <= 1   # the session's one line (already said if an earlier test ran)


def test_no_jar_auto_keeps_hash_on_uniform_keys_and_places_a_hot_key(sc, no_bridge):
    uniform = sc.parallelize([(i, 1) for i in range(12_000)], PARTS)
    assert len(bounded.bounded_key_stats(uniform, N)) == 0
    hot = sc.parallelize([("hot" if i % 3 == 0 else i, 1) for i in range(12_000)], PARTS)
    s = bounded.bounded_key_stats(hot, N)
    assert s.keys.tolist() == ["hot"] and s.tail_count > 0
    out = sb.partition_by(hot, N)
    loads = out.glom().map(len).collect()
    f = out.partitioner.partitionFunc
    f = getattr(getattr(f, "__self__", None), "f", f)
    assert not isinstance(f, HashPartitioner)    # Mixed moved keys off the hot partition
    hash_loads = hot.partitionBy(N, HashPartitioner(N)).glom().map(len).collect()
    assert max(loads) <= max(hash_loads)
    assert sorted(out.collect(), key=repr) == sorted(hot.collect(), key=repr)


def test_one_warning_line_when_the_bridge_is_off(spark, monkeypatch, caplog):
    from sparkbalance.spark.session import jvm_loader
    monkeypatch.setenv(BRIDGE_SWITCH_ENV, "off")
    monkeypatch.setattr(jvm_loader, "_OFF", jvm_loader.SessionMemo())  # a fresh session's
    monkeypatch.setattr(mapstats, "_warned", [False])
    rdd = spark.sparkContext.parallelize([(i % 50, 1) for i in range(2000)], 2)
    with caplog.at_level(logging.INFO, logger="sparkbalance"):
        sb.reduce_by_key(rdd, operator.add, N).count()
        sb.partition_by(rdd, N).count()
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) == 1 and "bounded sample" in lines[0], lines


def test_dataframe_auto_reads_a_bounded_sample(spark):
    from pyspark.sql import functions as F
    from pyspark.testing import assertDataFrameEqual

    df = spark.range(12_000).select(
        F.when(F.col("id") % 3 == 0, F.lit(-1)).otherwise(F.col("id")).alias("k"),
        F.col("id").alias("v"))
    s = bounded_df_stats(df, ["k"], N)
    assert s.keys.tolist() == [-1] and s.tail_count > 0
    grouped = sb.group_by(df, "k", num_partitions=N)
    assert not isinstance(grouped.partitioner, HashPartitioner)
    assertDataFrameEqual(grouped.agg(F.sum("v").alias("s")),
                         df.groupBy("k").agg(F.sum("v").alias("s")))
    uniform = spark.range(12_000).select((F.col("id") * 7919 % 1_000_003).alias("k"))
    assert isinstance(sb.group_by(uniform, "k", num_partitions=N).partitioner,
                      HashPartitioner)


def _jobs_during(sc, fn):
    from sparkbalance.spark.session.jobs import next_job_id
    from sparkbalance.spark.sql.keysample import forget_kept_samples
    forget_kept_samples()     # the sample's own jobs are counted, not one kept from before
    j0 = next_job_id(sc)
    out = fn()
    return out, next_job_id(sc) - j0


def test_dataframe_auto_on_uniform_keys_is_plain_sparks_exchange(spark, sc, caplog):
    from pyspark.sql import functions as F
    from pyspark.testing import assertDataFrameEqual

    # two input partitions of 12,000 rows: the sample's first partition holds it whole
    df = spark.range(0, 24_000, numPartitions=2).select(
        (F.col("id") * 7919 % 1_000_003).alias("k"), F.col("id").alias("v"))
    with caplog.at_level(logging.INFO, logger="sparkbalance"):
        placed, jobs = _jobs_during(sc, lambda: sb.repartition(df, N, "k"))
    assert jobs == 1   # the bounded sample only, one small job
    said = [r.getMessage() for r in caplog.records if r.name == "sparkbalance"]
    assert len(said) == 1 and "plain hashing" in said[0], said   # which way auto went
    plan = placed._jdf.queryExecution().executedPlan().toString()
    plain = df.repartition(N, "k")._jdf.queryExecution().executedPlan().toString()
    assert plan.count("Exchange") == 1 and "__sb" not in plan
    ids = re.compile(r"plan_id=\d+")   # exactly df.repartition(n, "k"), no routing expression
    assert ids.sub("", plan) == ids.sub("", plain)
    assertDataFrameEqual(placed, df)
    grouped, jobs = _jobs_during(
        sc, lambda: sb.group_by(df, "k", num_partitions=N).agg(F.sum("v").alias("s")))
    assert jobs == 1
    gplan = grouped._jdf.queryExecution().executedPlan().toString()
    assert gplan.count("Exchange") == 1 and "crc32" not in gplan
    assertDataFrameEqual(grouped, df.groupBy("k").agg(F.sum("v").alias("s")))


def test_dataframe_auto_on_a_hot_key_still_routes(spark):
    from pyspark.sql import functions as F
    from pyspark.testing import assertDataFrameEqual

    df = spark.range(12_000).select(
        F.when(F.col("id") % 3 == 0, F.lit(-1)).otherwise(F.col("id")).alias("k"))
    placed = sb.repartition(df, N, "k")
    plan = placed._jdf.queryExecution().executedPlan().toString()
    assert "crc32" in plan and plan.count("Exchange") == 1   # routed, one exchange
    assertDataFrameEqual(placed, df)


def test_dataframe_sample_is_a_look_then_a_spread_never_reading_a_row_twice(spark, sc):
    from pyspark.sql import functions as F

    from sparkbalance.spark.session.jobs import next_job_id
    from sparkbalance.spark.sql.keysample import MAX_SPREAD_TASKS
    from sparkbalance.spark.sql.keystats import first_look_records, first_take_partitions

    # 8 input partitions of 6,000 rows. Uniform keys: the first look reads one partition's
    # prefix, lists nothing, and that is the whole statistics (one job, one task)
    # the look is partition 0's share of the spread when that is more (one planned query)
    look = max(first_look_records(N), bounded.SAMPLE_RECORDS // 8)
    assert look <= 6_000
    df = spark.range(0, 48_000, numPartitions=8).select(
        (F.col("id") * 7919 % 1_000_003).alias("k"))
    keys = ["spark.sql.limit.initialNumPartitions",
            "spark.sql.execution.arrow.maxRecordsPerBatch"]
    before = [spark.conf.get(k, None) for k in keys]
    first = next_job_id(sc)
    s, jobs = _jobs_during(sc, lambda: bounded_df_stats(df, ["k"], N))
    assert jobs == 1 and len(s) == 0 and s.tail_count == look
    sc._jsc.sc().listenerBus().waitUntilEmpty(30_000)
    assert _tasks(sc, [first]) == 1
    # a hot key: the look lists it, then one job spreads the rest of the sample over every
    # other input partition (one task each, partition 0's prefix is the look's)
    assert 8 <= MAX_SPREAD_TASKS
    hot = spark.range(0, 48_000, numPartitions=8).select(
        F.when(F.col("id") % 3 == 0, F.lit(-1)).otherwise(F.col("id")).alias("k"))
    first = next_job_id(sc)
    s, jobs = _jobs_during(sc, lambda: bounded_df_stats(hot, ["k"], N))
    assert jobs == 2 and s.keys.tolist() == [-1]
    per = bounded.SAMPLE_RECORDS // 8
    assert s.total_count + s.tail_count == look + 7 * per
    sc._jsc.sc().listenerBus().waitUntilEmpty(30_000)
    assert _tasks(sc, [first]) == 1 and _tasks(sc, [first + 1]) == 7
    # each task read its partition's prefix: key -1 is every third id of each
    assert abs(s.counts[0] - (look + 7 * per) / 3) <= 8
    assert [spark.conf.get(k, None) for k in keys] == before   # the session's, restored
    _, jobs = _jobs_during(sc, lambda: sb.repartition(df, N, "k"))
    assert jobs == 1
    with pytest.raises(ValueError, match="k=0"):
        with first_take_partitions(df, 0):
            pass
    with pytest.raises(ValueError, match="batch=0"):
        with first_take_partitions(df, 1, batch=0):
            pass
