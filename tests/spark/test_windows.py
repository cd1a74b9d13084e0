"""with_window_columns equals df.withColumns on the shared session, hot keys split.

Data is small (a few hundred rows over 4 partitions) so that a hot key is cut into many
segments and every boundary, halo and offset is exercised; the balance check runs the
200,000-row case of the specification.
"""
from __future__ import annotations

import logging

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st
from pyspark.sql import Window, functions as F
from pyspark.testing import assertDataFrameEqual

from sparkbalance.spark.window.payoff import SPLIT_CONF
from sparkbalance.spark.window.windows import explain_split, with_window_columns

# per run, one drawn example of 300 rows (each run draws a new one) and the explicit one (a
# key of 90 %, two partition columns): a call compiles ~115 classes of generated code (the
# cut's literals are new each time), the bulk of its time. Every example computes every
# function and frame kind (the column set is fixed) over data that always holds null keys,
# null values and tied order values; the draws vary sort direction and null placement, frame
# bounds, offsets, buckets, hot share and partition columns from run to run
SETTINGS = settings(max_examples=1, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])
SORTS = [lambda c: F.col(c).asc_nulls_first(), lambda c: F.col(c).asc_nulls_last(),
         lambda c: F.col(c).desc_nulls_first(), lambda c: F.col(c).desc_nulls_last()]


@pytest.fixture(autouse=True)
def always_split(spark):
    """The data here is small: the split is forced so every boundary is exercised (the
    payoff rule, which would run these as plain Spark, has its own tests)."""
    spark.conf.set(SPLIT_CONF, "always")
    yield
    spark.conf.unset(SPLIT_CONF)


def _rows(draw_keys, hot_share, n, seed, t_range=40, null_t=0.1):
    import random
    rnd = random.Random(seed)
    rows = []
    for u in range(n):
        r = rnd.random()
        k = "hot" if r < hot_share else ("warm" if r < hot_share + 0.15 else
                                          None if r > 0.98 else f"c{rnd.randrange(draw_keys)}")
        t = None if rnd.random() < null_t else rnd.randrange(t_range)
        x = None if rnd.random() < 0.1 else rnd.randrange(-5, 20)
        j = rnd.randrange(2)
        # the hot key's rows share j: with PARTITION BY k, j it is still one key
        rows.append((k, 0 if k == "hot" else j, t, u, x))
    return rows


def _columns(total, ties, part=("k",), buckets=3, lag=2, lo=-3, hi=2, reach=2):
    """Every split kind: ``total`` orders rows totally (ROWS frames, row_number, ntile,
    lag/lead are defined only then), ``ties`` keeps peers (rank, RANGE frames)."""
    w = Window.partitionBy(*part).orderBy(*total)
    wt = Window.partitionBy(*part).orderBy(*ties)
    w1 = Window.partitionBy(*part).orderBy(ties[0])   # RANGE offsets take one order key
    return dict(
        rn=F.row_number().over(w), nt=F.ntile(buckets).over(w),
        rk=F.rank().over(wt), dr=F.dense_rank().over(wt), pr=F.percent_rank().over(wt),
        cd=F.cume_dist().over(wt),
        rsum=F.sum("x").over(wt), rcnt=F.count("x").over(wt), rmin=F.min("x").over(wt),
        ravg=F.avg("x").over(wt), rlast=F.last("x").over(w),
        wmax=F.max("x").over(w.rowsBetween(Window.unboundedPreceding, 0)),
        wcnt=F.count(F.lit(1)).over(w.rowsBetween(Window.unboundedPreceding, 0)),
        lg=F.lag("x", lag).over(w), ld=F.lead("x", lag, -1).over(w),
        rows=F.sum("x").over(w.rowsBetween(lo, hi)),
        rowavg=F.avg("x").over(w.rowsBetween(lo, 0)),
        rng=F.sum("x").over(w1.rangeBetween(-reach, reach)),
        fwd=F.count("x").over(w1.rangeBetween(1, reach + 1)),
        tot=F.sum("x").over(Window.partitionBy(*part)),
        tavg=F.avg("x").over(Window.partitionBy(*part)),
        tmin=F.min("x").over(Window.partitionBy(*part)),
    )


def _check(spark, rows, cols, n=4):
    df = spark.createDataFrame(rows, "k string, j int, t int, u int, x int")
    got = with_window_columns(df, n, **cols)
    assert got.columns == df.withColumns(cols).columns
    assertDataFrameEqual(got, df.withColumns(cols))
    return got


@SETTINGS
# always run: one key of 90 % of the rows, two partition columns, ordered descending with
# nulls last
@example(hot_share=0.9, seed=7, sort=3, buckets=3, lag=2, frame=(-3, 2), reach=2, null_t=0.1,
         part=("k", "j"))
@given(hot_share=st.sampled_from([0.3, 0.6, 0.9]), seed=st.integers(0, 10**6),
       sort=st.sampled_from(range(4)), buckets=st.integers(1, 9), lag=st.integers(0, 4),
       frame=st.sampled_from([(-3, 2), (-1, 0), (0, 4), (2, 5), (-6, -2)]),
       reach=st.integers(0, 6), null_t=st.sampled_from([0.0, 0.15]),
       part=st.sampled_from([("k",), ("k", "j")]))
def test_equals_plain_spark(spark, hot_share, seed, sort, buckets, lag, frame, reach, null_t,
                            part):
    rows = _rows(8, hot_share, 300, seed, null_t=null_t)
    order = SORTS[sort]
    cols = _columns([order("t"), "u"], [order("t")], part=part, buckets=buckets, lag=lag,
                    lo=frame[0], hi=frame[1], reach=reach)
    _check(spark, rows, cols)


def test_several_hot_keys_and_ties(spark):
    import random
    rnd = random.Random(3)
    # three hot keys, order values with heavy ties (8 values for ~130 rows each)
    rows = [(rnd.choice(["a", "b", "c", f"z{u % 7}"]), 0, rnd.randrange(8), u,
             rnd.randrange(10)) for u in range(520)]
    _check(spark, rows, _columns([F.col("t"), F.col("u")], [F.col("t").desc()]))


def test_replaced_column_keeps_its_place(spark):
    df = spark.createDataFrame(_rows(3, 0.8, 200, 5), "k string, j int, t int, u int, x int")
    w = Window.partitionBy("k").orderBy("t", "u")
    # (also per-segment summaries of other types: a running max of timestamps and a
    # whole-partition min of decimals)
    cols = {"x": F.sum("x").over(w), "y": F.col("u") + 1, "r": F.rank().over(w),
            "late": F.max(F.timestamp_seconds(F.col("u") * 3601 + 7)).over(w),
            "low": F.min(F.col("u").cast("decimal(12,2)") / 7).over(Window.partitionBy("k"))}
    got = with_window_columns(df, 4, **cols)
    assert got.columns == ["k", "j", "t", "u", "x", "y", "r", "late", "low"]
    assertDataFrameEqual(got, df.withColumns(cols))


def test_unsplittable_column_runs_plain_with_one_log_line(spark, caplog):
    df = spark.createDataFrame(_rows(3, 0.8, 200, 5), "k string, j int, t int, u int, x int")
    w = Window.partitionBy("k").orderBy("t", "u")
    cols = {"sd": F.stddev("x").over(w), "r": F.row_number().over(w)}
    assert explain_split(df, **cols) == {
        "sd": "plain: stddev has no per-range summary to combine", "r": "rank"}
    with caplog.at_level(logging.WARNING, logger="sparkbalance.window"):
        got = with_window_columns(df, 4, **cols)
    lines = [r.getMessage() for r in caplog.records if r.name == "sparkbalance.window"]
    assert len(lines) == 1 and "'sd'" in lines[0] and "stddev" in lines[0]
    assertDataFrameEqual(got, df.withColumns(cols))


def test_float_keys_minus_zero_and_nan_stay_one_partition(spark):
    # cold keys go by Spark's hash: -0.0 and 0.0 (and every NaN) must still meet
    import random
    rnd = random.Random(4)
    keys = [7.0] * 6 + [0.0, -0.0, float("nan"), 1.5, None]
    rows = [(rnd.choice(keys), u, rnd.randrange(9)) for u in range(300)]
    df = spark.createDataFrame(rows, "k double, t int, x int")
    w = Window.partitionBy("k").orderBy("t")
    cols = {"rn": F.row_number().over(w), "s": F.sum("x").over(w), "lg": F.lag("x").over(w)}
    assertDataFrameEqual(with_window_columns(df, 4, **cols), df.withColumns(cols))


def test_not_a_column_fails_before_any_job(spark):
    df = spark.createDataFrame([(1, 2)], "k int, t int")
    with pytest.raises(TypeError, match="'r' is a str; expected a Column"):
        with_window_columns(df, 4, r="row_number()")
    with pytest.raises(ValueError, match="num_partitions"):
        with_window_columns(df, 0, r=F.rank().over(Window.partitionBy("k").orderBy("t")))


def _max_over_mean(df, cols):
    # the window columns are aggregated too: a count alone lets the optimizer drop the window
    sizes = [r[1] for r in df.groupBy(F.spark_partition_id()).agg(
        F.count(F.lit(1)), *[F.max(c) for c in cols]).collect()]
    n = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    sizes += [0] * (n - len(sizes))
    return max(sizes) / (sum(sizes) / len(sizes))


def test_hot_key_of_thirty_percent_is_spread(spark):
    n = 16
    df = spark.range(200_000).select(
        F.when(F.col("id") % 10 < 3, F.lit(0)).otherwise(F.col("id") % 4999 + 1).alias("k"),
        F.col("id").alias("t"), (F.col("id") % 7).alias("x"))
    w = Window.partitionBy("k").orderBy("t")
    cols = {"rn": F.row_number().over(w), "s": F.sum("x").over(w),
            "lg": F.lag("x").over(w)}
    old = {c: spark.conf.get(c) for c in ("spark.sql.shuffle.partitions",
                                           "spark.sql.adaptive.enabled")}
    spark.conf.set("spark.sql.shuffle.partitions", str(n))
    spark.conf.set("spark.sql.adaptive.enabled", "false")  # sizes as the tasks hold them
    try:
        balanced = _max_over_mean(with_window_columns(df, n, **cols), cols)
        plain = _max_over_mean(df.withColumns(cols), cols)
    finally:
        for c, v in old.items():
            spark.conf.set(c, v)
    assert balanced <= 1.3, balanced
    assert plain >= 4.8, plain


def test_window_without_partition_by_is_cut_too(spark):
    df = spark.createDataFrame(_rows(3, 0.5, 300, 9), "k string, j int, t int, u int, x int")
    w = Window.orderBy(F.col("t").desc(), "u")
    cols = {"rn": F.row_number().over(w), "s": F.sum("x").over(w),
            "lg": F.lag("x").over(w), "all": F.max("x").over(Window.partitionBy())}
    assert set(explain_split(df, **cols).values()) == {"rank", "running", "halo", "whole"}
    assertDataFrameEqual(with_window_columns(df, 4, **cols), df.withColumns(cols))


def _jobs(spark, group, fn):
    """fn's result and the jobs it ran: those of ``group`` and the key sample's, which runs
    under sparkbalance's statistics group."""
    from sparkbalance.spark.rdd.keystats import STATS_JOB_GROUP
    sc = spark.sparkContext
    stats = set(sc.statusTracker().getJobIdsForGroup(STATS_JOB_GROUP))
    sc.setJobGroup(group, group)
    try:
        out = fn()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    more = set(sc.statusTracker().getJobIdsForGroup(STATS_JOB_GROUP)) - stats
    return out, len(sc.statusTracker().getJobIdsForGroup(group)) + len(more)


def test_one_statistics_job_and_one_placement_exchange(spark):
    df = spark.range(3000).select(
        F.when(F.col("id") % 10 < 5, F.lit(0)).otherwise(F.col("id") % 97 + 1).alias("k"),
        F.col("id").alias("t"), (F.col("id") % 7).alias("x"))
    w = Window.partitionBy("k").orderBy("t")
    cols = {"rn": F.row_number().over(w), "s": F.sum("x").over(w), "lg": F.lag("x").over(w),
            "near": F.avg("x").over(w.rowsBetween(-5, 5)),
            "tot": F.sum("x").over(Window.partitionBy("k"))}
    out, jobs = _jobs(spark, "sb-win-prep", lambda: with_window_columns(df, 4, **cols))
    assert jobs == 1   # key counts and order samples in one pass; no halo counting job
    plan = out._jdf.queryExecution().executedPlan().toString()
    # the rows cross one exchange (the placement) and are sorted once for all five columns;
    # the other exchanges carry the hot segments' summaries (one row per segment)
    # (Spark 4.1+ places by partition id; older lines hash a route value that lands each
    # row on its partition: either way, one exchange over __sb_pid)
    placements = (plan.count("shufflepartitionidpassthrough")
                  + plan.count("Exchange hashpartitioning(__sb_pid"))
    assert placements == 1, plan
    assert plan.count("Sort [__sb_pid") == 1, plan
    assertDataFrameEqual(out, df.withColumns(cols))


def test_split_runs_plain_when_it_cannot_pay(spark, caplog):
    spark.conf.set(SPLIT_CONF, "auto")
    df = spark.createDataFrame(_rows(3, 0.8, 200, 5), "k string, j int, t int, u int, x int")
    w = Window.partitionBy("k").orderBy("t", "u")
    cols = {"r": F.row_number().over(w)}
    with caplog.at_level(logging.INFO, logger="sparkbalance.window"):
        got, jobs = _jobs(spark, "sb-win-look", lambda: with_window_columns(df, 4, **cols))
    lines = [r.getMessage() for r in caplog.records if r.name == "sparkbalance.window"]
    assert len(lines) == 1 and "plain Spark" in lines[0] and "rows" in lines[0], lines
    # the bounded look at most (none where the plan's row estimate shows that even a key of
    # every row could not pay): no full statistics pass for a split not taken
    assert jobs <= 1
    assert "__sb_pid" not in got._jdf.queryExecution().executedPlan().toString()
    assertDataFrameEqual(got, df.withColumns(cols))
    spark.conf.set(SPLIT_CONF, "nonsense")
    with pytest.raises(ValueError,
                       match="window.split='nonsense'; expected one of auto, always, never"):
        with_window_columns(df, 4, **cols)


def test_payoff_cores_named_by_the_session_setting(spark):
    from sparkbalance.spark.window.payoff import CORES_CONF, cores
    df = spark.range(1)
    try:
        spark.conf.set(CORES_CONF, "16")
        assert cores(df, 16) == 16 and cores(df, 8) == 8    # at most the partitions
        spark.conf.set(CORES_CONF, "0")
        with pytest.raises(ValueError, match="window.cores='0'; expected an integer >= 1"):
            cores(df, 16)
    finally:
        spark.conf.unset(CORES_CONF)
    assert cores(df, 16) <= 2    # local[2]: its slots, at most this machine's cores


def test_halo_copies_carry_wide_columns_thin_and_results_stay_exact(spark):
    """A halo copy carries a wide column no halo column reads as null (empty where the
    column is not nullable); one a halo column reads (here inside ``length``) stays whole,
    and the result, its schema's nullability included, is plain Spark's."""
    import random
    from pyspark.sql.types import IntegerType, StringType, StructField, StructType
    from sparkbalance.spark.window.windows import _HALO, _thin_copies
    rnd = random.Random(11)
    rows = [("hot" if rnd.random() < 0.8 else f"c{u % 5}", u, rnd.randrange(30),
             "p" * rnd.randrange(50), "q" * (u % 7), None if u % 9 == 0 else "s" * (u % 4))
            for u in range(400)]
    schema = StructType([StructField("k", StringType()), StructField("u", IntegerType()),
                         StructField("x", IntegerType()),
                         StructField("pad", StringType(), False),
                         StructField("note", StringType()), StructField("s", StringType())])
    df = spark.createDataFrame(rows, schema)
    w = Window.partitionBy("k").orderBy("u")
    cols = {"prev": F.lag("x").over(w), "near": F.sum(F.length("s")).over(w.rowsBetween(-2, 3)),
            "n": F.row_number().over(w), "tot": F.sum("x").over(Window.partitionBy("k"))}
    got = with_window_columns(df, 4, **cols)
    expected = df.withColumns(cols)
    assert got.schema == expected.schema
    assertDataFrameEqual(got, expected)
    # what a copy carries: pad (not nullable) empty, note null, s (read by a halo) whole
    marked = df.withColumn(_HALO, F.col("u") % 2 == 0)
    thin = _thin_copies(marked, ["pad", "note", "s"], [_split(cols["near"])])
    row = thin.where(F.col("u") == 4).first()
    assert (row["pad"], row["note"], row["s"]) == ("", None, rows[4][5])
    row = thin.where(F.col("u") == 5).first()
    assert (row["pad"], row["note"], row["s"]) == (rows[5][3], rows[5][4], rows[5][5])
    assert thin.schema == marked.schema


def test_a_star_argument_runs_as_plain_spark(spark, caplog):
    """``struct(*)`` in a window function reads every column: over the split it would take
    in the split's own columns, so the column runs as plain Spark, with its reason logged,
    and equals plain Spark (a product, ``x * 2``, still splits)."""
    import logging
    rows = [("hot" if u % 5 else f"c{u % 3}", u, u % 7, "p" * (u % 11)) for u in range(300)]
    df = spark.createDataFrame(rows, "k string, u int, x int, pad string")
    w = Window.partitionBy("k").orderBy("u")
    cols = {"prev": F.lag(F.struct("*")).over(w),
            "js": F.lead(F.to_json(F.struct(df["*"]))).over(w),
            "re": F.lag(F.struct(df.colRegex("`(u|pad)`"))).over(w),
            "dbl": F.lag(F.col("x") * 2).over(w)}
    assert all(_split(cols[c]).kind == "plain" for c in ("prev", "js", "re"))
    assert _split(cols["dbl"]).kind == "halo"
    with caplog.at_level(logging.INFO, logger="sparkbalance.window"):
        got = with_window_columns(df, 4, **cols)
    assert any("every column (*)" in r.getMessage() for r in caplog.records)
    assert got.schema == df.withColumns(cols).schema
    assertDataFrameEqual(got, df.withColumns(cols))


def _split(col):
    from sparkbalance.spark.window.frames import split_of
    from sparkbalance.spark.window.spec import window_column
    return split_of(window_column(col), {})
