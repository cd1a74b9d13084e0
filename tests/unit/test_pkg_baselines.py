"""Nasir et al.'s baselines and PKG variants (routing.pkg_baselines)."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from sparkbalance.routing.pkg import pkg_candidates
from sparkbalance.routing.pkg_baselines import (OffGreedyPartitioner, OnGreedyPartitioner,
                                                PoTCPartitioner, ProbingPKGPartitioner,
                                                off_greedy_routes)

KEYS = np.random.default_rng(0).zipf(1.5, 3000) % 200


@pytest.mark.parametrize("cls", [PoTCPartitioner, OnGreedyPartitioner])
def test_sticky_schemes_keep_one_partition_per_key(cls):
    f = cls(7)
    out = f.assign(KEYS)
    seen = {}
    for k, p in zip(KEYS.tolist(), out.tolist()):
        assert seen.setdefault(k, p) == p
    assert np.array_equal(out, f.assign(KEYS))       # assign is pure (a fresh replay)
    assert [f(k) for k in KEYS.tolist()] == out.tolist()
    g = pickle.loads(pickle.dumps(f))                 # a map task starts fresh
    assert g.table_size == 0 and np.array_equal(g.assign(KEYS), out)


def test_potc_picks_among_the_two_pkg_candidates():
    out = PoTCPartitioner(9).assign(KEYS)
    assert all(p in pkg_candidates(k, 9) for k, p in zip(KEYS.tolist(), out.tolist()))


def test_off_greedy_is_lpt_and_balances_known_frequencies():
    keys, counts = np.unique(KEYS, return_counts=True)
    f = OffGreedyPartitioner(dict(zip(keys.tolist(), counts.tolist())), 4)
    L = np.bincount(f.assign(KEYS), minlength=4)
    assert L.max() - L.min() <= counts.max()
    assert off_greedy_routes({"x": 1.0}, 3) == {"x": 0}


def test_probing_resets_the_local_vector_to_the_truth():
    truth = [0.0, 0.0, 0.0]
    f = ProbingPKGPartitioner(3, probe=lambda: truth, period=2)
    for k in KEYS[:50].tolist():
        truth[f(k)] += 1.0
    assert sum(truth) == 50
    with pytest.raises(ValueError, match="period=0"):
        ProbingPKGPartitioner(3, probe=lambda: truth, period=0)
    with pytest.raises(ValueError, match="probe returned 2 loads"):
        ProbingPKGPartitioner(3, probe=lambda: [0.0, 0.0])("k")
