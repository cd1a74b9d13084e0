"""Seeded randomised equivalence with plain Spark, for what the other suites leave out.

``test_key_types_equivalence`` covers reduce / group / join of pair RDDs with every key type
and every strategy, ``test_contract_strategies`` the DataFrame ``group_by`` on string keys.
Here: ``aggregate_by_key`` and ``partition_by`` on random skewed pair RDDs with mixed key
types (int, str, float with -0.0, Decimal, date, datetime, tuple, None) under every
strategy; and on random skewed DataFrames keyed by every supported column type (int,
string, double with -0.0 and NaN, decimal, date, timestamp, struct, two columns), every
key-grouping strategy through ``group_by(...).agg``, ``repartition`` and ``join_df``
(inner, left, full; ``strategy="split"`` inner). Each strategy meets a different key type
per seed, so every strategy and every type is covered while the file stays fast.
"""
from __future__ import annotations

import datetime as dt
import math
import operator
import random
from decimal import Decimal

import pytest

import sparkbalance as sb
from sparkbalance import strategies
from sparkbalance.spark.rdd import adapters as sbr
from sparkbalance.spark.sql.join import join_df
from sparkbalance.spark.rdd.keystats import exact_counts

N = 4
SEEDS = [101, 202]


def _usable(names) -> list[str]:
    from sparkbalance.stats import KeyStats
    out = []
    for name in names:
        try:
            strategies.fit(name, KeyStats.from_counts({"a": 5, "b": 1}), N)
        except (ImportError, AttributeError, ValueError):
            continue
        out.append(name)
    return out


RDD_STRATEGIES = _usable(strategies.available())
DF_STRATEGIES = _usable(strategies.KEY_GROUPING)


def _rdd_pool() -> list:
    return ([None, 7, "hot", -0.0, 2.5, Decimal("12.50"), Decimal("0.1"), dt.date(2024, 1, 1),
             dt.datetime(2024, 1, 1, 8, 30), (1, "a"), (dt.date(2024, 3, 1), None)]
            + [f"u{i}" for i in range(15)] + list(range(100, 115)))


def _skewed(rng: random.Random, pool: list, n: int) -> list:
    rng.shuffle(pool)  # a different hot key per seed
    weights = [1.0 / (i + 1) ** 1.4 for i in range(len(pool))]
    return [rng.choices(pool, weights)[0] for _ in range(n)]


@pytest.mark.parametrize("seed", SEEDS)
def test_aggregate_and_partition_by_equal_pyspark(sc, seed):
    rng = random.Random(seed)
    recs = [(k, rng.randrange(100)) for k in _skewed(rng, _rdd_pool(), 500)]
    rdd = sc.parallelize(recs, 3).cache()
    seq, comb = (lambda a, v: (a[0] + v, a[1] + 1)), (lambda a, b: (a[0] + b[0], a[1] + b[1]))
    want = sorted(rdd.aggregateByKey((0, 0), seq, comb, N).collect(), key=repr)
    stats = exact_counts(rdd)
    for name in RDD_STRATEGIES:
        kw = {"stats": stats} if strategies.get(name).needs_stats else {}
        got = sbr.aggregate_by_key(rdd, (0, 0), seq, comb, N, name, **kw).collect()
        assert sorted(got, key=repr) == want, name
        parts = sbr.partition_by(rdd, N, name, **kw).glom().collect()
        assert len(parts) == N, name
        assert sorted((r for p in parts for r in p), key=repr) == sorted(recs, key=repr), name


_BASE = dt.datetime(2024, 5, 1, 9)
#: key type -> (schema of the key columns, a pool of values)
DF_POOLS = {
    "int": ("k bigint", [None, 0, -1, 2 ** 40] + list(range(30))),
    "string": ("k string", [None, "", "é", "hot"] + [f"u{i}" for i in range(30)]),
    "double": ("k double", [None, 0.0, -0.0, math.nan, 1.5, -2.25, math.inf]
               + [i / 7 for i in range(30)]),
    "decimal": ("k decimal(12,3)", [None, Decimal("1.500"), Decimal("0.100"), Decimal("-7.000")]
                + [Decimal(i) / 8 for i in range(30)]),
    "date": ("k date", [None, dt.date(1969, 12, 31)]
             + [dt.date(2024, 1, 1) + dt.timedelta(days=3 * i) for i in range(30)]),
    "timestamp": ("k timestamp", [None] + [_BASE + dt.timedelta(seconds=97 * i, microseconds=i)
                                           for i in range(30)]),
    "struct": ("k struct<a:int,b:string>", [None, (1, None), (None, "x")]
               + [(i % 5, f"s{i % 9}") for i in range(30)]),
    "two": ("k date, j string", [(dt.date(2024, 1, 1), None)]
            + [(dt.date(2024, 1, 1 + i % 6), f"j{i % 4}") for i in range(30)]),
}


def _cols(kind: str) -> list[str]:
    return ["k", "j"] if kind == "two" else ["k"]


def _frame(spark, kind: str, rng: random.Random, rows: int, value: str):
    schema, pool = DF_POOLS[kind]
    keys = _skewed(rng, list(pool), rows)
    two = kind == "two"
    data = [(*k, rng.randrange(50)) if two else (k, rng.randrange(50)) for k in keys]
    return spark.createDataFrame(data, f"{schema}, {value} long")


def _cases() -> list[tuple[int, str, str]]:
    kinds = sorted(DF_POOLS)
    out = []
    # One seed: each case analyses and runs six queries (~5-40 s each on local[2]); the
    # RDD test above takes both.
    for s, seed in enumerate(SEEDS[:1]):
        for i, name in enumerate(DF_STRATEGIES):
            out.append((seed, name, kinds[(i + 3 * s) % len(kinds)]))
    covered = {k for _, _, k in out}
    out += [(SEEDS[0], "mixed", k) for k in kinds if k not in covered]
    return out


@pytest.mark.parametrize("seed,name,kind", _cases())
def test_dataframe_adapters_equal_spark(spark, seed, name, kind):
    from pyspark.sql import functions as F
    from pyspark.testing import assertDataFrameEqual

    rng = random.Random(seed)
    cols = _cols(kind)
    left = _frame(spark, kind, rng, 300, "v").cache()
    right = _frame(spark, kind, rng, 40, "w").dropDuplicates(cols)
    got = sb.group_by(left, *cols, num_partitions=N, strategy=name).agg(
        F.sum("v").alias("s"), F.count(F.lit(1)).alias("c"))
    assertDataFrameEqual(got, left.groupBy(*cols).agg(F.sum("v").alias("s"),
                                                       F.count(F.lit(1)).alias("c")))
    placed = sb.repartition(left, N, *cols, strategy=name)
    assert placed.rdd.getNumPartitions() == N
    assertDataFrameEqual(placed, left)
    for how in ("inner", "left", "full"):
        got = join_df(left, right, cols, how, num_partitions=N, strategy=name)
        assertDataFrameEqual(got, left.join(right, cols, how))
    got = join_df(left, right, cols, "inner", num_partitions=N, strategy="split")
    assertDataFrameEqual(got, left.join(right, cols, "inner"))
    left.unpersist()
