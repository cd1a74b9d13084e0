"""Whole-partition columns whose hot keys' totals come with the statistics pass.

Where the look names the keys that can be hot and every summarised column of a group is a
whole-partition aggregate, the statistics pass groups the rows by candidate key and returns
each candidate's exact aggregates with the order sample; the window's plan then reads the
input once (no summaries branch, no join). The payoff rule runs (``auto``, the mode in which
the look runs) with the split's cost set to nothing, so these small tables split.
"""
from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st
from pyspark.sql import Window, functions as F
from pyspark.testing import assertDataFrameEqual

from sparkbalance.spark.window import payoff
from sparkbalance.spark.window.payoff import CORES_CONF, SPLIT_CONF
from sparkbalance.spark.window.windows import with_window_columns

SETTINGS = settings(max_examples=1, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])
SORTS = [lambda c: F.col(c).asc_nulls_first(), lambda c: F.col(c).desc_nulls_last()]


@pytest.fixture(autouse=True)
def split_pays(spark, monkeypatch):
    """The rule of ``auto`` with a split that costs nothing, on as many cores as partitions:
    any key past half a partition's mean rows is split."""
    monkeypatch.setattr(payoff, "OVERHEAD_PER_ROW", 0.0)
    monkeypatch.setattr(payoff, "FIXED_ROWS", 0.0)
    spark.conf.set(SPLIT_CONF, "auto")
    spark.conf.set(CORES_CONF, "4")
    yield
    spark.conf.unset(SPLIT_CONF)
    spark.conf.unset(CORES_CONF)


def _df(spark, shares, seed, n=400):
    rnd = random.Random(seed)
    rows = []
    for u in range(n):
        r, k, acc = rnd.random(), None, 0.0
        for j, s in enumerate(shares):
            acc += s
            if r < acc:
                k = f"h{j}"
                break
        if k is None:
            k = None if r > 0.97 else f"c{rnd.randrange(9)}"
        t = None if rnd.random() < 0.1 else rnd.randrange(60)
        x = None if rnd.random() < 0.1 else rnd.randrange(-5, 20)
        rows.append((k, t, u, x))
    return spark.createDataFrame(rows, "k string, t int, u int, x int")


def _columns(sort):
    w = Window.partitionBy("k").orderBy(sort("t"), "u")
    whole = Window.partitionBy("k")
    return dict(tot=F.sum("x").over(whole), cnt=F.count("x").over(whole),
                mn=F.min("x").over(whole), mx=F.max("x").over(whole),
                av=F.avg("x").over(whole), dec=F.sum(F.col("x").cast("decimal(9,2)")).over(whole),
                prev=F.lag("x", 2).over(w), near=F.sum("x").over(w.rowsBetween(-3, 1)))


@SETTINGS
@example(shares=(0.9,), seed=3, sort=0)
@example(shares=(0.45, 0.3), seed=5, sort=1)
@given(shares=st.sampled_from([(0.6,), (0.45, 0.3), (0.3, 0.25, 0.2)]),
       seed=st.integers(0, 10**6), sort=st.sampled_from(range(2)))
def test_totals_from_the_statistics_pass_equal_plain_spark(spark, shares, seed, sort):
    df = _df(spark, shares, seed)
    cols = _columns(SORTS[sort])
    got = with_window_columns(df, 4, **cols)
    plan = got._jdf.queryExecution().executedPlan().toString()
    assert "__sb_pid" in plan, plan                      # split
    scans = plan.count("Scan ExistingRDD") + plan.count("LocalTableScan")
    assert "Join" not in plan and scans == 1, plan      # the input read once
    assert got.schema == df.withColumns(cols).schema
    assertDataFrameEqual(got, df.withColumns(cols))


def test_a_summary_per_segment_keeps_its_branch(spark):
    """A running column's offsets need the segments' cut: their branch stays (a join), and
    the whole-partition column beside it is corrected from the same branch."""
    df = _df(spark, (0.7,), 11)
    w = Window.partitionBy("k").orderBy("t", "u")
    cols = {"run": F.sum("x").over(w), "tot": F.sum("x").over(Window.partitionBy("k"))}
    got = with_window_columns(df, 4, **cols)
    plan = got._jdf.queryExecution().executedPlan().toString()
    assert "__sb_pid" in plan and "Join" in plan, plan
    assertDataFrameEqual(got, df.withColumns(cols))
