"""Seeded randomised equivalence: skewed pair RDDs whose keys are None, Decimal, date,
datetime, time, timedelta, float (with -0.0) and tuples of these equal plain PySpark through
every strategy and the reduce / aggregate / group / join adapters."""
from __future__ import annotations

import datetime as dt
import operator
import random
from decimal import Decimal

import pytest

from sparkbalance import strategies
from sparkbalance.spark.rdd import adapters as sbr
from sparkbalance.spark.rdd.keystats import exact_counts

N = 4


def _strategies() -> list[str]:
    from sparkbalance.stats import KeyStats
    names = []
    for name in strategies.available():
        try:
            strategies.fit(name, KeyStats.from_counts({"a": 5, "b": 1}), N)
        except (ImportError, AttributeError):
            continue
        names.append(name)
    return names


def _pool(rng: random.Random) -> list:
    base = dt.datetime(2024, 1, 1)
    # one representative per equal value: plain Spark keeps whichever equal key came first
    return ([None, Decimal("12.50"), Decimal("0.1"), Decimal("7.25"), 3, -0.0, 0.5]
            + [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(8)]
            + [base + dt.timedelta(minutes=37 * i) for i in range(8)]
            + [dt.time(i, 30) for i in range(4)] + [dt.timedelta(seconds=i) for i in range(4)]
            + [(dt.date(2024, 2, i + 1), None) for i in range(4)])


def _records(seed: int) -> list[tuple]:
    rng = random.Random(seed)
    pool = _pool(rng)
    weights = [1.0 / (i + 1) ** 1.2 for i in range(len(pool))]  # Zipf-skewed
    return [(rng.choices(pool, weights)[0], rng.randrange(100)) for _ in range(600)]


def _key(x):
    return repr(x)


@pytest.mark.parametrize("seed", [1, 2])
def test_new_key_types_equal_pyspark(sc, seed):
    left = sc.parallelize(_records(seed), 3).cache()
    right = sc.parallelize([(None, "n"), (0.5, "half"), (dt.date(2024, 1, 1), "d")], 1)
    want_reduce = sorted(left.reduceByKey(operator.add, N).collect(), key=_key)
    want_group = sorted(((k, sorted(v)) for k, v in left.groupByKey(N).collect()), key=_key)
    want_join = sorted(left.join(right, N).collect(), key=_key)
    stats = exact_counts(left)
    for strategy in _strategies():
        kw = {"stats": stats} if strategies.get(strategy).needs_stats else {}
        got = sbr.reduce_by_key(left, operator.add, N, strategy, **kw).collect()
        assert sorted(got, key=_key) == want_reduce, strategy
        got = sbr.group_by_key(left, N, strategy, **kw).collect()
        assert sorted(((k, sorted(v)) for k, v in got), key=_key) == want_group, strategy
        got = sbr.join(left, right, N, strategy, **kw).collect()
        assert sorted(got, key=_key) == want_join, strategy
