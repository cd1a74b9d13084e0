"""Balanced DataFrame repartition / groupBy / join: placement, results, plans, errors."""
from __future__ import annotations

import collections
import functools
import random

import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from sparkbalance import strategies
from sparkbalance.routing import (HashPartitioner, KeyGroupPartitioner, RoutingTable,
                                  RoutingTablePartitioner)
from sparkbalance.routing.keygroups import GroupMapPartitioner
from sparkbalance.planning.split import plan_split
from sparkbalance.spark.session import conf
from sparkbalance.spark.sql import install as df_install
from sparkbalance.spark.sql import join as df_join
from sparkbalance.spark.sql import keystats as df_keystats
from sparkbalance.spark.sql import placement
from sparkbalance.spark.sql import route as sqlroute
from sparkbalance.spark.sql import dataframe as sbdf

N = 4


def _available(name: str) -> bool:
    try:
        strategies.get(name).load()
        return True
    except (ImportError, AttributeError):
        return False


STRATEGIES = [s for s in strategies.KEY_GROUPING if _available(s)]
FITTED = next((s for s in ("mixed", "keygroups") if s in STRATEGIES), "hash")


def _skewed_rows(num: int = 3000, keys: int = 150, seed: int = 3):
    rng = random.Random(seed)
    out = []
    for i in range(num):
        k = 0 if rng.random() < 0.35 else (1 if rng.random() < 0.2 else rng.randrange(keys))
        out.append((k, f"u{k}", rng.randrange(100), float(rng.random())))
    return out


@pytest.fixture(scope="module")
def skewed(spark):
    spark.conf.set("spark.sql.adaptive.enabled", "true")
    spark.conf.set("spark.sql.ansi.enabled", "true")
    # one input partition: fewer map tasks, the tests check placement, not parallelism
    return spark.createDataFrame(_skewed_rows(), "k int, s string, v int, x double") \
        .coalesce(1).cache()


def _placement(df, key, f):
    rows = df.select(key, F.spark_partition_id().alias("pid")).collect()
    for r in rows:
        want = sqlroute.NULL_PARTITION if r[0] is None else f(bytes(r[0]) if isinstance(
            r[0], bytearray) else r[0])
        assert r["pid"] == want, (r[0], r["pid"], want)
    return rows


PARTITIONERS = {
    "hash": HashPartitioner(N),
    "table": RoutingTablePartitioner(N, RoutingTable({0: 3, 1: 3, 7: 0, "x": 2, 10 ** 12: 1,
                                                      "u0": 1, "u7": 0, -5: 2, -2 ** 63: 1,
                                                      2 ** 63 - 1: 2})),
    "keygroups": KeyGroupPartitioner(N, 32, [0, 3, 9, 20, 32]),
    "groupmap": GroupMapPartitioner(N, [(7 * g) % N for g in range(24)]),
}


def _union(frames):
    return functools.reduce(lambda a, b: a.unionByName(b), frames)


def test_rows_land_where_the_partition_function_says(spark):
    """int, bigint and string keys with nulls, four partition functions, one Spark job."""
    assert spark.conf.get("spark.sql.adaptive.enabled") == "true"  # AQE must not undo it
    frames, sizes = [], {}
    for ktype in ("int", "bigint", "string"):
        if ktype == "string":
            data = [(f"u{i % 23}",) for i in range(200)] + [(None,)] * 5 + [("x",)] * 7
        else:
            big = [10 ** 12, -2 ** 63, 2 ** 63 - 1] if ktype == "bigint" else [7]
            data = [(i % 23 - 5,) for i in range(200)] + [(None,)] * 5 + [(b,) for b in big] * 7
        df = spark.createDataFrame(data, f"k {ktype}").coalesce(1)
        for pname, f in PARTITIONERS.items():
            out = sbdf.repartition(df, N, "k", partitioner=f)
            assert out.columns == ["k"]
            sizes[f"{ktype}/{pname}"] = len(data)
            # union partitions are numbered after the earlier inputs': take the id mod N
            frames.append(out.select(F.lit(f"{ktype}/{pname}").alias("case"),
                                     F.col("k").cast("string").alias("k"),
                                     F.pmod(F.spark_partition_id(), F.lit(N)).alias("pid")))
    rows = _union(frames).collect()
    seen = collections.Counter()
    for r in rows:
        ktype, pname = r["case"].split("/")
        seen[r["case"]] += 1
        key = None if r["k"] is None else (r["k"] if ktype == "string" else int(r["k"]))
        want = sqlroute.NULL_PARTITION if key is None else PARTITIONERS[pname](key)
        assert r["pid"] == want, (r["case"], key, r["pid"], want)
    assert seen == sizes


def test_large_table_by_broadcast_join_places_the_same(spark):
    table = RoutingTable({f"u{i}": (i * 7) % N for i in range(40)})
    f = RoutingTablePartitioner(N, table)
    df = spark.createDataFrame([(f"u{i % 50}", i) for i in range(300)] + [(None, 1)],
                               "k string, v int")
    out = sbdf.repartition(df, N, "k", partitioner=f, literal_limit=10)
    assert "BroadcastHashJoin" in out._jdf.queryExecution().executedPlan().toString()
    assert out.columns == ["k", "v"]
    _placement(out, "k", f)
    assertDataFrameEqual(out, df)


def test_multi_column_and_binary_keys(spark):
    f = RoutingTablePartitioner(N, RoutingTable({(1, "a"): 3, (2, "b"): 0}))
    df = spark.createDataFrame([(i % 3, "ab"[i % 2], bytes([i % 5])) for i in range(60)]
                               + [(None, "a", b"")], "i int, s string, b binary")
    rows = sbdf.repartition(df, N, "i", "s", partitioner=f).select(
        "i", "s", F.spark_partition_id().alias("pid")).collect()
    for r in rows:
        want = 0 if r["i"] is None else f((r["i"], r["s"]))
        assert r["pid"] == want
    g = KeyGroupPartitioner(N, 16)
    _placement(sbdf.repartition(df, N, "b", partitioner=g), "b", g)


@pytest.fixture(scope="module")
def stats_k(skewed):
    return df_keystats.key_stats(skewed, "k")


def AGGS():
    return [F.sum("v").alias("sv"), F.count("*").alias("c"), F.max("x").alias("mx")]


@pytest.fixture(scope="module")
def plain_agg(skewed):
    return skewed.groupBy("k").agg(*AGGS()).collect()


def test_group_by_equals_plain_spark_and_places_by_its_function(skewed, stats_k, plain_agg):
    """Every strategy: same result as plain groupBy, rows where its function says (2 jobs)."""
    from pyspark.sql import Row
    got, placed, fitted = [], [], {}
    for strategy in STRATEGIES:
        g = sbdf.group_by(skewed, "k", num_partitions=N, strategy=strategy, stats=stats_k)
        fitted[strategy] = g.partitioner
        got.append(g.agg(*AGGS()).withColumn("case", F.lit(strategy)))
        placed.append(sbdf.repartition(skewed.select("k"), N, "k", partitioner=g.partitioner)
                      .select(F.lit(strategy).alias("case"), "k",
                              F.pmod(F.spark_partition_id(), F.lit(N)).alias("pid")))
    want = [Row(**r.asDict(), case=s) for s in STRATEGIES for r in plain_agg]
    assertDataFrameEqual(_union(got), want)
    for r in _union(placed).collect():
        assert r["pid"] == fitted[r["case"]](r["k"]), (r["case"], r["k"])


def test_group_by_gathers_its_own_statistics(skewed):
    g = sbdf.group_by(skewed, "k", num_partitions=N, strategy=FITTED)
    assertDataFrameEqual(g.count(), skewed.groupBy("k").count())
    assertDataFrameEqual(g.sum(), skewed.groupBy("k").sum())


def test_group_by_shortcuts_and_multi_keys(skewed):
    g = sbdf.group_by(skewed, "k", "s", num_partitions=N, strategy="hash")
    plain = skewed.groupBy("k", "s")
    got = g.avg("v", "x").join(g.mean("v").withColumnRenamed("avg(v)", "mean"), ["k", "s"]) \
        .join(g.min("v"), ["k", "s"]).join(g.max("x"), ["k", "s"]).join(
            g.agg({"v": "sum"}), ["k", "s"])
    want = plain.avg("v", "x").join(plain.mean("v").withColumnRenamed("avg(v)", "mean"),
                                    ["k", "s"]).join(plain.min("v"), ["k", "s"]).join(
        plain.max("x"), ["k", "s"]).join(plain.agg({"v": "sum"}), ["k", "s"])
    assertDataFrameEqual(got, want)


def test_balanced_group_by_plans_one_exchange(skewed):
    g = sbdf.group_by(skewed, "k", num_partitions=N, strategy="hash")
    out = g.agg(F.sum("v"))
    plan = out._jdf.queryExecution().executedPlan().toString()
    assert plan.count("Exchange ") == 1, plan
    if placement.has_repartition_by_id(skewed):  # Spark 4.1+; 3.5 hashes the route value
        assert "shufflepartitionidpassthrough" in plan
    else:
        assert f"hashpartitioning({sqlroute.PID_COL}" in plan
    assert sqlroute.PID_COL not in out.columns
    out.collect()  # after AQE's final plan still one exchange
    final = out._jdf.queryExecution().executedPlan().toString().split("Initial Plan")[0]
    assert "isFinalPlan=true" in final and final.count("Exchange ") == 1, final


def test_null_keys_go_to_the_documented_partition(spark):
    df = spark.createDataFrame([(None, 1)] * 9 + [(3, 2)], "k int, v int")
    out = sbdf.repartition(df, N, "k", strategy="hash")
    pids = {r["pid"] for r in out.where("k is null").select(
        F.spark_partition_id().alias("pid")).collect()}
    assert pids == {sqlroute.NULL_PARTITION}
    assertDataFrameEqual(sbdf.group_by(df, "k", num_partitions=N, strategy="hash").count(),
                         df.groupBy("k").count())


# ----------------------------------------------------------------------------------- join
@pytest.fixture(scope="module")
def sides(spark, skewed):
    right = spark.createDataFrame(
        [(k, f"name{k}") for k in range(0, 170, 1)] + [(0, "dup0"), (None, "nullk")],
        "k int, name string").coalesce(1).cache()
    left = skewed.select("k", "v").union(skewed.sparkSession.createDataFrame(
        [(None, 1), (999, 2)], "k int, v int")).coalesce(1).cache()
    return left, right


JOIN_TYPES = ["inner", "left", "right", "full", "left_semi", "left_anti"]


def _normal(df, case):
    """Common columns for a union of join results of different shapes."""
    cols = df.columns
    return df.select(F.lit(case).alias("case"), "k",
                     (F.col("v") if "v" in cols else F.lit(None)).cast("int").alias("v"),
                     (F.col("name") if "name" in cols else F.lit(None)).cast("string")
                     .alias("name"))


@pytest.fixture(scope="module")
def plain_joins(sides):
    left, right = sides
    return _union([_normal(left.join(right, "k", how), how) for how in JOIN_TYPES]).collect()


@pytest.fixture(scope="module")
def join_stats(sides):
    left, right = sides
    return df_keystats.join_stats(left, right, ["k"])


#: One strategy per SQL routing form gets every join type; the other table planners
#: (same RoutingTablePartitioner form as "mixed") get inner and full outer joins.
ALL_TYPES_FOR = ("hash", "mixed", "keygroups")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_co_partitioned_join_equals_plain(sides, plain_joins, join_stats, strategy):
    """Join types in one Spark job per strategy (a union of the results)."""
    left, right = sides
    hows = JOIN_TYPES if strategy in ALL_TYPES_FOR else ["inner", "full"]
    got = _union([_normal(df_join.join_df(left, right, "k", how, num_partitions=N, strategy=strategy,
                                    stats=join_stats), how) for how in hows])
    assertDataFrameEqual(got, [r for r in plain_joins if r["case"] in hows])


SPLIT_CASES = [("inner", "left"), ("inner", "right"), ("left", "left"), ("right", "right"),
               ("left_semi", "left"), ("left_anti", "left")]


def test_hot_key_split_join_equals_plain(sides):
    """Inner and the outer/semi/anti joins preserving only the split side, one job."""
    got, want = [], []
    for how, side in SPLIT_CASES:
        left, right = sides
        if side == "right":
            left, right = right, left  # the skewed side is the split side
        case = f"{how}/{side}"
        got.append(_normal(df_join.join_df(left, right, "k", how, num_partitions=N, strategy="split",
                                     split_side=side), case))
        want.append(_normal(left.join(right, "k", how), case))
    assertDataFrameEqual(_union(got), _union(want))


def test_split_plan_spreads_heavy_keys(skewed):
    stats = df_keystats.key_stats(skewed, "k")
    plan = plan_split(stats, N)
    assert 0 in plan.pieces and len(plan.pieces[0]) >= 2
    assert "heavy keys" in plan.explain()
    got = df_join.join_df(skewed.select("k", "v"), skewed.select("k").distinct(), "k",
                    num_partitions=N, strategy="split", stats=stats)
    sizes = got.rdd.glom().map(len).collect()
    assert max(sizes) / (sum(sizes) / N) < 1.5, sizes


@pytest.mark.parametrize("how,side", [("full", "left"), ("full", "right"), ("left", "right"),
                                      ("right", "left"), ("left_semi", "right"),
                                      ("left_anti", "right")])
def test_split_join_refuses_inexact_types(sides, how, side):
    left, right = sides
    with pytest.raises(ValueError, match="would duplicate rows"):
        df_join.join_df(left, right, "k", how, num_partitions=N, strategy="split", split_side=side)


def test_join_plans_one_exchange_per_side(sides, spark):
    left, right = sides
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        got = df_join.join_df(left, right, "k", num_partitions=N, strategy="hash")
        plan = got._jdf.queryExecution().executedPlan().toString()
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
    assert plan.count("Exchange ") == 2, plan


# --------------------------------------------------------------------------- errors, config
def test_bad_input_errors_are_clear(skewed):
    with pytest.raises(ValueError, match="'nope' not found"):
        sbdf.repartition(skewed, N, "nope")
    with pytest.raises(ValueError, match="num_partitions=0"):
        sbdf.repartition(skewed, 0, "k")
    with pytest.raises(TypeError, match="num_partitions"):
        sbdf.repartition(skewed, "4", "k")
    with pytest.raises(ValueError, match="strategy='nope'"):
        sbdf.repartition(skewed, N, "k", strategy="nope")
    with pytest.raises(ValueError, match="splits keys"):
        sbdf.repartition(skewed, N, "k", strategy="pkg")
    with pytest.raises(ValueError, match="at least one"):
        sbdf.repartition(skewed, N)
    with pytest.raises(ValueError, match="how='sideways'"):
        df_join.join_df(skewed, skewed, "k", "sideways")
    with pytest.raises(ValueError, match="partitioner has 4 partitions"):
        sbdf.repartition(skewed, 5, "k", partitioner=HashPartitioner(4))
    with pytest.raises(ValueError, match="sample_fraction"):
        sbdf.repartition(skewed, N, "k", sample_fraction=0.0)


def test_conf_keys_choose_strategy_and_explicit_wins(spark, skewed):
    spark.conf.set(conf.CONF_STRATEGY, "hash")
    try:
        assert type(sbdf.group_by(skewed, "k", num_partitions=N).partitioner) is HashPartitioner
        g = sbdf.group_by(skewed, "k", num_partitions=N, strategy="keygroups")
        assert type(g.partitioner) is KeyGroupPartitioner
    finally:
        spark.conf.unset(conf.CONF_STRATEGY)
    spark.conf.set(conf.CONF_SAMPLE_FRACTION, "0.5")
    spark.conf.set(conf.CONF_THETA, "0.2")
    try:
        assert conf.resolve(skewed, "strategy") == strategies.DEFAULT_STRATEGY
        assert conf.resolve_sample_fraction(skewed, None) == 0.5
        assert conf.resolve_sample_fraction(skewed, 1.0) is None  # explicit: exact
        assert conf.resolve_strategy(spark, "mintable", {})[1] == {"theta": 0.2}
        assert conf.resolve_strategy(skewed, "mintable", {"theta": 0.1})[1] == {"theta": 0.1}
        assert conf.resolve_strategy(skewed, "keygroups", {})[1] == {}  # table kind only
        assert conf.resolve(skewed.rdd, "theta") == 0.2  # an RDD reads the session too
    finally:
        spark.conf.unset(conf.CONF_SAMPLE_FRACTION)
        spark.conf.unset(conf.CONF_THETA)


def test_unknown_parameters_are_refused_before_any_job(spark, skewed):
    sc = spark.sparkContext
    sc.setJobGroup("sb-refuse", "unknown parameter check")
    try:
        with pytest.raises(TypeError, match="'thetaa'"):
            sbdf.repartition(skewed, N, "k", strategy="mixed", thetaa=0.1)
        with pytest.raises(TypeError, match="'thetaa'"):
            df_join.join_df(skewed, skewed, "k", num_partitions=N, strategy="mixed", thetaa=1)
        with pytest.raises(TypeError, match="'thetaa'"):
            df_join.join_df(skewed, skewed, "k", num_partitions=N, strategy="split", thetaa=1)
        with pytest.raises(ValueError, match="keyed state only"):
            sbdf.fit_partitioner(skewed, N, "k", strategy="mtm")
        assert list(sc.statusTracker().getJobIdsForGroup("sb-refuse")) == []
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)


def test_time_weights_need_the_function_the_measured_stage_ran_with(skewed, stats_k):
    with pytest.raises(ValueError, match="needs current="):
        sbdf.fit_partitioner(skewed, N, "k", weights="time", listener=object())
    with pytest.raises(ValueError, match="weights='nope'"):
        sbdf.fit_partitioner(skewed, N, "k", weights="nope")

    class Recorded:  # the tasks of a balanced run placed by `current` (5x slower on 0)
        def __init__(self, current):
            from types import SimpleNamespace as T
            self._tasks = [T(stage_id=7, stage_attempt=0, partition_id=p, successful=True,
                             finish_time_ms=1, run_time_ms=500 if p == 0 else 100,
                             executor_id="0", job_group=None) for p in range(N)]

        def tasks(self, successful_only=False):
            return self._tasks

    current = sbdf.fit_partitioner(skewed, N, "k", strategy="hash")
    f = sbdf.fit_partitioner(skewed, N, "k", strategy=FITTED, weights="time",
                             listener=Recorded(current), current=current, stats=stats_k)
    assert f.num_partitions == N


def test_sampled_statistics_scale_counts(skewed):
    exact = df_keystats.key_stats(skewed, "k").as_dict()
    sampled = df_keystats.key_stats(skewed, "k", sample_fraction=0.5).as_dict()
    assert abs(sampled[0] - exact[0]) / exact[0] < 0.25


def test_dataframe_methods_and_transform(skewed):
    names = df_install.install_dataframe_methods()
    try:
        assert names == ["balancedRepartition", "balancedGroupBy", "balancedJoin"]
        out = skewed.balancedRepartition(N, "k", strategy="hash")
        assert out.rdd.getNumPartitions() == N
        assertDataFrameEqual(skewed.balancedGroupBy("k", num_partitions=N,
                                                    strategy="hash").count(),
                             skewed.groupBy("k").count())
        small = skewed.select("k").distinct()
        assertDataFrameEqual(skewed.balancedJoin(small, "k", num_partitions=N,
                                                 strategy="hash"), skewed.join(small, "k"))
    finally:
        df_install.uninstall_dataframe_methods()
    assert not hasattr(skewed, "balancedRepartition")
    got = skewed.transform(df_install.balanced_agg("k", F.sum("v").alias("t"), num_partitions=N,
                                             strategy="hash"))
    assertDataFrameEqual(got, skewed.groupBy("k").agg(F.sum("v").alias("t")))
    assert skewed.transform(df_install.balanced_repartition(3, "k", strategy="hash")
                            ).rdd.getNumPartitions() == 3


def test_dataframe_and_rdd_paths_agree(spark, sc):
    """One partition function, two implementations: rdd.partitionBy(n, f) vs repartition."""
    f = PARTITIONERS["table"]
    keys = [f"u{i}" for i in range(40)] + ["x", "u0", "u7"]
    rdd_home = dict(sc.parallelize([(k, 1) for k in keys], 2).partitionBy(N, f)
                    .mapPartitionsWithIndex(lambda i, it: ((k, i) for k, _ in it)).collect())
    df = spark.createDataFrame([(k,) for k in keys], "k string").coalesce(1)
    df_home = dict(sbdf.repartition(df, N, "k", partitioner=f)
                   .select("k", F.spark_partition_id()).collect())
    assert df_home == rdd_home
