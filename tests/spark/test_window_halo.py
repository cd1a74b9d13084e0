"""The halo targets' two spellings agree: the lookup form (zones in the neighbouring
segment) serves each row to exactly the segments the per-segment form does, over order
keys with ties, nulls, descending and nulls-last orders, one and two order columns."""
from __future__ import annotations

import math
import random

from hypothesis import HealthCheck, given, settings, strategies as st
from pyspark.sql import functions as F

from sparkbalance.spark.window import segments as sg, zones as zn
from sparkbalance.spark.window.halo import _targets_near_sql, _targets_sql
from sparkbalance.spark.window.spec import SortKey

HIDX, SEG = "__sb_hidx", "__sb_seg"


def _sample_orders(df, hidx, ocols, order, hot, seg_rows):
    """Fill each hot key's ``sample``: about ``SAMPLE_PER_SEGMENT`` rows per planned
    segment, as order tuples sorted the way the window sorts them (one job)."""
    fracs = [min(1.0, sg.SAMPLE_PER_SEGMENT * max(1, math.ceil(h.count / seg_rows)) / h.count)
             for h in hot]
    frac = F.element_at(F.array(*[F.lit(f) for f in fracs]), F.col(hidx) + 1)
    rows = (df.where(F.col(hidx) >= 0).where(F.rand(sg.SAMPLE_SEED) < frac)
            .select(hidx, *ocols)
            .orderBy(F.col(hidx), *[k.sort_column(F.col(c)) for k, c in zip(order, ocols)])
            .collect())
    for h in hot:
        h.sample = []
    for r in rows:
        hot[r[0]].sample.append(tuple(r[1:]))


def _targets(df, text):
    rows = df.select("id", F.expr(text).alias("t")).collect()
    return {r["id"]: sorted(x for x in r["t"] if x is not None) for r in rows}


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 10**6), two=st.booleans(), ascending=st.booleans(),
       nulls_first=st.booleans(), before=st.sampled_from([0, 1, 3]),
       after=st.sampled_from([0, 1, 2]), keys=st.sampled_from([1, 2]),
       spread=st.sampled_from([5, 60, 400]))
def test_lookup_targets_equal_the_per_segment_ones(spark, seed, two, ascending, nulls_first,
                                                   before, after, keys, spread):
    rnd = random.Random(seed)
    rows = [(i, rnd.randrange(keys + 3), None if rnd.random() < 0.05 else rnd.randrange(spread),
             rnd.randrange(3)) for i in range(1500)]
    df = spark.createDataFrame(rows, "id long, k long, a long, b long")
    ocols = ["a", "b"] if two else ["a"]
    order = tuple(SortKey(F.col(c), ascending, nulls_first) for c in ocols)
    otypes = [df.schema[c].dataType for c in ocols]
    hot = [sg.HotKey((i,), float(sum(r[1] == i for r in rows))) for i in range(keys)]
    d = df.withColumn(HIDX, sg.hot_index(["k"], [df.schema["k"].dataType], hot))
    _sample_orders(d, HIDX, ocols, order, hot, seg_rows=80.0)
    sg.cut_segments(hot, seg_rows=80.0)
    zn.plan_rows_halo(hot, before, after)
    d = d.withColumn(SEG, sg.segment_expr(HIDX, ocols, order, otypes, hot, df.columns))
    near = _targets_near_sql(HIDX, SEG, ocols, order, otypes, hot, before, after, 0.0)
    general = _targets_sql(HIDX, SEG, ocols, order, otypes, hot, before, after, 0.0)
    if near is None:   # some zone reaches past its neighbour: the general form serves it
        assert spread == 5 or any(None in t for h in hot for t in h.sample)
        return
    assert _targets(d, near) == _targets(d, general)


def test_lookup_form_is_taken_for_a_short_frame(spark):
    rows = [(i, 0 if i % 10 else 1 + i % 7, i // 2) for i in range(4000)]
    df = spark.createDataFrame(rows, "id long, k long, a long")
    order = (SortKey(F.col("a"), True, True),)
    otypes = [df.schema["a"].dataType]
    hot = [sg.HotKey((0,), 3600.0)]
    d = df.withColumn(HIDX, sg.hot_index(["k"], [df.schema["k"].dataType], hot))
    _sample_orders(d, HIDX, ["a"], order, hot, seg_rows=300.0)
    sg.cut_segments(hot, seg_rows=300.0)
    zn.plan_rows_halo(hot, 2, 1)
    near = _targets_near_sql(HIDX, SEG, ["a"], order, otypes, hot, 2, 1, 0.0)
    assert near is not None and hot[0].segments > 5
    assert near.count("WHEN") < 10   # no branch per segment
