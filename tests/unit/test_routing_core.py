"""Key-grouping partition functions of the core: hash, routing table, key groups."""
from __future__ import annotations

import pickle

import cloudpickle
import numpy as np
import pytest

from sparkbalance.routing import (HashPartitioner, KeyGroupPartitioner, RoutingDelta,
                                  RoutingTable, RoutingTablePartitioner, equal_bounds,
                                  home_partition, key_group)

KEYS = list(range(-50, 200)) + [f"user-{i}" for i in range(200)] + [("a", 1), b"raw", 2.5]


def partitioners():
    return [
        HashPartitioner(1), HashPartitioner(7),
        RoutingTablePartitioner(5, RoutingTable({"user-1": 4, 3: 0, ("a", 1): 2})),
        KeyGroupPartitioner(3), KeyGroupPartitioner(4, 10, [0, 0, 3, 10, 10]),
    ]


@pytest.mark.parametrize("f", partitioners(), ids=repr)
def test_contract(f):
    out = [f(k) for k in KEYS]
    assert all(0 <= p < f.num_partitions for p in out)
    assert out == [f(k) for k in KEYS]  # deterministic (and memo-consistent)
    assert f.assign(np.array(KEYS, dtype=object)).tolist() == out
    for dump, load in ((pickle.dumps, pickle.loads), (cloudpickle.dumps, cloudpickle.loads)):
        g = load(dump(f))
        assert [g(k) for k in KEYS] == out
        assert g == f
    assert not f.splits_keys


def test_table_routes_entries_and_hashes_the_rest():
    f = RoutingTablePartitioner(4, {"hot": 3})
    assert f("hot") == 3
    assert f("cold") == home_partition("cold", 4)


def test_table_versions_and_delta():
    t0 = RoutingTable({"a": 1, "b": 2})
    d = RoutingDelta(added={"c": 0}, changed={"a": 3}, removed={"b"})
    t1 = t0.apply(d)
    assert t1.version == 1 and dict(t1) == {"a": 3, "c": 0}
    assert t0.diff(t1) == d
    with pytest.raises(KeyError, match="stale"):
        t1.apply(d)


def test_delta_rejects_overlap():
    with pytest.raises(ValueError, match="disjoint"):
        RoutingDelta(added={"a": 1}, removed={"a"})


@pytest.mark.parametrize("routes, match", [
    ({frozenset({1}): 1}, "frozenset"), ({"a": -1}, "partition index"), ({"a": "x"}, "partition index"),
])
def test_table_bad_entries(routes, match):
    with pytest.raises((TypeError, ValueError), match=match):
        RoutingTable(routes)


def test_table_partition_out_of_range():
    with pytest.raises(ValueError, match="expected < num_partitions=2"):
        RoutingTablePartitioner(2, {"a": 5})


@pytest.mark.parametrize("n", [0, -3])
def test_bad_num_partitions(n):
    with pytest.raises(ValueError, match=f"num_partitions={n}; expected >= 1"):
        HashPartitioner(n)


def test_key_groups_intervals():
    f = KeyGroupPartitioner(3, 12, [0, 2, 2, 12])
    for k in KEYS:
        g = key_group(k, 12)
        assert f(k) == (0 if g < 2 else 2)
    assert equal_bounds(10, 4).tolist() == [0, 3, 6, 8, 10]


@pytest.mark.parametrize("bounds, match", [
    ([0, 7, 4, 10], "non-decreasing"),
])
def test_key_group_bad_bounds(bounds, match):
    with pytest.raises(ValueError, match=match):
        KeyGroupPartitioner(len(bounds) - 1 if match != "cut points" else 3, 10, bounds)


def test_bad_key_error_names_type():
    f = RoutingTablePartitioner(3, {"a": 1})
    with pytest.raises(TypeError, match="frozenset"):
        f(frozenset({1}))
    with pytest.raises(TypeError, match="dict"):
        f({1: 2})


def test_memo_switches_off_for_distinct_keys_and_stays_for_hot_keys():
    from sparkbalance.routing.base import MEMO_CAPACITY
    f = HashPartitioner(8)
    out = [f(i) for i in range(MEMO_CAPACITY + 10)]
    assert f._memo is None  # keys never repeated: the memo only cost time
    assert out == f.assign(np.arange(MEMO_CAPACITY + 10)).tolist()
    g = RoutingTablePartitioner(8, {"hot": 1})
    keys = [k for i in range(3 * MEMO_CAPACITY) for k in ("hot", "hot", i)]  # 2 hits : 1 miss
    assert [g(k) for k in keys] == g.assign(np.array(keys, dtype=object)).tolist()
    assert g._memo is not None  # hot keys hit: the memo stays on
    assert pickle.loads(pickle.dumps(f))._memo == {}  # a new map task starts with one


def test_table_assign_with_repeated_and_distinct_keys():
    f = RoutingTablePartitioner(4, {"a": 3, 7: 2})
    assert f.assign(["a", "b", 7, "a", 7.0]).tolist() == [f(k) for k in ["a", "b", 7, "a", 7.0]]
    assert f.assign(["a", 7, "z"]).tolist() == [3, 2, home_partition("z", 4)]
