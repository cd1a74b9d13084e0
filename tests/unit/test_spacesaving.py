"""SpaceSaving: the guarantees of Metwally et al. and of merged summaries (Berinde et al.)."""
from __future__ import annotations

import math
import pickle
from collections import Counter

import cloudpickle
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkbalance.stats import SpaceSaving

streams = st.lists(st.integers(0, 40), min_size=0, max_size=300)
weighted = st.lists(st.tuples(st.integers(0, 30), st.integers(1, 20)), max_size=120)
epsilons = st.sampled_from([0.05, 0.1, 0.2, 0.34, 0.5, 1.0])


def _check_bounds(ss: SpaceSaving, truth: Counter) -> None:
    m = sum(truth.values())
    assert ss.total == m
    assert len(ss) <= ss.capacity
    assert ss.floor <= m / ss.capacity + 1e-9
    for item, f in truth.items():
        lo, hi = ss.bounds(item)
        assert lo <= f <= hi, (item, f, lo, hi)
        if f > m / ss.capacity:
            assert item in ss


@settings(max_examples=60, deadline=None)
@given(streams, epsilons)
def test_every_item_with_frequency_at_least_eps_m_is_kept(stream, eps):
    ss = SpaceSaving.for_epsilon(eps)
    ss.update_many(stream)
    truth = Counter(stream)
    m = len(stream)
    for item, f in truth.items():
        if f >= eps * m:
            assert item in ss
    _check_bounds(ss, truth)


@settings(max_examples=60, deadline=None)
@given(weighted, st.integers(1, 8))
def test_weighted_updates_keep_the_bounds(pairs, cap):
    ss = SpaceSaving(cap)
    truth: Counter = Counter()
    for item, c in pairs:
        ss.update(item, c)
        truth[item] += c
    _check_bounds(ss, truth)


@settings(max_examples=60, deadline=None)
@given(st.lists(streams, min_size=1, max_size=6), st.integers(1, 8), st.data())
def test_merge_of_any_tree_keeps_the_guarantees(parts, cap, data):
    summaries = []
    for part in parts:
        s = SpaceSaving(cap)
        s.update_many(part)
        summaries.append(s)
    # Merge in a random tree shape (as Spark's reduce would).
    while len(summaries) > 1:
        i = data.draw(st.integers(0, len(summaries) - 2))
        a, b = summaries[i], summaries.pop(i + 1)
        summaries[i] = a.merge(b)
    merged = summaries[0]
    truth = Counter(x for part in parts for x in part)
    _check_bounds(merged, truth)
    # Continuing to update a merged summary keeps them too.
    merged.update_many([1, 2, 3, 1])
    truth.update([1, 2, 3, 1])
    _check_bounds(merged, truth)


def test_merge_does_not_change_inputs_and_is_exact_when_small():
    a, b = SpaceSaving(10), SpaceSaving(10)
    a.update_many("aab")
    b.update_many("bc")
    m = a.merge(b)
    assert m.as_dict() == {"a": 2, "b": 2, "c": 1}
    assert all(e == 0 for _, _, e in m.top())
    assert a.as_dict() == {"a": 2, "b": 1} and b.total == 2


def test_top_guaranteed_and_heavy_hitters():
    ss = SpaceSaving(3)
    ss.update_many(["x"] * 50 + ["y"] * 30 + list("abcdefghij"))
    assert [i for i, _, _ in ss.top(2)] == ["x", "y"]
    assert [i for i, _, _ in ss.guaranteed(25)] == ["x", "y"]
    assert [i for i, _, _ in ss.guaranteed_top(2)] == ["x", "y"]
    assert {i for i, _, _ in ss.heavy_hitters(0.3)} == {"x", "y"}
    assert ss.count("zzz") == ss.floor == ss.error("zzz")


def test_pickling_round_trip_and_equality():
    ss = SpaceSaving(4)
    ss.update_many(list(range(20)) + [3] * 10)
    for g in (pickle.loads(pickle.dumps(ss)), cloudpickle.loads(cloudpickle.dumps(ss))):
        assert g == ss
        g.update(99)  # the heap is rebuilt: still usable
        assert 99 in g and g.total == ss.total + 1


@pytest.mark.parametrize("call, match", [
    (lambda: SpaceSaving(0), "capacity=0"), (lambda: SpaceSaving(2.5), "capacity"),
    (lambda: SpaceSaving.for_epsilon(0), "epsilon=0"), (lambda: SpaceSaving(2).update("a", 0), "count=0"),
    (lambda: SpaceSaving(2).merge({}), "cannot merge"),
])
def test_bad_arguments(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_for_epsilon_capacity():
    assert SpaceSaving.for_epsilon(0.1).capacity == math.ceil(1 / 0.1) + 1
