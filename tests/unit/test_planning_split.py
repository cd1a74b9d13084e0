"""Hot-key split planner (planning/split.py): pure, Spark-free."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkbalance.planning.split import (DEFAULT_SPLIT_THRESHOLD, SplitPlan, plan_split)
from sparkbalance.routing.hash import home_partition
from sparkbalance.stats.keystats import KeyStats

SKEW = {"hot": 90.0, "a": 5.0, "b": 5.0, "z": 0.1}


def test_a_heavy_key_is_cut_into_pieces_on_distinct_partitions():
    p = plan_split(KeyStats.from_counts(SKEW), 4)
    mean = sum(SKEW.values()) / 4
    s = min(4, math.ceil(90 / (DEFAULT_SPLIT_THRESHOLD * mean)))
    assert p.pieces["hot"] == tuple(range(s)) and len(set(p.pieces["hot"])) == s
    assert p.mean == pytest.approx(mean)
    assert p.loads.sum() == pytest.approx(sum(SKEW.values()))


def test_medium_keys_placed_whole_light_keys_stay_home():
    p = plan_split(KeyStats.from_counts(SKEW), 4)
    assert len(p.pieces["a"]) == 1 and len(p.pieces["b"]) == 1
    assert "z" not in p.pieces


def test_explain_gives_the_reason_and_the_numbers():
    p = plan_split(KeyStats.from_counts(SKEW), 4)
    hot = p.explain("hot")
    assert "heavy" in hot and "cost 90" in hot and "3.6 L̄ > threshold 0.5 L̄" in hot
    assert "= 4 pieces" in hot
    assert "medium" in p.explain("a") and "placed whole" in p.explain("a")
    z = p.explain("z")
    assert "light" in z and "<= placed fraction 0.02 L̄" in z
    assert f"hash home {home_partition('z', 4)}" in z
    assert "not in the statistics" in p.explain("nope")
    assert "heavy keys" in p.explain() == p.summary()


def test_max_placed_caps_whole_placements_but_not_splits():
    p = plan_split(KeyStats.from_counts(SKEW), 4, max_placed=1)
    assert set(p.pieces) == {"hot"}
    assert "rank 3 > max_placed 1" in p.explain("b")
    p0 = plan_split(KeyStats.from_counts(SKEW), 4, max_placed=0)
    assert set(p0.pieces) == {"hot"}  # heavy keys are always split


def test_arrays_in_place_of_key_stats():
    a = plan_split((list(SKEW), list(SKEW.values())), 4)
    b = plan_split(KeyStats.from_counts(SKEW), 4)
    assert a.pieces == b.pieces and np.allclose(a.loads, b.loads)
    ints = plan_split((np.arange(3), [9.0, 0.5, 0.5]), 2)
    assert all(type(k) is int for k in ints.pieces)  # numpy scalars become Python keys


def test_all_zero_costs_plan_nothing():
    p = plan_split((["a", "b"], [0.0, 0.0]), 3)
    assert p.pieces == {} and "nothing to balance" in p.explain("a")


@pytest.mark.parametrize("kwargs,match", [
    ({"num_partitions": 0}, "num_partitions=0"),
    ({"threshold": 0.0}, "threshold=0.0"),
    ({"placed_fraction": 0.9}, "placed_fraction=0.9"),
    ({"split_side": "middle"}, "split_side='middle'"),
])
def test_bad_parameters_name_the_value_and_range(kwargs, match):
    args = {"num_partitions": 4, **kwargs}
    with pytest.raises(ValueError, match=match):
        plan_split(KeyStats.from_counts(SKEW), **args)


def test_cost_array_of_the_wrong_length_is_refused():
    with pytest.raises(ValueError, match="one cost per key"):
        plan_split((["a", "b"], [1.0]), 2)


def test_plan_is_pure_and_deterministic():
    s = KeyStats.from_counts({f"k{i}": float((i * 7919) % 101 + 1) for i in range(300)})
    p, q = plan_split(s, 8), plan_split(s, 8)
    assert isinstance(p, SplitPlan) and p.pieces == q.pieces
    assert np.array_equal(p.loads, q.loads)


@settings(max_examples=60, deadline=None)
@given(costs=st.lists(st.floats(0, 1e6, allow_nan=False), min_size=1, max_size=60),
       n=st.integers(1, 16), threshold=st.floats(0.05, 2.0))
def test_invariants(costs, n, threshold):
    """Loads conserve the total cost; pieces are distinct partitions, count as the formula."""
    keys = [f"k{i}" for i in range(len(costs))]
    p = plan_split((keys, costs), n, threshold=threshold, placed_fraction=0.0)
    assert p.loads.sum() == pytest.approx(sum(costs), rel=1e-9, abs=1e-6)
    for k, parts in p.pieces.items():
        c = costs[int(k[1:])]
        assert len(set(parts)) == len(parts) and all(0 <= x < n for x in parts)
        if c > threshold * p.mean:
            assert len(parts) == min(n, math.ceil(c / p.mean / threshold))
