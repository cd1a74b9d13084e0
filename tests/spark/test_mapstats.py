"""Zero-pass statistics (map-output key-group sizes) on Spark: every RDD adapter equals plain
PySpark, the input is read once, plain placement when LPT gains too little, clear refusals,
and one WARNING + the statistics pass without the JVM bridge."""
from __future__ import annotations

import logging
import operator
import random

import pytest

import numpy as np

from sparkbalance.routing.keygroups import GroupMapPartitioner, key_group, key_groups
from sparkbalance.spark.rdd import mapstats
from sparkbalance.spark.rdd import adapters as sbr

N = 4


@pytest.fixture(scope="module")
def bridge(sc):
    if not mapstats.available(sc):
        pytest.skip("JVM bridge jar not built (bash jvm_bridge/build.sh)")
    return True


def _records() -> list[tuple]:
    rng = random.Random(7)
    recs = [("hot", i % 5) for i in range(2000)] + [(3, 1)] * 300
    recs += [(rng.randrange(300), rng.randrange(20)) for _ in range(1500)]
    recs += [(f"u{rng.randrange(60)}", 2) for _ in range(400)] + [((1, "t"), 4)] * 50
    rng.shuffle(recs)
    return recs


@pytest.fixture(scope="module")
def rdd(sc):
    return sc.parallelize(_records(), 3).cache()


def _sorted(r):
    return sorted(r, key=repr)


def test_partition_by_places_each_key_by_the_fitted_plan(rdd, bridge):
    decision: dict = {}
    out = mapstats.shuffle_by_groups(rdd, N, decision=decision)
    f = mapstats.fitted_function(out)
    assert isinstance(f, GroupMapPartitioner) and f.num_groups == mapstats.num_groups_for(N)
    parts = out.glom().collect()
    assert len(parts) == N == out.getNumPartitions()
    assert _sorted(r for p in parts for r in p) == _sorted(_records())
    for i, p in enumerate(parts):
        assert all(f(k) == i for k, _ in p)
    assert len(decision["sizes"]) == f.num_groups
    # "hot" carries ~47% of the records: LPT leaves its group alone on one task
    assert decision["balanced"]
    hot = f.owner_of_group[key_group("hot", f.num_groups)]
    assert {k for k, _ in parts[hot]} <= {k for k in {k for k, _ in _records()}
                                          if f(k) == hot}
    assert decision["planned_max_over_mean"] < decision["hash_max_over_mean"]


@pytest.mark.parametrize("balance", [True, False])
def test_every_adapter_equals_pyspark(sc, rdd, bridge, balance):
    other = sc.parallelize([(k, -k) for k in range(0, 300, 7)] + [("hot", "x"), (3, "y")], 2)
    kw = {"balance": balance}
    assert _sorted(sbr.reduce_by_key(rdd, operator.add, N, **kw).collect()) == \
        _sorted(rdd.reduceByKey(operator.add, N).collect())
    assert _sorted(sbr.aggregate_by_key(rdd, [], lambda a, v: a + [v], operator.add, N,
                                        **kw).mapValues(sorted).collect()) == \
        _sorted(rdd.aggregateByKey([], lambda a, v: a + [v], operator.add, N)
                .mapValues(sorted).collect())
    assert _sorted(sbr.group_by_key(rdd, N, **kw).mapValues(sorted).collect()) == \
        _sorted(rdd.groupByKey(N).mapValues(sorted).collect())
    assert _sorted(sbr.join(rdd, other, N, **kw).collect()) == \
        _sorted(rdd.join(other, N).collect())
    assert _sorted(sbr.partition_by(rdd, N, stats="map-output", **kw).collect()) == \
        _sorted(_records())


def test_input_is_read_once(sc, bridge):
    seen = sc.accumulator(0)

    def tap(kv):
        seen.add(1)
        return kv

    src = sc.parallelize(_records(), 3).map(tap)  # not cached: a re-run would count twice
    out = sbr.reduce_by_key(src, operator.add, N)
    out.collect()
    out.count()
    assert seen.value == len(_records())


def test_plain_placement_when_balancing_gains_too_little(sc, bridge, caplog):
    uniform = sc.parallelize([(i, 1) for i in range(4000)], 2)
    with caplog.at_level(logging.DEBUG, logger="sparkbalance"):  # the plan's own line: DEBUG
        out = mapstats.shuffle_by_groups(uniform, N, min_gain=0.5)
    f = mapstats.fitted_function(out)
    m = f.num_groups
    assert f.owner_of_group.tolist() == [g * N // m for g in range(m)]  # N runs of groups
    assert any("keep hash placement" in r.getMessage() for r in caplog.records)


def test_refusals(rdd, bridge):
    with pytest.raises(ValueError, match="strategy must be 'auto'"):
        sbr.reduce_by_key(rdd, operator.add, N, "mixed", stats="map-output")
    with pytest.raises(TypeError, match="takes min_gain"):
        sbr.reduce_by_key(rdd, operator.add, N, stats="map-output", theta=0.1)
    with pytest.raises(ValueError, match="min_gain"):
        sbr.reduce_by_key(rdd, operator.add, N, min_gain=2.0)


def test_a_jar_without_mapstats_one_warning_and_a_bounded_sample(rdd, monkeypatch, caplog):
    monkeypatch.setattr(mapstats, "available", lambda _sc: False)
    monkeypatch.setattr(mapstats, "_warned", [False])
    with caplog.at_level(logging.WARNING, logger="sparkbalance"):
        a = sbr.reduce_by_key(rdd, operator.add, N).collect()
        b = sbr.reduce_by_key(rdd, operator.add, N).collect()
    assert _sorted(a) == _sorted(b) == _sorted(rdd.reduceByKey(operator.add, N).collect())
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "bounded sample" in warnings[0].getMessage()


@pytest.mark.parametrize("bad", [5, ("only-key",), None], ids=["int", "1-tuple", "None"])
def test_records_that_are_not_pairs_get_a_clear_first_line(sc, bridge, bad):
    rdd = sc.parallelize([("a", 1)] * 10 + [bad] + [("b", 2)] * 10, 2)
    with pytest.raises(Exception) as info:
        mapstats.shuffle_by_groups(rdd, N, balance=True).collect()
    text = str(info.value)
    assert "sparkbalance: records must be (key, value) pairs; partition 1 got a " \
        f"{type(bad)!r}" in text


def test_a_bad_key_in_the_zero_pass_path_names_its_type(sc, bridge):
    rdd = sc.parallelize([("a", 1), ({"x": 1}, 2)], 1)
    with pytest.raises(Exception, match="key of type dict in input partition 0"):
        mapstats.shuffle_by_groups(rdd, N, balance=True).collect()


def test_an_upstream_error_passes_through_unchanged(sc, bridge):
    def boom(kv):
        if kv[1] == 3:
            raise TypeError("user code failed on 3")
        return kv
    rdd = sc.parallelize([("a", i) for i in range(6)], 1).map(boom)
    with pytest.raises(Exception, match="user code failed on 3") as info:
        mapstats.shuffle_by_groups(rdd, N, balance=True).collect()
    assert "records must be" not in str(info.value)


def test_the_plan_weighs_records_counted_by_the_map_tasks(rdd, bridge):
    """Sizes are records per group (bytes hide a hot key: its records compress well); the
    heavy keys and the key-grouping bound come from the same map tasks."""
    decision: dict = {}
    mapstats.shuffle_by_groups(rdd, N, decision=decision).count()
    m = mapstats.num_groups_for(N)
    keys = [k for k, _ in _records()]
    assert decision["sizes"] == np.bincount(key_groups(keys, m), minlength=m).tolist()
    assert len(decision["bytes"]) == m and sum(decision["bytes"]) > 0
    top = dict(decision["heavy_keys"])
    assert top["hot"] == 2000 and top[3] == keys.count(3)  # exact: heavy buckets
    assert decision["key_bound"] == pytest.approx(N * 2000 / len(keys))
    # LPT over records reaches the bound: the hot group alone on its task
    assert decision["planned_max_over_mean"] == pytest.approx(
        max(decision["sizes"]) * N / len(keys))


def test_a_hot_key_of_zipf_data_is_planned_to_the_key_grouping_bound(sc, bridge):
    """Zipf z = 1.0 over 10^4 keys, n = 16: over bytes the hot group looked light and got
    company (1.5x the mean records); over records it is alone (within 2 % of max(1, n p_1))."""
    rng = np.random.default_rng(3)
    p = 1.0 / np.arange(1, 10_001)
    keys = rng.choice(10_000, 40_000, p=p / p.sum()).tolist()
    src = sc.parallelize(list(zip(keys, range(len(keys)))), 4)
    decision: dict = {}
    out = mapstats.shuffle_by_groups(src, 16, decision=decision)
    loads = out.glom().map(len).collect()
    ratio = max(loads) / (len(keys) / 16)
    assert ratio == pytest.approx(decision["planned_max_over_mean"])
    assert decision["heavy_keys"][0][0] == 0
    assert ratio <= 1.02 * decision["key_bound"]


def test_the_tally_accumulator_leaves_no_driver_entry(rdd, bridge):
    from pyspark.accumulators import _accumulatorRegistry
    before = len(_accumulatorRegistry)
    for _ in range(3):
        mapstats.shuffle_by_groups(rdd, N).count()
    assert len(_accumulatorRegistry) <= before


@pytest.mark.parametrize("hot", [0, 2000], ids=["runs", "lpt"])
def test_runs_and_lpt_plans_both_place_every_record_by_the_plan(sc, bridge, hot):
    # mild skew: runs of groups are as good as LPT (each task fetches one block per map
    # output); a key of half the records next to others: runs lose, LPT is kept
    rng = random.Random(11)
    recs = [(rng.randrange(500) ** 2 % 997, i) for i in range(6000)] + [("hot", 1)] * hot
    pairs = sc.parallelize(recs, 3)
    decision: dict = {}
    out = mapstats.shuffle_by_groups(pairs, N, balance=True, decision=decision)
    assert decision["contiguous"] is (hot == 0)
    f = mapstats.fitted_function(out)
    parts = out.glom().collect()
    assert sorted(map(repr, (r for p in parts for r in p))) == sorted(map(repr, recs))
    for i, p in enumerate(parts):
        assert all(f(k) == i for k, _ in p)


def test_runs_of_a_plan_are_read_as_one_range_each(sc, bridge):
    gw = sc._gateway
    owner = gw.new_array(gw.jvm.int, 6)
    for g, t in enumerate([0, 0, 2, 2, 0, 1]):
        owner[g] = t
    runs = gw.jvm.io.sparkbalance.bridge.MapStats.runs(owner, 3)
    assert [list(r) for r in runs] == [[0, 2, 4, 5], [5, 6], [2, 4]]
