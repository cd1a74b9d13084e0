"""Balanced applyInPandas / applyInArrow / cogroup: same results as plain Spark, one exchange
per side, no helper column seen by the function, time-priced groups."""
from __future__ import annotations

import functools
import random
from types import SimpleNamespace as T
from typing import Iterator

import pandas as pd
import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

import sparkbalance as sb
from sparkbalance import strategies
from sparkbalance.routing import HashPartitioner
from sparkbalance.spark.sql import grouped
from sparkbalance.spark.sql import route as sqlroute
from sparkbalance.spark.sql.keystats import key_stats

N = 4
STRATEGIES = list(strategies.KEY_GROUPING)
SCHEMA = "k int, n long, sv long, cols string"
SCHEMA2 = "k int, s string, n long, nkey int, cols string"
CO_SCHEMA = "k int, nl long, nr long, cols string"


def _rows(num: int = 240, keys: int = 24, seed: int = 5):
    rng = random.Random(seed)
    out = []
    for _ in range(num):
        r = rng.random()
        k = None if r < 0.05 else (0 if r < 0.4 else rng.randrange(keys))
        s = None if rng.random() < 0.05 else f"s{rng.randrange(3)}"
        out.append((k, s, rng.randrange(100)))
    return out


@pytest.fixture(scope="module")
def data(spark):
    spark.conf.set("spark.sql.adaptive.enabled", "true")
    return spark.createDataFrame(_rows(), "k int, s string, v long").coalesce(1).cache()


@pytest.fixture(scope="module")
def other(spark):
    # keys 30..59: some shared with `data`, some only here (empty left frames), nulls too
    rows = [(k, i) for i, k in enumerate(list(range(16, 36)) * 2 + [None, None, 0])]
    return spark.createDataFrame(rows, "k int, w long").coalesce(1).cache()


def _k(value):
    return pd.array([None if pd.isna(value) else int(value)], dtype="Int32")


def per_group(pdf):
    """One row per group; odd keys give an empty frame (empty output groups)."""
    k = pdf["k"].iloc[0]
    if pd.notna(k) and k % 2 == 1:
        return pd.DataFrame({"k": pd.Series([], dtype="Int32"),
                             "n": pd.Series([], dtype="int64"),
                             "sv": pd.Series([], dtype="int64"),
                             "cols": pd.Series([], dtype=object)})
    return pd.DataFrame({"k": _k(k), "n": [len(pdf)], "sv": [int(pdf["v"].sum())],
                         "cols": [",".join(pdf.columns)]})


def per_group_keyed(key, pdf):
    return pd.DataFrame({"k": _k(key[0]), "s": [key[1]], "n": [len(pdf)], "nkey": [len(key)],
                         "cols": [",".join(pdf.columns)]})


def co_func(left, right):
    k = left["k"].iloc[0] if len(left) else right["k"].iloc[0]
    return pd.DataFrame({"k": _k(k), "nl": [len(left)], "nr": [len(right)],
                         "cols": [",".join(left.columns) + "|" + ",".join(right.columns)]})


def _union(frames):
    return functools.reduce(lambda a, b: a.unionByName(b), frames)


def _exchanges(df) -> int:
    return df._jdf.queryExecution().executedPlan().toString().count("Exchange ")


@pytest.fixture(scope="module")
def stats_k(data):
    return key_stats(data, "k")


@pytest.fixture(scope="module")
def plain_rows(data):
    return data.groupBy("k").applyInPandas(per_group, SCHEMA).collect()


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_apply_in_pandas_equals_plain_spark(data, stats_k, plain_rows, strategy):
    """Every key-grouping strategy; null keys and empty output groups included."""
    g = sb.group_by(data, "k", num_partitions=N, strategy=strategy, stats=stats_k)
    out = g.applyInPandas(per_group, SCHEMA)
    assert out.columns == ["k", "n", "sv", "cols"]
    got = out.collect()
    assertDataFrameEqual(got, plain_rows)
    assert {r["cols"] for r in got} == {"k,s,v"}   # the helper column never reached func


def test_multi_column_keys_and_the_key_tuple(data):
    from pyspark.sql import Row
    cases = ("hash", "keygroups", "mixed")
    got = [sb.group_by(data, "k", "s", num_partitions=N, strategy=s)
           .applyInPandas(per_group_keyed, SCHEMA2).withColumn("case", F.lit(s))
           for s in cases]
    plain = data.groupBy("k", "s").applyInPandas(per_group_keyed, SCHEMA2).collect()
    assertDataFrameEqual(_union(got), [Row(**r.asDict(), case=s) for s in cases
                                       for r in plain])


def test_empty_input(spark):
    empty = spark.createDataFrame([], "k int, s string, v long")
    out = sb.group_by(empty, "k", num_partitions=N, strategy="mixed").applyInPandas(
        per_group, SCHEMA)
    assert out.collect() == []


def test_one_exchange_and_no_helper_column(data, other, stats_k):
    g = sb.group_by(data, "k", num_partitions=N, strategy="mixed", stats=stats_k)
    out = g.applyInPandas(per_group, SCHEMA)
    assert _exchanges(out) == 1 and sqlroute.PID_COL not in out.columns
    other_g = sb.group_by(other, "k", num_partitions=N, strategy="hash")
    spark = data.sparkSession
    from sparkbalance.spark.sql.grouped import COPARTITION_CONF
    from sparkbalance.spark.sql.placement import has_repartition_by_id
    if not has_repartition_by_id(data):  # Spark 3.5/4.0: refused unless the conf allows it
        spark.conf.set(COPARTITION_CONF, "true")
        with pytest.raises(RuntimeError, match=COPARTITION_CONF):
            g.cogroup(other_g)
        spark.conf.set(COPARTITION_CONF, "false")
    try:
        co = g.cogroup(other_g)
        assert _exchanges(co.applyInPandas(co_func, CO_SCHEMA)) == 2  # one per side
    finally:
        spark.conf.set(COPARTITION_CONF, "false")  # the session's setting (conftest)


@pytest.fixture(scope="module")
def plain_co_rows(data, other):
    return data.groupBy("k").cogroup(other.groupBy("k")).applyInPandas(
        co_func, CO_SCHEMA).collect()


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_cogroup_equals_plain_spark(data, other, stats_k, plain_co_rows, strategy):
    """Keys on one side only (empty frames on the other) and null keys included."""
    cg = sb.group_by(data, "k", num_partitions=N, strategy=strategy, stats=stats_k).cogroup(
        sb.group_by(other, "k", num_partitions=N, strategy=strategy,
                    stats=key_stats(other, "k")))
    got = cg.applyInPandas(co_func, CO_SCHEMA).collect()
    assertDataFrameEqual(got, plain_co_rows)
    assert {r["cols"] for r in got} == {"k,s,v|k,w"}


def test_cogroup_places_both_sides_by_one_function(data, other):
    f = HashPartitioner(N)
    left = sb.group_by(data, "k", num_partitions=N, partitioner=f)
    right = sb.group_by(other, "k", num_partitions=N, partitioner=f)
    assert left.cogroup(right).partitioner is f       # shared: the placements are reused
    cg = sb.group_by(data, "k", num_partitions=N, strategy="mixed").cogroup(
        sb.group_by(other, "k", num_partitions=N, strategy="hash"))
    assert cg.partitioner.num_partitions == N          # refitted on both sides (left's strategy)
    with pytest.raises(ValueError, match="differ in length"):
        left.cogroup(sb.group_by(other, "k", "w", num_partitions=N, strategy="hash"))


@pytest.mark.skipif(not grouped.has_arrow_api(), reason="applyInArrow needs PySpark >= 4.0")
def test_apply_in_arrow_and_cogroup_arrow(data, other, stats_k):
    import pyarrow as pa

    def arrow_group(table):
        return pa.table({"k": pa.array([table.column("k")[0].as_py()], pa.int32()),
                         "n": [table.num_rows], "sv": [sum(table.column("v").to_pylist())],
                         "cols": [",".join(table.schema.names)]})

    def arrow_co(key, left, right):
        return pa.table({"k": pa.array([key[0].as_py()], pa.int32()), "nl": [left.num_rows],
                         "nr": [right.num_rows],
                         "cols": [",".join(left.schema.names + ["|"] + right.schema.names)]})
    g = sb.group_by(data, "k", num_partitions=N, strategy="keygroups", stats=stats_k)
    out = g.applyInArrow(arrow_group, SCHEMA)
    assert _exchanges(out) == 1
    assertDataFrameEqual(out, data.groupBy("k").applyInArrow(arrow_group, SCHEMA))
    co = g.cogroup(sb.group_by(other, "k", num_partitions=N, strategy="keygroups",
                               stats=key_stats(other, "k")))
    assertDataFrameEqual(co.applyInArrow(arrow_co, CO_SCHEMA),
                         data.groupBy("k").cogroup(other.groupBy("k"))
                         .applyInArrow(arrow_co, CO_SCHEMA))


def test_iterator_form_is_kept(data):
    def batches(key, it: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        n, cols = 0, ""
        for b in it:
            n, cols = n + len(b), ",".join(b.columns)
        yield pd.DataFrame({"k": _k(key[0]), "n": [n], "sv": [len(key)], "cols": [cols]})
    batches.__annotations__ = {"key": tuple, "it": Iterator[pd.DataFrame],
                               "return": Iterator[pd.DataFrame]}
    try:
        plain = data.groupBy("k").applyInPandas(batches, SCHEMA)
        plain.collect()
    except Exception:  # pragma: no cover - PySpark < 4.1 has no iterator form
        pytest.skip("this PySpark has no iterator form of applyInPandas")
    g = sb.group_by(data, "k", num_partitions=N, strategy="hash")
    assertDataFrameEqual(g.applyInPandas(batches, SCHEMA), plain)


def test_bad_function_arity_is_refused(data):
    g = sb.group_by(data, "k", num_partitions=N, strategy="hash")
    with pytest.raises(ValueError, match="expected 1 .data. or 2"):
        g.applyInPandas(lambda a, b, c: a, SCHEMA)


def test_group_cost_stats_price_groups_by_the_measured_times(data, stats_k):
    """Constant per-group cost (1 s a group, rows free): every key costs about 1 s."""
    stats = stats_k
    f = sb.group_by(data, "k", num_partitions=N, strategy="hash", stats=stats).partitioner
    groups = [int((f.assign(stats.keys) == p).sum()) for p in range(N)]

    class Listener:
        def tasks(self, successful_only=False):
            return [T(stage_id=3, stage_attempt=0, partition_id=p, successful=True,
                      finish_time_ms=1, run_time_ms=1000 * groups[p] + 50, job_group=None)
                    for p in range(N)]
    priced, model = grouped.group_cost_stats(data, "k", listener=Listener(), current=f,
                                             stats=stats)
    assert model.beta == pytest.approx(1.0, rel=1e-6) and model.alpha == pytest.approx(0.0)
    assert priced.cost.tolist() == pytest.approx([1.0] * len(stats))
    out = sb.group_by(data, "k", num_partitions=N, strategy="mixed", stats=priced)
    assert out.partitioner.num_partitions == N


def _constant_cost_listener(f, keys):
    """A listener whose measured run cost 1 s per group placed by ``f`` (rows free)."""
    groups = [int((f.assign(keys) == p).sum()) for p in range(f.num_partitions)]

    class Listener:
        def tasks(self, successful_only=False):
            return [T(stage_id=3, stage_attempt=0, partition_id=p, successful=True,
                      finish_time_ms=1, run_time_ms=1000 * groups[p] + 50, job_group=None)
                    for p in range(f.num_partitions)]
    return Listener()


def test_group_by_time_weights_price_each_group_by_the_measured_run(data, stats_k,
                                                                     plain_rows):
    f = sb.group_by(data, "k", num_partitions=N, strategy="hash", stats=stats_k).partitioner
    lst = _constant_cost_listener(f, stats_k.keys)
    g = sb.group_by(data, "k", num_partitions=N, strategy="mixed", weights="time",
                    listener=lst, current=f)
    priced = g._source["stats"]
    assert priced.cost.tolist() == pytest.approx([1.0] * len(stats_k))   # groups, not rows
    assert priced.counts.tolist() == stats_k.counts.tolist()
    assertDataFrameEqual(g.applyInPandas(per_group, SCHEMA), plain_rows)
    with pytest.raises(ValueError, match="listener="):
        sb.group_by(data, "k", num_partitions=N, weights="time", current=f)
    with pytest.raises(ValueError, match="current="):
        sb.group_by(data, "k", num_partitions=N, weights="time", listener=lst)


def test_a_timed_cogroup_prices_both_sides_rows_by_the_measured_run(data, other,
                                                                    plain_co_rows):
    both = grouped._sum_stats(key_stats(data, "k"), key_stats(other, "k"))
    f = sb.group_by(data, "k", num_partitions=N, strategy="hash").partitioner
    lst = _constant_cost_listener(f, both.keys)
    left = sb.group_by(data, "k", num_partitions=N, strategy="mixed", weights="time",
                       listener=lst, current=f)
    right = sb.group_by(other, "k", num_partitions=N, strategy="mixed")
    seen = {}
    real = left.place_with
    left.place_with = lambda o, s: seen.setdefault("stats", s) and real(o, s)
    cg = left.cogroup(right)
    # every key of either side costs one group's second, whatever its rows on each side
    assert sorted(seen["stats"].cost.tolist()) == pytest.approx([1.0] * len(both))
    assertDataFrameEqual(cg.applyInPandas(co_func, CO_SCHEMA), plain_co_rows)
