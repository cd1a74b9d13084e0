"""The zero-pass map tasks' tally: records per group summed, top keys merged and bounded."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from sparkbalance.spark.rdd.maptally import (HEAVY_FACTOR, TOP_KEYS, GroupTally, heavy_in_buckets,
                                         key_bound, zero_tally)


def test_tally_sums_counts_and_merges_keys():
    t = GroupTally()
    a = t.zero(zero_tally(4))
    a = t.addInPlace(a, (np.array([1, 2, 0, 0]), {"a": 3}))
    a = t.addInPlace(a, (np.array([0, 1, 5, 0]), {"a": 1, "b": 5}))
    assert a[0].tolist() == [1, 3, 5, 0]
    assert a[1] == {"a": 4, "b": 5}


def test_tally_keeps_the_top_keys_only():
    t = GroupTally()
    a = zero_tally(1)
    for i in range(10):
        a = t.addInPlace(a, (np.zeros(1, dtype=np.int64),
                             {f"k{i}-{j}": i * 100 + j for j in range(TOP_KEYS)}))
    assert len(a[1]) == TOP_KEYS
    assert min(a[1].values()) >= 900  # the last, heaviest task's keys survive


def test_heavy_keys_are_searched_in_heavy_buckets_only():
    found = Counter()
    m = 16
    light = {g: [(f"x{g}", 0)] * 10 for g in range(1, m)}
    heavy = {0: [("hot", 0)] * 500 + [("warm", 0)] * 100}
    flushed = 600 + 10 * (m - 1)
    heavy_in_buckets({**light, **heavy}, flushed, m, found)
    assert found == Counter({"hot": 500, "warm": 100})
    found2 = Counter()
    even = {g: [(g, 0)] * 100 for g in range(m)}  # uniform: no bucket is heavy, no work
    heavy_in_buckets(even, 100 * m, m, found2)
    assert not found2
    assert HEAVY_FACTOR * 100 > 100


def test_the_found_keys_stay_bounded():
    found = Counter()
    for r in range(10):
        heavy_in_buckets({0: [(f"k{r}-{i}", 0) for i in range(200)]}, 200, 64, found)
    assert len(found) <= 4 * TOP_KEYS


@pytest.mark.parametrize("heavy,total,n,expected", [
    ({"a": 30}, 100, 4, 1.2), ({"a": 10}, 100, 4, 1.0), ({}, 100, 4, 1.0), ({"a": 1}, 0, 4, 1.0)])
def test_key_bound(heavy, total, n, expected):
    assert key_bound(heavy, total, n) == pytest.approx(expected)
