"""Every NaN is one key to a routing table, as Spark groups NaNs (a dict finds a float NaN
only by identity, so a fresh NaN used to miss its entry and go to its hash home)."""
from __future__ import annotations

import pickle

import numpy as np

from sparkbalance.routing.table import RoutingTablePartitioner


def test_a_fresh_nan_finds_the_table_entry():
    nan_entry = float("nan")
    f = RoutingTablePartitioner(8, {nan_entry: 5, "a": 1})
    assert f(float("nan")) == 5 and f(float("-nan")) == 5 and f(nan_entry) == 5
    assert f.assign([float("nan"), "a", 2.5]).tolist()[:2] == [5, 1]
    assert f.assign(np.array([float("nan"), float("nan"), "a"], dtype=object)).tolist() == [5, 5, 1]
    assert pickle.loads(pickle.dumps(f))(float("nan")) == 5


def test_without_a_nan_entry_nan_keeps_its_hash_home():
    f = RoutingTablePartitioner(8, {"a": 1})
    g = RoutingTablePartitioner(8)
    assert f(float("nan")) == g(float("nan"))
