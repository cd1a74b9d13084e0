"""Invariants, determinism and edge cases of the correlation planners and their baselines."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkbalance.planning.correlation import (DEFAULT_DELTA, DEFAULT_EPSILON, DEFAULT_THETA,
                                               DEFAULT_WINDOW, GlobalCorrelation,
                                               LLFPlacement, PairwiseCorrelation, Placement,
                                               RandomPlacement, correlation, load_statistics,
                                               node_series)
from sparkbalance.planning.correlation.relabel import max_weight_matching
from sparkbalance.planning.correlation.simulate import square_wave_workload


def pairwise_planners():
    return [PairwiseCorrelation("one-way"), PairwiseCorrelation("redistribute"),
            PairwiseCorrelation("exchange"), PairwiseCorrelation("redistribute", True),
            PairwiseCorrelation("exchange", True), LLFPlacement(scope="pairwise"),
            RandomPlacement(scope="pairwise", seed=3)]


def global_planners():
    return [GlobalCorrelation(), LLFPlacement(), RandomPlacement(seed=3)]


@st.composite
def cases(draw):
    """Square-wave-like unit series (phases, noise, some constant or zero units)."""
    m = draw(st.integers(1, 40))
    n = draw(st.integers(1, 6))
    k = draw(st.integers(2, 12))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    t = np.arange(k)
    phase = rng.uniform(0, 10, m)
    up = ((t[None, :] + phase[:, None]) % 10 < 5).astype(float)
    s = rng.uniform(0.01, 0.3, (m, 1)) * (1 + 3 * up) * rng.uniform(0.9, 1.1, (m, k))
    s[rng.random(m) < 0.1] = 0.0                       # idle units
    const = rng.random(m) < 0.1
    s[const] = rng.uniform(0.01, 0.2, (int(const.sum()), 1))
    a = rng.integers(0, n, m)
    movable = rng.random(m) < 0.8 if draw(st.booleans()) else None
    return s, a, n, movable


def check_placement(p: Placement, s, a0, n, movable):
    m = s.shape[0]
    assert isinstance(p, Placement)
    assert p.assignment.shape == (m,) and p.assignment.dtype == np.int64
    assert m == 0 or (p.assignment.min() >= 0 and p.assignment.max() < n)
    loads = s.mean(axis=1)
    if a0 is not None:
        moved = np.flatnonzero(p.assignment != a0)
        assert p.moved_units.tolist() == moved.tolist()
        assert p.load_moved == pytest.approx(loads[moved].sum())
        if movable is not None:
            assert not np.any(~movable & (p.assignment != a0)), "a pinned unit moved"
        assert not np.any((loads == 0) & (a0 < n) & (p.assignment != a0)), "an idle unit moved"
    x = node_series(s, p.assignment, n)
    assert p.node_std_mean == pytest.approx(load_statistics(x).std.mean())
    np.testing.assert_allclose(p.node_means, x.mean(axis=1))
    assert p.node_std_mean >= p.std_bound - 1e-12      # Theorem 1's bound holds for any plan
    assert -1.0 <= p.mean_pair_correlation <= 1.0
    assert p.seconds >= 0


@given(cases())
def test_pairwise_planners_keep_the_invariants(case):
    s, a, n, movable = case
    for planner in pairwise_planners():
        p = planner.plan(s, a, n, movable)
        check_placement(p, s, a, n, movable)
        q = planner.plan(s, assignment=a, num_nodes=n, movable=movable)
        assert np.array_equal(p.assignment, q.assignment), f"{planner.name} not deterministic"


@given(cases())
def test_global_planners_keep_the_invariants(case):
    s, a, n, movable = case
    for planner in global_planners():
        if movable is None:
            p = planner.plan(s, n)
            check_placement(p, s, None, n, None)
            assert p.num_moved == 0 and p.moves == []
        p = planner.plan(s, n, a, movable)
        check_placement(p, s, a, n, movable)
        q = planner.plan(s, assignment=a, num_nodes=n, movable=movable)
        assert np.array_equal(p.assignment, q.assignment), f"{planner.name} not deterministic"
        if movable is None and n > 1:                    # fewer nodes than before
            check_placement(planner.plan(s, n - 1, a), s, a, n - 1, None)


@given(cases())
def test_one_way_never_raises_the_highest_node_load(case):
    """A one-way pair moves less than (L1 − L2)/2 from the more loaded node: both end
    strictly between the old loads, so the maximum mean node load cannot rise."""
    s, a, n, movable = case
    before = node_series(s, a, n).mean(axis=1).max()
    for planner in (PairwiseCorrelation(), LLFPlacement(scope="pairwise"),
                    RandomPlacement(scope="pairwise")):
        p = planner.plan(s, a, n, movable)
        assert p.node_means.max() <= before + 1e-12
        for u, src, dst in p.moves:                 # units only go to less loaded nodes
            assert node_series(s, a, n).mean(axis=1)[src] > \
                node_series(s, a, n).mean(axis=1)[dst]


@given(cases())
def test_relabelling_keeps_quality_and_never_moves_more(case):
    s, a, n, movable = case
    if movable is not None:
        return
    for cls in (GlobalCorrelation, LLFPlacement):
        on = cls(relabel=True).plan(s, n, a)
        off = cls(relabel=False).plan(s, n, a)
        assert on.load_moved <= off.load_moved + 1e-12
        assert on.node_std_mean == pytest.approx(off.node_std_mean)
        assert on.mean_pair_correlation == pytest.approx(off.mean_pair_correlation)


@given(st.integers(1, 6), st.integers(0, 10**6))
def test_max_weight_matching_is_optimal(n, seed):
    w = np.random.default_rng(seed).integers(0, 10, (n, n)).astype(float)
    perm = max_weight_matching(w)
    assert sorted(perm.tolist()) == list(range(n))
    best = max(sum(w[i, p[i]] for i in range(n)) for p in itertools.permutations(range(n)))
    assert sum(w[i, perm[i]] for i in range(n)) == pytest.approx(best)


# --- the algorithms on small cases worked by hand -----------------------------------------

T = np.arange(10)
UP, DOWN = 1.0 + (T < 5), 1.0 + (T >= 5)


def test_global_co_locates_alternating_units_and_separates_in_phase_ones():
    s = np.array([UP, UP, DOWN, DOWN])
    p = GlobalCorrelation().plan(s, 2)
    a = p.assignment
    assert a[0] != a[1] and a[2] != a[3]
    assert p.node_std_mean == 0.0
    assert "score" in p.explain(0)


def test_one_way_prefers_the_unit_correlated_with_its_node():
    # node 0: UP, UP, DOWN (load 4.5); node 1: a small DOWN (0.75). Budget (4.5 − 0.75)/2 =
    # 1.875: one unit of 1.5 fits. An UP unit scores (ρ(UP, UP+DOWN) − ρ(UP, DOWN))/2 =
    # (0 − (−1))/2 = 0.5, the DOWN unit (ρ(DOWN, 2·UP) − ρ(DOWN, DOWN))/2 = −1.
    s = np.array([UP, UP, DOWN, 0.5 * DOWN])
    p = PairwiseCorrelation("one-way").plan(s, [0, 0, 0, 1], 2)
    assert p.moved_units.tolist() == [0]
    assert p.explain(0).startswith("unit 0: moved 0 -> 1") and "S(o)=0.500" in p.explain(0)
    assert p.explain(1).endswith("not selected by the planner")
    llf = LLFPlacement(scope="pairwise").plan(s, [0, 0, 0, 1], 2)
    assert llf.num_moved == 1


def test_a_pair_within_epsilon_does_not_act():
    s = np.array([UP, UP, DOWN, DOWN]) * 0.01
    for planner in (PairwiseCorrelation(), PairwiseCorrelation("exchange")):
        p = planner.plan(s, [0, 0, 1, 1], 2)
        assert p.num_moved == 0 and p.info["pairs"] == []


def test_improved_redistributes_a_balanced_but_badly_correlated_pair():
    s = np.array([UP, UP, DOWN, DOWN]) * 0.4             # loads 0.6 each, peaks 0.8 + ...
    a = [0, 0, 1, 1]                                     # node 0: 1.2 / 0.4; node 1 opposite
    plain = PairwiseCorrelation("redistribute").plan(s, a, 2)
    assert plain.num_moved == 0                          # balanced: no pair acts
    imp = PairwiseCorrelation("redistribute", improved=True).plan(s, a, 2)
    assert imp.info["improved_pairs"] == 1 and imp.node_std_mean == pytest.approx(0, abs=1e-12)
    se = PairwiseCorrelation("exchange", improved=True).plan(s, a, 2)
    assert se.node_std_mean == pytest.approx(0, abs=1e-12)
    # below capacity nobody is at risk of overload: -IMP leaves the pair alone
    low = PairwiseCorrelation("redistribute", improved=True).plan(s * 0.5, a, 2)
    assert low.num_moved == 0


def test_pinned_units_stay_and_global_needs_their_node():
    s = np.array([UP, UP, DOWN, DOWN])
    pin = np.array([True, True, False, False])
    p = GlobalCorrelation().plan(s, 2, [0, 0, 1, 1], movable=~pin)
    assert p.assignment[:2].tolist() == [0, 0]
    with pytest.raises(ValueError, match="assignment is None"):
        GlobalCorrelation().plan(s, 2, movable=~pin)


def test_random_placement_depends_on_its_seed_only():
    s = np.random.default_rng(0).uniform(0, 1, (30, 10))
    a = [RandomPlacement(seed=7).plan(s, 4).assignment for _ in range(2)]
    assert np.array_equal(*a)
    b = RandomPlacement(seed=8).plan(s, 4).assignment
    assert not np.array_equal(a[0], b)


def test_llf_global_is_largest_load_first():
    s = np.array([[5.0] * 4, [4.0] * 4, [3.0] * 4, [3.0] * 4, [1.0] * 4])
    p = LLFPlacement(epsilon=0.0).plan(s, 2)
    assert sorted(p.node_means.tolist()) == [8.0, 8.0]


def test_state_sizes_are_reported_and_weight_the_renaming():
    # COR-GLB pairs {0, 2} and {1, 3}; units 0, 1, 2 are on node 0 now, unit 3 on node 1.
    s = np.array([UP, UP, DOWN, DOWN])
    old = [0, 0, 0, 1]
    by_load = GlobalCorrelation().plan(s, 2, old)
    assert by_load.assignment.tolist() == [0, 1, 0, 1]          # keeps 3 units in place
    sizes = np.array([1.0, 100.0, 1.0, 1.0])
    by_size = GlobalCorrelation().plan(s, 2, old, sizes=sizes)
    assert by_size.assignment.tolist() == [1, 0, 1, 0]          # keeps the big state
    assert by_size.state_moved == pytest.approx(3.0)
    assert "renamed" in by_size.explain(0)
    assert PairwiseCorrelation().plan(s, [0, 0, 1, 1], 2).state_moved is None


def test_correlation_planners_beat_the_baselines_on_the_paper_workload():
    tr = square_wave_workload(num_nodes=8, units_per_node=10, chain_length=10, samples=20,
                              seed=4)
    w = tr.series[:, :DEFAULT_WINDOW]
    cor = GlobalCorrelation().plan(w, 8)
    for base in (LLFPlacement(), RandomPlacement(seed=1)):
        assert cor.node_std_mean < 0.6 * base.plan(w, 8).node_std_mean
    assert cor.mean_pair_correlation > 0.3


def test_paper_defaults():
    assert (DEFAULT_EPSILON, DEFAULT_DELTA, DEFAULT_THETA, DEFAULT_WINDOW) == (0.1, 0.2, 0.8, 10)
    p = PairwiseCorrelation()
    assert (p.epsilon, p.delta, p.theta, p.capacity) == (0.1, 0.2, 0.8, 1.0)
    assert GlobalCorrelation().theta == 0.8


def test_empty_and_single_node_inputs():
    empty = np.zeros((0, 5))
    assert GlobalCorrelation().plan(empty, 3).assignment.size == 0
    assert PairwiseCorrelation().plan(empty, [], 3).num_moved == 0
    s = np.array([UP, DOWN])
    assert GlobalCorrelation().plan(s, 1).assignment.tolist() == [0, 0]
    assert PairwiseCorrelation("exchange", True).plan(s, [0, 0], 1).num_moved == 0


@pytest.mark.parametrize("make, match", [
    (lambda: PairwiseCorrelation(mode="two-way"), "mode='two-way'"),
    (lambda: PairwiseCorrelation(improved=True), "improved=True"),
    (lambda: PairwiseCorrelation(theta=1.5), r"theta=1.5; expected a correlation in \[-1, 1\]"),
    (lambda: PairwiseCorrelation(epsilon=-1), "epsilon=-1; expected"),
    (lambda: GlobalCorrelation(capacity=0), "capacity=0; expected"),
    (lambda: LLFPlacement(scope="local"), "scope='local'"),
    (lambda: RandomPlacement(seed=-1), "seed=-1"),
    (lambda: GlobalCorrelation().plan([[1.0, -1.0]], 1), "expected loads >= 0"),
    (lambda: GlobalCorrelation().plan([1.0, 2.0], 1), r"expected \(m units"),
    (lambda: GlobalCorrelation().plan([[1.0, 2.0]], 0), "num_nodes=0"),
    (lambda: PairwiseCorrelation().plan([[1.0, 2.0]], [2], 2), "expected 0 <= node"),
    (lambda: PairwiseCorrelation().plan([[1.0, 2.0]], [0, 1], 2), r"expected \(1,\)"),
    (lambda: PairwiseCorrelation().plan([[1.0, 2.0]], [0], 2, [True, False]), "movable"),
    (lambda: PairwiseCorrelation().plan([[1.0, np.nan]], [0], 2), "non-finite"),
])
def test_errors_name_the_bad_value_and_the_range(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


def test_explain_rejects_unknown_units():
    p = GlobalCorrelation().plan([[1.0, 2.0]], 1)
    with pytest.raises(ValueError, match=r"unit=5; expected an index in \[0, 1\)"):
        p.explain(5)
    assert p.explain(0).startswith("unit 0: placed on 0")


def test_correlation_is_symmetric_on_the_planner_hot_path():
    s = np.random.default_rng(1).uniform(0, 1, (6, 10))
    from sparkbalance.planning.correlation.layout import Layout
    lay = Layout(s, np.array([0, 0, 0, 1, 1, 1]), None, 2)
    for o in range(3):
        assert lay.rho_in(np.array([o]), 0)[0] == pytest.approx(
            correlation(s[o], s[:3].sum(axis=0) - s[o]))
        assert lay.rho_with(np.array([o]), lay.x[1])[0] == pytest.approx(
            correlation(s[o], s[3:].sum(axis=0)))


@given(cases())
def test_improvement_steps_only_keep_pairs_whose_correlation_rose(case):
    """-IMP and COR-GLB step 3 accept a two-way plan only if the pair's ρ rises; COR-GLB
    runs at most n(n−1)/2 iterations (Xing et al. §3.3.4, §3.4)."""
    s, a, n, movable = case
    for planner in (PairwiseCorrelation("redistribute", True),
                    PairwiseCorrelation("exchange", True)):
        p = planner.plan(s, a, n, movable)
        assert p.info["improved_pairs"] == len(p.info["improvements"])
        assert all(new > old for _, _, old, new in p.info["improvements"])
    g = GlobalCorrelation().plan(s, n)
    assert g.info["iterations"] <= n * (n - 1) // 2
    assert all(new > old for _, _, old, new in g.info["improvements"])
    assert g.info["accepted"] == len(g.info["improvements"])


def test_a_global_plan_may_shrink_the_node_count():
    """Units on nodes >= num_nodes must move; the rest are renamed to stay if possible."""
    s = np.array([UP, UP, DOWN, DOWN, UP, DOWN])
    old = np.array([0, 1, 0, 1, 2, 2])                  # node 2 goes away
    for planner in (GlobalCorrelation(), LLFPlacement(), RandomPlacement(seed=2)):
        p = planner.plan(s, 2, old)
        assert p.assignment.max() < 2
        assert {4, 5} <= set(p.moved_units.tolist())
        assert p.load_moved == pytest.approx(s.mean(axis=1)[p.moved_units].sum())
    assert GlobalCorrelation().plan(s, 2, old).moved_units.tolist() == [4, 5]
    with pytest.raises(ValueError, match="pinned unit is on node 2"):
        GlobalCorrelation().plan(s, 2, old, movable=[True] * 5 + [False])
    with pytest.raises(ValueError, match="expected 0 <= node < num_nodes=2"):
        PairwiseCorrelation().plan(s, old, 2)
