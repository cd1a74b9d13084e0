"""Every RDD adapter equals plain PySpark on skewed data, for every registered strategy."""
from __future__ import annotations

import operator
import random

import pytest

from sparkbalance import strategies
from sparkbalance.routing.pkg import pkg_candidates
from sparkbalance.spark.rdd import adapters as sbr
from sparkbalance.spark.rdd.keystats import exact_counts, gather_key_stats, spacesaving_summary

N = 3
# The hot key: PKG's two hashes coincide for 1/N of the keys (then PKG cannot split the key,
# by design), so take the first name whose two PKG candidates differ rather than rely on
# the hash values of one literal.
HOT = next(k for k in (f"hot{i}" for i in range(100)) if len(set(pkg_candidates(k, N))) == 2)


def _strategies() -> list[str]:
    """Registered strategies whose fitter can be imported today (planners land over time)."""
    from sparkbalance.stats import KeyStats
    names = []
    for name in strategies.available():
        try:
            strategies.fit(name, KeyStats.from_counts({"a": 5, "b": 1}), N)
        except (ImportError, AttributeError):
            continue
        names.append(name)
    return names


STRATEGIES = _strategies()


def _records() -> list[tuple]:
    rng = random.Random(3)
    recs = [(HOT, i) for i in range(600)] + [(7, i) for i in range(150)]
    recs += [(rng.randrange(60), rng.randrange(100)) for _ in range(400)]
    recs += [(f"s{rng.randrange(30)}", i) for i in range(200)]
    rng.shuffle(recs)
    return recs


@pytest.fixture(scope="module")
def data(sc):
    left = sc.parallelize(_records(), 2).cache()
    right = sc.parallelize([(HOT, "H1"), (HOT, "H2"), (7, "seven"), (3, "three"),
                            ("s1", "x"), ("nope", "y")], 1).cache()
    return left, right


def _norm_groups(rows):
    return sorted(((k, sorted(v)) for k, v in rows), key=repr)


@pytest.fixture(scope="module")
def stats(data):
    return exact_counts(data[0])  # gathered once: keeps the module fast


@pytest.fixture(scope="module")
def expected(data):
    left, right = data
    return {
        "reduce": sorted(left.reduceByKey(operator.add, N).collect(), key=repr),
        "aggregate": sorted(left.aggregateByKey((0, 0), lambda a, v: (a[0] + v, a[1] + 1),
                                                lambda a, b: (a[0] + b[0], a[1] + b[1]),
                                                N).collect(), key=repr),
        "group": sorted(_norm_groups(left.groupByKey(N).collect()), key=repr),
        "join": sorted(left.join(right, N).collect(), key=repr),
    }


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_adapters_equal_pyspark(data, expected, stats, strategy):
    left, right = data
    kw = {} if not strategies.get(strategy).needs_stats else {"stats": stats}
    got = sbr.reduce_by_key(left, operator.add, N, strategy, **kw).collect()
    assert sorted(got, key=repr) == expected["reduce"]
    got = sbr.aggregate_by_key(left, (0, 0), lambda a, v: (a[0] + v, a[1] + 1),
                               lambda a, b: (a[0] + b[0], a[1] + b[1]), N, strategy, **kw)
    assert sorted(got.collect(), key=repr) == expected["aggregate"]
    got = sbr.group_by_key(left, N, strategy, **kw).collect()
    assert sorted(_norm_groups(got), key=repr) == expected["group"]
    got = sbr.join(left, right, N, strategy, **kw).collect()
    assert sorted(got, key=repr) == expected["join"]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_partition_by_keeps_every_record_and_splits_only_when_allowed(data, stats, strategy):
    left, _ = data
    kw = {"stats": stats} if strategies.get(strategy).needs_stats else {}
    parts = sbr.partition_by(left, N, strategy, **kw).glom().collect()
    assert len(parts) == N
    assert sorted((r for p in parts for r in p), key=repr) == sorted(_records(), key=repr)
    homes = {}
    for i, p in enumerate(parts):
        for k, _ in p:
            homes.setdefault(k, set()).add(i)
    if strategies.get(strategy).splits_keys:
        assert len(homes[HOT]) >= 2  # the hot key really is split
        loads = [len(p) for p in parts]
        assert max(loads) / (sum(loads) / N) < 1.6
    else:
        assert all(len(s) == 1 for s in homes.values())


def test_default_partitions_and_fitted_function(sc, data):
    left, _ = data
    f = sbr.fit_partitioner(left, N, strategy="dchoices")
    assert f.splits_keys and HOT in f.heavy_keys
    out = sbr.reduce_by_key(left, operator.add, None, "hash")
    assert out.getNumPartitions() == left._defaultReducePartitions()
    fitted = sbr.reduce_by_key(left, operator.add, None, f)  # a fitted function: its own n
    assert fitted.getNumPartitions() == N
    assert sorted(fitted.collect(), key=repr) == sorted(left.reduceByKey(operator.add).collect(),
                                                        key=repr)
    with pytest.raises(ValueError, match="partitions"):
        sbr.reduce_by_key(left, operator.add, N + 1, f)


def test_keystats_methods_agree_on_heavy_keys(data):
    left, _ = data
    exact = exact_counts(left).as_dict()
    assert exact[HOT] == 600 and exact[7] == sum(1 for k, _ in _records() if k == 7)
    sampled = gather_key_stats(left, sample_fraction=0.5).as_dict()
    assert abs(sampled[HOT] - 600) < 120
    ss = spacesaving_summary(left, 20)
    assert ss.total == len(_records())
    lo, hi = ss.bounds(HOT)
    assert lo <= 600 <= hi
    top = gather_key_stats(left, method="spacesaving", capacity=20)
    assert top.keys[0] == HOT


@pytest.mark.parametrize("bad, exc, match", [
    (frozenset({1}), TypeError, "frozenset"), (("x", frozenset()), TypeError, "frozenset"),
])
def test_bad_keys_raise_clear_errors_on_the_driver(sc, bad, exc, match):
    rdd = sc.parallelize([("a", 1), (bad, 2), ("b", 3)], 2)
    with pytest.raises(exc, match=match):
        exact_counts(rdd)
    with pytest.raises(exc, match=match):
        spacesaving_summary(rdd, 4)
    with pytest.raises(exc, match=match):
        sbr.fit_partitioner(rdd, 2, strategy="wchoices")


def test_bad_keys_in_routing_name_the_type(sc):
    rdd = sc.parallelize([("a", 1), (frozenset(), 2)], 1)
    for strategy in ("hash", "pkg"):
        with pytest.raises(Exception, match="frozenset"):
            sbr.reduce_by_key(rdd, operator.add, 2, strategy).collect()


@pytest.mark.parametrize("call, exc, match", [
    (lambda r: sbr.partition_by(r, 0), ValueError, "num_partitions=0"),
    (lambda r: sbr.partition_by(r, 2, "nope"), ValueError, "strategy='nope'"),
    (lambda r: sbr.fit_partitioner(r, 2, strategy="hash", weights="x"), ValueError, "weights='x'"),
    (lambda r: sbr.fit_partitioner(r, 2, strategy="mixed", weights="time"), ValueError, "listener"),
    (lambda r: sbr.partition_by(r, 2, "pkg", bogus=1), TypeError, "bogus"),
])
def test_bad_arguments(sc, call, exc, match):
    with pytest.raises(exc, match=match):
        call(sc.parallelize([("a", 1)], 1))


def test_install_is_opt_in_and_idempotent(sc):
    from pyspark import RDD

    from sparkbalance.spark.rdd.install import RDD_METHODS, install, uninstall
    uninstall()
    assert not hasattr(RDD, "balancedReduceByKey")
    names = install()
    assert install() == names  # idempotent
    assert set(RDD_METHODS) <= set(names)
    try:
        rdd = sc.parallelize([("a", 1), ("a", 2), ("b", 5)], 2)
        assert sorted(rdd.balancedReduceByKey(operator.add, 2, strategy="pkg").collect()) == \
            [("a", 3), ("b", 5)]
        assert sorted(rdd.reduceByKey(operator.add).collect()) == [("a", 3), ("b", 5)]  # untouched
    finally:
        uninstall()  # leave pyspark as other test modules expect it
    assert not hasattr(RDD, "balancedReduceByKey")
