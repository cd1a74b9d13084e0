"""Grouped-map functions over expression (``Column``) keys: the function gets exactly what
plain Spark's ``df.groupBy(expr).applyInPandas`` gives it (the DataFrame's own columns; the
expression's value in the key tuple of the two-argument form), never the helper columns,
for every key-grouping strategy, mixed name + expression keys and null results."""
from __future__ import annotations

import functools
import random
from typing import Iterator

import pandas as pd
import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

import sparkbalance as sb
from sparkbalance import strategies
from sparkbalance.spark.sql import grouped

N = 4
STRATEGIES = list(strategies.KEY_GROUPING)
SCHEMA = "case string, form string, key string, cols string, dtypes string, n long, sv long"
SCHEMA_COLUMNS = ["case", "form", "key", "cols", "dtypes", "n", "sv"]
CO_SCHEMA = "case string, key string, cols string, nl long, nr long"


def _keys():
    """Key cases: an expression (nulls from null k), an expression null by itself, an
    aliased expression, and an expression next to a plain name."""
    return {
        "mod": [F.col("k") % 5],
        "when": [F.when(F.col("v") > 60, F.col("k") % 7)],
        "alias": [(F.col("k") + 1).alias("k1")],
        "mixed": [F.lower("s"), "k"],
    }


@pytest.fixture(scope="module")
def data(spark):
    rng = random.Random(11)
    rows = []
    for _ in range(300):
        r = rng.random()
        k = None if r < 0.05 else (0 if r < 0.4 else rng.randrange(30))
        s = None if rng.random() < 0.05 else rng.choice(["A", "a", "B", "b"])
        rows.append((k, s, rng.randrange(100)))
    return spark.createDataFrame(rows, "k int, s string, v long").coalesce(1).cache()


@pytest.fixture(scope="module")
def other(spark):
    rows = [(k, i) for i, k in enumerate(list(range(10, 40)) * 2 + [None, 0])]
    return spark.createDataFrame(rows, "k int, w long").coalesce(1).cache()


def _summary(case: str, form: str, key: object, pdf: pd.DataFrame) -> pd.DataFrame:
    # repr(key) pins the key tuple's values *and* types (numpy scalars, nan for null).
    return pd.DataFrame({"case": [case], "form": [form], "key": [repr(key)],
                         "cols": [",".join(pdf.columns)],
                         "dtypes": [",".join(map(str, pdf.dtypes))],
                         "n": [len(pdf)], "sv": [int(pdf["v"].sum())]})


def _one_arg(case):
    def per_group(pdf):
        return _summary(case, "data", "", pdf)
    return per_group


def _two_arg(case):
    def per_group(key, pdf):
        return _summary(case, "key,data", key, pdf)
    return per_group


def _union(frames):
    return functools.reduce(lambda a, b: a.unionByName(b), frames)


def _exchanges(df) -> int:
    return df._jdf.queryExecution().executedPlan().toString().count("Exchange ")


def _both_forms(grouped_data, case):
    return [grouped_data.applyInPandas(_one_arg(case), SCHEMA),
            grouped_data.applyInPandas(_two_arg(case), SCHEMA)]


@pytest.fixture(scope="module")
def plain_rows(data):
    return _union([out for case, keys in _keys().items()
                   for out in _both_forms(data.groupBy(*keys), case)]).collect()


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_expression_keys_equal_plain_spark(data, plain_rows, strategy):
    outs = [out for case, keys in _keys().items()
            for out in _both_forms(sb.group_by(data, *keys, num_partitions=N,
                                               strategy=strategy), case)]
    assert all(_exchanges(out) == 1 and out.columns == SCHEMA_COLUMNS for out in outs)
    got = _union(outs).collect()
    assertDataFrameEqual(got, plain_rows)
    assert {r["cols"] for r in got} == {"k,s,v"}          # no helper column reached func
    nulls = {r["case"] for r in got if r["key"].startswith("(np.float64(nan)")
             or r["key"].startswith("(None")}
    assert {"mod", "when", "mixed"} <= nulls              # null results grouped as in Spark



def test_identity_function_returns_the_dataframe_without_helpers(data):
    g = sb.group_by(data, F.col("k") % 5, "s", num_partitions=N, strategy="mixed")
    out = g.applyInPandas(lambda pdf: pdf, data.schema)
    assert out.columns == data.columns
    assertDataFrameEqual(out, data)


def test_iterator_form_over_an_expression_key(data):
    def batches(key, it: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        frames = list(it)
        yield _summary("it", "iter", key, pd.concat(frames) if frames else pd.DataFrame(
            {"k": [], "s": [], "v": []}))
    batches.__annotations__ = {"key": tuple, "it": Iterator[pd.DataFrame],
                               "return": Iterator[pd.DataFrame]}
    key = F.col("k") % 5
    try:
        plain = data.groupBy(key).applyInPandas(batches, SCHEMA).collect()
    except Exception:  # pragma: no cover - PySpark < 4.1 has no iterator form
        pytest.skip("this PySpark has no iterator form of applyInPandas")
    g = sb.group_by(data, key, num_partitions=N, strategy="keygroups")
    assertDataFrameEqual(g.applyInPandas(batches, SCHEMA), plain)


# ------------------------------------------------------------------------------ cogroup
def co_func(case):
    def both(key, left, right):
        return pd.DataFrame({"case": [case], "key": [repr(key)],
                             "cols": [",".join(left.columns) + "|" + ",".join(right.columns)],
                             "nl": [len(left)], "nr": [len(right)]})
    return both


def _co_keys():
    """(left keys, right keys): expressions both sides, one side an expression null by
    itself, and mixed name + expression."""
    return {
        "mod": ([F.col("k") % 6], [F.col("k") % 6]),
        "when": ([F.col("k") % 6], [F.when(F.col("w") % 4 > 0, F.col("k") % 6)]),
        "mixed": ([F.col("k") % 6, "k"], [F.col("k") % 6, "k"]),
    }


@pytest.fixture(scope="module")
def plain_co_rows(data, other):
    return _union([data.groupBy(*lk).cogroup(other.groupBy(*rk)).applyInPandas(
        co_func(case), CO_SCHEMA) for case, (lk, rk) in _co_keys().items()]).collect()


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_cogroup_over_expression_keys_equals_plain_spark(data, other, plain_co_rows,
                                                          strategy):
    outs = []
    for case, (lk, rk) in _co_keys().items():
        cg = sb.group_by(data, *lk, num_partitions=N, strategy=strategy).cogroup(
            sb.group_by(other, *rk, num_partitions=N, strategy=strategy))
        outs.append(cg.applyInPandas(co_func(case), CO_SCHEMA))
    assert all(_exchanges(out) == 2 for out in outs)       # one per side
    got = _union(outs).collect()
    assertDataFrameEqual(got, plain_co_rows)
    assert {r["cols"] for r in got} == {"k,s,v|k,w"}


# -------------------------------------------------------------------------------- Arrow
@pytest.mark.skipif(not grouped.has_arrow_api(), reason="applyInArrow needs PySpark >= 4.0")
def test_apply_in_arrow_over_expression_keys(data, other):
    import pyarrow as pa

    def arrow_group(key, table):
        return pa.table({"key": [repr([k.as_py() for k in key])],
                         "cols": [",".join(table.schema.names)], "n": [table.num_rows]})

    def arrow_co(key, left, right):
        return pa.table({"key": [repr([k.as_py() for k in key])],
                         "cols": [",".join(left.schema.names + ["|"] + right.schema.names)],
                         "n": [left.num_rows + right.num_rows]})
    schema = "key string, cols string, n long"
    keys = [F.col("k") % 5, "s"]
    g = sb.group_by(data, *keys, num_partitions=N, strategy="mixed")
    out = g.applyInArrow(arrow_group, schema)
    assert _exchanges(out) == 1
    assertDataFrameEqual(out, data.groupBy(*keys).applyInArrow(arrow_group, schema))
    co = sb.group_by(data, F.col("k") % 6, num_partitions=N, strategy="keygroups").cogroup(
        sb.group_by(other, F.col("k") % 6, num_partitions=N, strategy="keygroups"))
    got = co.applyInArrow(arrow_co, schema)
    assertDataFrameEqual(got, data.groupBy(F.col("k") % 6).cogroup(
        other.groupBy(F.col("k") % 6)).applyInArrow(arrow_co, schema))
    assert {r["cols"] for r in got.collect()} == {"k,s,v,|,k,w"}


def test_each_expression_group_holds_the_rows_plain_spark_gives_it(data):
    """Each group's frame holds the same multiset of rows as plain Spark's."""
    def rows(key, pdf):
        return pd.DataFrame({"key": [repr(key)],
                             "rows": [";".join(sorted(map(str, pdf.itertuples(index=False))))]})
    key = F.when(F.col("v") > 60, F.col("k") % 7)
    g = sb.group_by(data, key, num_partitions=N, strategy="mintable")
    assertDataFrameEqual(g.applyInPandas(rows, "key string, rows string"),
                         data.groupBy(key).applyInPandas(rows, "key string, rows string"))
