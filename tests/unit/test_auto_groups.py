"""The zero-pass plan of key groups (``strategies.auto.plan_groups``): contiguous runs when
they are as good as LPT (one fetched block per map output), LPT otherwise, hash placement
in equal runs when balancing gains too little."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkbalance.strategies.auto import (CONTIGUOUS_SLACK, contiguous_owner, lpt_owner,
                                          plain_owner, plan_groups)

sizes_st = st.lists(st.integers(0, 1000), min_size=1, max_size=300)


@settings(max_examples=200, deadline=None)
@given(sizes_st, st.integers(1, 40))
def test_contiguous_owner_is_runs_within_the_linear_partition_bound(sizes, n):
    w = np.asarray(sizes, dtype=np.float64)
    owner = contiguous_owner(w, n)
    assert owner.shape == w.shape and owner.min() >= 0 and owner.max() < n
    assert np.all(np.diff(owner) >= 0)  # each task one run of consecutive groups
    slowest = np.bincount(owner, weights=w, minlength=n).max()
    # the min-max cut is at most the mean plus one group (every greedy cut ends early by
    # less than one group), and never better than the heaviest group or the mean
    assert slowest <= w.sum() / n + w.max() + 1e-9
    assert slowest >= max(w.max(), w.sum() / n) - 1e-9


@settings(max_examples=200, deadline=None)
@given(sizes_st, st.integers(1, 40))
def test_plan_groups_keeps_runs_only_within_the_slack_of_lpt(sizes, n):
    w = np.asarray(sizes, dtype=np.float64)
    f, d = plan_groups(w, n, balance=True)
    loads = np.bincount(f.owner_of_group, weights=w, minlength=n)
    lpt = np.bincount(lpt_owner(w, n), weights=w, minlength=n)
    assert loads.max() <= lpt.max() * (1 + CONTIGUOUS_SLACK) + 1e-9
    if d["contiguous"]:
        assert np.all(np.diff(f.owner_of_group) >= 0)
    else:
        assert loads.max() == lpt.max()


def test_plain_placement_is_equal_runs_of_groups():
    assert plain_owner(12, 4).tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    f, d = plan_groups([5.0] * 12, 4)
    assert not d["balanced"] and f.owner_of_group.tolist() == plain_owner(12, 4).tolist()


def test_a_group_heavier_than_a_run_allows_falls_back_to_lpt():
    # runs: the two 6s either share a task or one of them drags the 1s along (6 | 8)
    f, d = plan_groups([6, 6, 1, 1], 2)
    assert d["balanced"] and not d["contiguous"]
    assert f.owner_of_group.tolist() == [0, 1, 0, 1]


def test_zipf_group_sizes_keep_runs_at_lpt_quality():
    rng = np.random.default_rng(3)
    for z, n, m in ((0.8, 16, 512), (1.0, 64, 1984)):
        p = 1 / np.arange(1, 100_001) ** z
        counts = rng.multinomial(120_000, p / p.sum())
        w = np.bincount(rng.integers(0, m, counts.size), weights=counts, minlength=m)
        f, d = plan_groups(w, n)
        assert d["balanced"] and d["contiguous"]
        lpt = np.bincount(lpt_owner(w, n), weights=w, minlength=n).max()
        assert np.bincount(f.owner_of_group, weights=w, minlength=n).max() <= 1.05 * lpt
