"""Balance records, job descriptions and log lines of the real operations (no plugin here).

The shared session runs without the BalancePlugin: every operation still appends its record
to ``sb.balance_log()`` and nothing fails. Job descriptions are read from Spark's status
store (what the UI's jobs page shows), after the listener bus has delivered every event.
"""
from __future__ import annotations

import logging
import operator

import numpy as np
import pytest

import sparkbalance as sb
from sparkbalance.spark.report import balance_log as bl
from sparkbalance.spark.sql.keystats import key_stats
from sparkbalance.spark.session.jobs import (DESCRIPTION_PREFIX, JOB_DESCRIPTION_PROPERTY,
                                     JOB_GROUP_PROPERTY, next_job_id)
from sparkbalance.state.operator import KeyedStateOperator
from sparkbalance.bench.shifting import batch_records, shifting_zipf_counts

USER_GROUP, USER_DESC = "user-group", "my own report"


def _skewed(spark, hot=400, cold=60):
    rows = [(0, 1.0)] * hot + [(k, 1.0) for k in range(1, cold + 1) for _ in range(3)]
    return spark.createDataFrame(rows, "user_id long, amount double")


def _jobs_since(sc, first):
    """(job id, description, group) of every job from id ``first`` on, events delivered."""
    jsc = sc._jsc.sc()
    jsc.listenerBus().waitUntilEmpty(60_000)
    out = []
    seq = jsc.statusStore().jobsList(None)  # a Scala Seq
    for j in (seq.apply(i) for i in range(seq.size())):
        if j.jobId() >= first:
            desc = j.description().get() if j.description().isDefined() else None
            group = j.jobGroup().get() if j.jobGroup().isDefined() else None
            out.append((j.jobId(), desc, group))
    return sorted(out)


@pytest.fixture
def user_label(sc):
    sc.setJobGroup(USER_GROUP, USER_DESC)
    yield
    sc.setLocalProperty(JOB_GROUP_PROPERTY, None)
    sc.setLocalProperty(JOB_DESCRIPTION_PROPERTY, None)


def _ops(spark, sc):
    """Every planned operation: (name, call running it; its jobs are sparkbalance's)."""
    df = _skewed(spark)
    users = spark.createDataFrame([(k, f"u{k}") for k in range(61)], "user_id long, name string")
    pairs = sc.parallelize([(0, 1)] * 300 + [(k, 1) for k in range(1, 80)], 4)
    return [
        ("repartition", lambda: sb.repartition(df, 4, "user_id", strategy="mixed")),
        ("group_by", lambda: sb.group_by(df, "user_id", num_partitions=4, strategy="mixed")),
        ("join_df", lambda: sb.join(df, users, "user_id", num_partitions=4,
                                    strategy="keygroups")),
        ("join_df", lambda: sb.join(df, users, "user_id", num_partitions=4,
                                    strategy="split")),
        ("fit_partitioner", lambda: sb.fit_partitioner(df, 4, "user_id", strategy="mixed")),
        ("partition_by", lambda: sb.partition_by(pairs, 4, "mixed")),
        ("reduce_by_key", lambda: sb.reduce_by_key(pairs, operator.add, 4, "mixed")),
        ("aggregate_by_key", lambda: sb.aggregate_by_key(pairs, 0, operator.add, operator.add,
                                                         4, "keygroups")),
        ("group_by_key", lambda: sb.group_by_key(pairs, 4, "mixed")),
        ("join", lambda: sb.join(pairs, pairs, 4, "mixed")),
        ("fit_partitioner", lambda: sb.fit_partitioner(pairs, 4, strategy="mixed")),
    ]


def test_every_plan_posts_one_record_with_the_tab_fields(spark, sc):
    for name, run in _ops(spark, sc):
        before = len(bl.balance_log().records())
        run()
        recs = bl.balance_log().records()[before:] if before < 3000 else []
        assert len(recs) == 1, (name, recs)
        r = recs[0]
        assert r["operation"] == name
        assert r["kind"] == ("dataframe" if name in ("repartition", "group_by", "join_df")
                             or r["key"] == "user_id" else "rdd")
        assert r["num_partitions"] == 4 and r["plan_seconds"] >= 0 and r["job_ids"]
        assert r["label"].startswith(f"{name}(") and r["description"].startswith(
            DESCRIPTION_PREFIX)
        for field in ("time", "strategy", "planner", "loads_before", "loads_after",
                      "max_before", "avg_after", "lower_bound", "table_size"):
            assert r.get(field) is not None, (name, field)
        # the loads are the planner's cost per partition: the same total, LB <= max
        assert sum(r["loads_before"]) == pytest.approx(sum(r["loads_after"]))
        assert r["lower_bound"] <= r["max_after"] + 1e-9 <= r["max_before"] + 1e-9


def test_split_join_record_names_the_split_keys(spark):
    df, users = _skewed(spark), spark.createDataFrame([(0, "a")], "user_id long, name string")
    sb.join(df, users, "user_id", num_partitions=4, strategy="split")
    r = bl.balance_log().last()
    assert r["strategy"] == "split" and r["planner"] == "SplitPlan"
    assert r["keys_split"] >= 1 and "split into" in r["layout"]   # key 0: 400 of 580 rows
    assert r["max_after"] < r["max_before"]
    assert r["lower_bound"] == pytest.approx(sum(r["loads_after"]) / 4)


def test_dataframe_record_values_equal_the_plan(spark):
    df = _skewed(spark)
    before = next_job_id(spark)
    g = sb.group_by(df, "user_id", num_partitions=4, strategy="mixed")
    r = bl.balance_log().last()
    stats = key_stats(df, "user_id")
    f = g.partitioner
    loads = np.bincount(f.assign(stats.keys), weights=stats.cost, minlength=4)
    assert r["loads_after"] == pytest.approx(loads.tolist())
    assert r["lower_bound"] == pytest.approx(max(stats.cost.sum() / 4, stats.cost.max()))
    assert r["table_size"] == len(getattr(f, "table", ()))
    assert r["job_ids"] and min(r["job_ids"]) >= before
    assert r["key"] == "user_id" and r["strategy"] == "mixed"


def test_next_job_id_counts_jobs_from_the_kept_counter(sc):
    """The scheduler's job counter is kept per context (one py4j call per read, twice per
    keyed-state batch): later reads still see every job submitted in between."""
    first = next_job_id(sc)
    assert next_job_id(sc) == first
    sc.parallelize(range(4), 2).count()
    sc.parallelize(range(4), 2).count()
    assert next_job_id(sc) == first + 2


def test_sparkbalance_jobs_are_labelled_and_the_users_label_restored(spark, sc, user_label):
    first = next_job_id(sc)
    ours: set[int] = set()
    for name, run in _ops(spark, sc):
        start = next_job_id(sc)
        run()
        ours |= set(range(start, next_job_id(sc)))
        assert sc.getLocalProperty(JOB_GROUP_PROPERTY) == USER_GROUP, name
        assert sc.getLocalProperty(JOB_DESCRIPTION_PROPERTY) == USER_DESC, name
    sc.parallelize(range(10), 2).count()  # the user's own job keeps the user's label
    jobs = _jobs_since(sc, first)
    assert ours and {j for j, _, _ in jobs} >= ours
    for job, desc, group in jobs:
        if job in ours:
            assert desc and desc.startswith(DESCRIPTION_PREFIX), (job, desc, group)
            assert " for " in desc and "(" in desc, desc   # names the operation
        else:
            assert (desc, group) == (USER_DESC, USER_GROUP), (job, desc, group)
    descs = {d for j, d, _ in jobs if j in ours}
    assert any(d.startswith("sparkbalance: key statistics for repartition(user_id, 4, mixed)")
               for d in descs), descs


def test_one_info_line_per_plan_and_no_py4j_chatter(spark, sc, caplog):
    df = _skewed(spark)
    with caplog.at_level(logging.INFO):
        sb.repartition(df, 4, "user_id", strategy="mixed")
        sb.reduce_by_key(sc.parallelize([(0, 1)] * 50 + [(1, 1)], 2), operator.add, 2, "mixed")
    ours = [r for r in caplog.records if r.name.startswith("sparkbalance")
            and r.levelno == logging.INFO]
    assert len(ours) == 2, [r.getMessage() for r in ours]
    line = ours[0].getMessage()
    assert line.startswith("sparkbalance: repartition(user_id, 4, mixed): mixed (")
    for part in ("imbalance ", " -> ", "(LB ", "table ", "plan ", "s in all", "jobs ["):
        assert part in line, line
    assert not [r for r in caplog.records if r.name.startswith("py4j")
                and r.levelno >= logging.INFO and "Received command" in r.getMessage()]


def _stream(n=8):
    return [batch_records(k, c, seed=t) for t, (k, c) in enumerate(
        shifting_zipf_counts(60, 3, n, z=1.1, records_per_batch=240, f=2.0, seed=3))]


def test_keyed_state_posts_batches_and_migrations_with_labelled_jobs(sc, user_label, caplog):
    op = KeyedStateOperator(sc, 3, update=operator.add, initial=0, planner="mixed", theta=0.1,
                            trigger="paper")
    op.name = "clicks"
    start = len(bl.balance_log().records())
    first = next_job_id(sc)
    with caplog.at_level(logging.INFO, logger="sparkbalance"):
        for t, b in enumerate(_stream()):
            op.process(sc.parallelize(b, 2), batch_id=t).count()
        rec = op.scale(4)
    assert sc.getLocalProperty(JOB_DESCRIPTION_PROPERTY) == USER_DESC
    recs = [r for r in bl.balance_log().records()[start:] if r.get("operator") == "clicks"]
    batches = [r for r in recs if r["kind"] == "state"]
    migrations = [r for r in recs if r["kind"] == "migration"]
    assert [r["batch"] for r in batches] == [h.seq for h in op.history]
    for r, h in zip(batches, op.history):
        assert r["max_before"] == pytest.approx(h.max_load)
        assert r["avg_before"] == pytest.approx(h.mean_load)
        assert r["table_size"] == h.table_size and r["job_ids"]
    # each migration in exactly one record: riding ones in the batch that carried them,
    # the settled one and scale() in records of their own
    moved = [(r["keys_moved"], r["bytes_moved"]) for r in recs if r.get("keys_moved")]
    assert sorted(moved) == sorted((m.keys_moved, m.bytes_moved) for m in op.migrations
                                   if m.keys_moved)
    assert len(op.migrations) >= 3 and migrations[-1]["operation"] == "scale"
    assert rec.keys_moved == migrations[-1]["keys_moved"]
    assert all(r.get("max_before") is None for r in migrations)  # no loads of their own
    plans = [r for r in batches if r.get("plan_seconds") is not None]
    info = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO
            and "keyed state clicks batch" in r.getMessage()]
    assert len(info) == len(plans) >= 1
    # every job the operator ran says what it is
    jobs = _jobs_since(sc, first)
    theirs = [(j, d) for j, d, _ in jobs if d != USER_DESC]
    assert theirs and all(d and d.startswith(DESCRIPTION_PREFIX) for _, d in theirs), theirs
    assert any(d.startswith("sparkbalance: keyed state clicks batch") for _, d in theirs)
    assert any("migrate" in d and "layout v" in d and "→" in d for _, d in theirs), theirs
    op.close()


def test_before_is_where_spark_itself_puts_the_rows(spark):
    """The record's "before" partition of a key is ``pmod(hash(cols), n)`` as Spark computes
    it, for every SQL type the placement handles, one column or several."""
    import datetime

    from pyspark.sql import functions as F

    from sparkbalance.spark.report.spark_placement import df_partitions, murmur3_hash
    rows = [(0, 7, "a", b"xyz", 1.5, True, datetime.date(2020, 1, 2), "héllo wörld", 3.25),
            (123456789012, -5, "abcde", b"", -0.0, False, datetime.date(1960, 5, 5), "", None)]
    df = spark.createDataFrame(rows, "l bigint, i int, s string, b binary, d double, "
                               "bo boolean, dt date, u string, f float")
    types = [f.dataType.simpleString() for f in df.schema]
    got = df.select(*[F.hash(c).alias(c) for c in df.columns],
                    F.hash("s", "i", "u").alias("multi"),
                    F.pmod(F.hash("s", "l"), F.lit(7)).alias("p")).collect()
    for r, g in zip(rows, got):
        for c, v, t in zip(df.columns, r, types):
            assert murmur3_hash([v], [t]) == g[c], (c, v)
        assert murmur3_hash([r[2], r[1], r[7]], ["string", "int", "string"]) == g["multi"]
        assert df_partitions([(r[2], r[0])], ["string", "bigint"], 7).tolist() == [g["p"]]


def test_plan_records_put_the_hot_key_where_spark_would(spark, sc):
    from pyspark.sql import functions as F
    df = _skewed(spark)
    sb.repartition(df, 8, "user_id", strategy="mixed")
    rec = bl.balance_log().last()
    spark_put = (df.where("user_id = 0").repartition(8, "user_id")
                 .select(F.spark_partition_id()).first()[0])
    assert rec["before_placement"] == "Spark: pmod(hash(user_id), 8)"
    assert rec["hot_keys"][0]["key"] == 0 and rec["hot_keys"][0]["before"] == spark_put
    assert rec["loads_before"][spark_put] >= 400
    pairs = sc.parallelize([("hot", 1)] * 50 + [(f"k{i}", 1) for i in range(30)], 2)
    sb.reduce_by_key(pairs, operator.add, 4, "mixed")
    rec = bl.balance_log().last()
    spark_put = pairs.partitionBy(4).mapPartitionsWithIndex(
        lambda i, it: [i] if any(k == "hot" for k, _ in it) else []).collect()
    assert rec["before_placement"] == "Spark: portable_hash(key) % 4"
    assert [rec["hot_keys"][0]["key"], rec["hot_keys"][0]["before"]] == ["hot", *spark_put]


def test_a_pkg_record_gets_the_loads_its_stage_measured(sc):
    # pkg gathers no statistics and its shuffle runs after the record is posted: the loads
    # come from that stage's shuffle reads (bytes: the RDD API shuffles pickled batches)
    from sparkbalance.spark.report import stage_loads
    import json
    plugin = sc._jvm.io.sparkbalance.bridge.BalancePlugin
    counted = lambda: json.loads(plugin.metricsJson()).get("records", 0)  # noqa: E731
    before = counted()
    pairs = sc.parallelize([(0, 1)] * 300 + [(k, 1) for k in range(1, 80)], 4)
    out = sb.reduce_by_key(pairs, operator.add, 4, "pkg")
    r = bl.balance_log().last()
    assert r["strategy"] == "pkg" and r.get("rdd_ids") and not r.get("loads_after")
    assert stage_loads.pending() >= 1
    assert dict(out.collect()) == dict(pairs.reduceByKey(operator.add).collect())
    sc._jsc.sc().listenerBus().waitUntilEmpty(60_000)
    assert len(r["loads_after"]) == 4 and sum(r["loads_after"]) > 0
    assert r["max_after"] == max(r["loads_after"]) and r["loads_unit"] == "shuffle bytes read"
    assert bl.balance_log().last() is r   # the stored record itself, not a copy
    if plugin.isActive():   # pushed again with its loads: one record in the plugin's metrics
        assert counted() == before + 1
