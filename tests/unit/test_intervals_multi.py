"""OMS, MTM-aware/PMC, baselines and the "keygroups" strategy (Ding et al. §4, §6)."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from sparkbalance.planning.intervals import (OMS, SSM, ConsistentHashing, MTMAware,
                                             StormDefault, brute_force,
                                             enumerate_partitionings, pairwise_costs, pmc,
                                             transition_matrix)
from sparkbalance.planning.intervals.model import make_problem, match_intervals
from sparkbalance.planning.intervals.oracle import balanced_partitionings
from sparkbalance.planning.intervals.partitionings import TooManyPartitionings

ONES = [1.0] * 20


# --- OMS ----------------------------------------------------------------------------------

def test_oms_table3_costs_6_in_total():
    plans = OMS(0.4).plan(ONES, ONES, [0, 13, 20], [3, 4])
    assert [p.num_nodes for p in plans] == [3, 4]
    assert all(p.feasible for p in plans)
    assert sum(p.migration_cost for p in plans) == 6.0
    assert plans[0].migration_cost == 4.0       # here OMS's first step is also SSM-optimal
    # plan t starts from plan t-1's intervals
    assert plans[1].previous_bounds.tolist() == plans[0].bounds.tolist()
    # the chain of two single steps costs more (paper: 10; the true SSM optimum chain >= 6)
    s1 = SSM(0.4).plan(ONES, ONES, [0, 13, 20], 3)
    s2 = SSM(0.4).plan(ONES, ONES, s1.bounds, 4)
    assert s1.migration_cost + s2.migration_cost >= 6.0


def _oms_brute(w, s, b, counts, tau):
    """Sequence optimum by enumeration (two steps): min over P1 of c(P0,P1) + SSM-brute."""
    p1 = make_problem(w, s, b, counts[0], tau)
    best = None
    for cuts in balanced_partitionings(p1):
        g, _ = match_intervals(p1.sc, p1.bounds, cuts)
        c1 = float(np.sum(s)) - g
        second = brute_force(w, s, cuts, counts[1], tau)
        if second.feasible:
            tot = c1 + second.migration_cost
            best = tot if best is None else min(best, tot)
    return best


def test_oms_matches_enumeration_on_random_instances():
    rng = np.random.default_rng(3)
    for _ in range(40):
        m = int(rng.integers(2, 9))
        w = rng.integers(1, 5, m).astype(float)
        s = rng.integers(0, 5, m).astype(float)
        n = int(rng.integers(1, 4))
        b = np.concatenate([[0], np.sort(rng.integers(0, m + 1, n - 1)), [m]])
        counts = [int(rng.integers(1, 4)), int(rng.integers(1, 4))]
        tau = float(rng.choice([0.2, 0.5]))
        want = _oms_brute(w, s, b, counts, tau)
        plans = OMS(tau).plan(w, s, b, counts)
        if want is None:
            assert not all(p.feasible for p in plans)
        else:
            assert all(p.feasible for p in plans)
            assert sum(p.migration_cost for p in plans) == pytest.approx(want)
            # never worse than chaining single steps
            s1 = SSM(tau).plan(w, s, b, counts[0])
            s2 = SSM(tau).plan(w, s, s1.bounds, counts[1])
            assert want <= s1.migration_cost + s2.migration_cost + 1e-9


def test_oms_single_step_is_ssm_and_infeasible_reported():
    one = OMS(0.4).plan(ONES, ONES, [0, 13, 20], [3])
    assert one[0].migration_cost == 4.0
    bad = OMS(0.0).plan([5, 1, 1], [1, 1, 1], [0, 3], [2, 3])
    assert not all(p.feasible for p in bad)
    with pytest.raises(ValueError, match="node_counts is empty"):
        OMS(0.4).plan(ONES, ONES, [0, 20], [])
    with pytest.raises(ValueError, match="len\\(taus\\)=1; expected 2"):
        OMS([0.4]).plan(ONES, ONES, [0, 20], [2, 3])


# --- partitionings and pairwise costs -----------------------------------------------------

def test_enumeration_matches_brute_force_set():
    rng = np.random.default_rng(8)
    for _ in range(30):
        m = int(rng.integers(1, 9))
        w = rng.integers(0, 4, m).astype(float)
        k = int(rng.integers(1, 4))
        p = make_problem(w, np.ones(m), [0, m], k, 0.5)
        got = {tuple(r) for r in enumerate_partitionings(p).tolist()}
        canon = set()
        for cuts in balanced_partitionings(p):
            inner = [int(c) for c, d in zip(cuts[1:], np.diff(cuts)) if d > 0]
            canon.add(tuple([0] + inner + [m] * (k - len(inner))))
        assert got == canon


def test_enumeration_limit_raises_clearly():
    p = make_problem([1.0] * 30, [1.0] * 30, [0, 30], 6, 2.0)
    with pytest.raises(TooManyPartitionings, match="more than limit=10"):
        enumerate_partitionings(p, limit=10)


def test_pairwise_costs_equal_match_intervals():
    rng = np.random.default_rng(4)
    m = 12
    sc = np.concatenate([[0], np.cumsum(rng.integers(0, 5, m).astype(float))])
    olds = np.array([np.concatenate([[0], np.sort(rng.integers(0, m + 1, 3)), [m]])
                     for _ in range(5)])
    news = np.array([np.concatenate([[0], np.sort(rng.integers(0, m + 1, 2)), [m]])
                     for _ in range(7)])
    got = pairwise_costs(sc, olds, news)
    for a in range(5):
        for b in range(7):
            g, _ = match_intervals(sc, olds[a], news[b])
            assert got[a, b] == pytest.approx(sc[-1] - g)


# --- MTM-aware / PMC ----------------------------------------------------------------------

def test_transition_matrix_learned_from_history():
    mtm = transition_matrix([2, 3, 3, 4, 3, 2, 3])
    assert mtm == {2: {3: 1.0}, 3: {4: 0.5, 2: 0.5}, 4: {3: 1.0}}


def test_pmc_map_fn_is_only_a_way_to_compute_the_rows():
    """An injected map_fn (here: out of order, as executors may return) gives the same PMC."""
    w = [1.0, 2.0, 1.0, 3.0, 1.0, 2.0, 1.0, 1.0]
    mtm = {2: {3: 0.5, 4: 0.5}, 3: {2: 1.0}, 4: {3: 1.0}}
    calls = []

    def map_fn(f, xs):
        calls.append(len(xs))
        return [f(x) for x in reversed(xs)]

    local = pmc(w, w, mtm, gamma=0.7, tau=0.3)
    mapped = pmc(w, w, mtm, gamma=0.7, tau=0.3, map_fn=map_fn)
    assert calls and mapped.used_map_fn and not local.used_map_fn
    for n in local.partitionings:
        np.testing.assert_array_equal(local.partitionings[n], mapped.partitionings[n])
        np.testing.assert_allclose(local.projected[n], mapped.projected[n], atol=1e-12)
    with pytest.raises(ValueError, match="map_fn returned"):
        pmc(w, w, mtm, gamma=0.7, tau=0.3, map_fn=lambda f, xs: [])


def test_pmc_value_iteration_fixed_point():
    w = [1.0] * 8
    mtm = {2: {3: 0.5, 4: 0.5}, 3: {2: 1.0}, 4: {3: 1.0}}
    r = pmc(w, w, mtm, gamma=0.7, tau=0.3)
    assert r.converged and r.exact
    # Bellman equation holds at the fixed point
    for n, row in mtm.items():
        want = np.zeros(r.partitionings[n].shape[0])
        for n2, prob in row.items():
            c = pairwise_costs(r.sizes_prefix, r.partitionings[n], r.partitionings[n2])
            want += prob * np.min(c + 0.7 * r.projected[n2][None, :], axis=1)
        assert r.projected[n] == pytest.approx(want, abs=1e-6)


def test_mtm_gamma_zero_is_ssm():
    mtm = MTMAware({2: {3: 1.0}, 3: {4: 1.0}, 4: {2: 1.0}}, gamma=0.0, tau=0.4)
    plan = mtm.plan(ONES, ONES, [0, 13, 20], 3)
    assert plan.migration_cost == 4.0 and plan.algorithm == "MTM-aware"


def test_mtm_aware_beats_single_step_on_table3_sequence():
    # 2 -> 3 -> 4 always: the MTM-aware first step prepares the cheap second step
    mtm = MTMAware({2: {3: 1.0}, 3: {4: 1.0}, 4: {2: 1.0}}, gamma=0.9, tau=0.4)
    a = mtm.plan(ONES, ONES, [0, 13, 20], 3)
    b = mtm.plan(ONES, ONES, a.bounds, 4)
    assert a.feasible and b.feasible
    s1 = SSM(0.4).plan(ONES, ONES, [0, 13, 20], 3)
    s2 = SSM(0.4).plan(ONES, ONES, s1.bounds, 4)
    assert a.migration_cost + b.migration_cost <= s1.migration_cost + s2.migration_cost
    assert a.migration_cost + b.migration_cost == 6.0   # = the OMS optimum here


def test_mtm_sampled_candidates_when_enumeration_is_too_large():
    rng = np.random.default_rng(0)
    w = rng.random(24) + 0.2
    mtm = MTMAware(transition_matrix([4, 5, 6, 5, 4, 6, 4]), gamma=0.8, tau=0.5,
                   max_partitionings=50, samples=20)
    plan = mtm.plan(w, w, np.linspace(0, 24, 5).astype(int), 6)
    assert plan.feasible
    assert mtm.pmc_ is not None and not mtm.pmc_.exact
    assert all(v.shape[0] > 0 for v in mtm.pmc_.partitionings.values())


@pytest.mark.parametrize("kwargs, text", [
    (dict(matrix={2: {3: -1.0}}), "expected a probability >= 0"),
    (dict(matrix={2: {3: 0.0}}), "no positive transition"),
    (dict(matrix=[[0, 1], [1, 0]]), "node_counts is required"),
    (dict(matrix={2: {3: 1.0}}, gamma=1.5), "gamma=1.5"),
    (dict(matrix={2: {3: 1.0}}, tau=-1), "tau=-1"),
])
def test_mtm_bad_parameters(kwargs, text):
    with pytest.raises((ValueError, TypeError), match=text):
        MTMAware(**kwargs)


def test_mtm_array_matrix_with_labels():
    m = MTMAware([[0.3, 0.6, 0.1], [0.3, 0.4, 0.3], [0.1, 0.5, 0.4]], node_counts=[2, 3, 4],
                 tau=0.4)
    assert m.matrix[2] == pytest.approx({2: 0.3, 3: 0.6, 4: 0.1})


def test_pure_modules_do_not_import_pyspark():
    import subprocess  # a child process: other tests in this session may import pyspark
    code = ("import sys, sparkbalance.planning.intervals as m; "
            "m.pmc([1.0]*6, [1.0]*6, {2: {3: 1.0}, 3: {2: 1.0}}); "
            "assert 'pyspark' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


# --- baselines ----------------------------------------------------------------------------

def test_storm_default_equal_counts_identity_owners():
    plan = StormDefault(0.4).plan(ONES, ONES, [0, 13, 20], 3)
    assert plan.bounds.tolist() == [0, 7, 14, 20]
    assert plan.owners.tolist() == [0, 1, 2]
    assert plan.migration_cost == 12.0       # 6 of node 0's and 6 of node 1's tasks move
    assert plan.migration_cost >= 2 * SSM(0.4).plan(ONES, ONES, [0, 13, 20], 3).migration_cost


def test_consistent_hashing_moves_only_what_changes_owner():
    ch = ConsistentHashing(64, seed=3)
    w = np.ones(64)
    first = ch.plan(w, w, 8)
    assert first.migration_cost == 0 and len(first.nodes) == 8
    before = first.node_of_task.copy()
    grow = ch.plan(w, w, 9)
    moved = grow.node_of_task != before
    assert grow.migration_cost == moved.sum()
    new_node = set(grow.nodes) - set(first.nodes)
    assert set(grow.node_of_task[moved].tolist()) <= new_node   # only to the new node
    shrink = ch.plan(w, w, 7)
    assert len(shrink.nodes) == 7
    assert shrink.loads.sum() == pytest.approx(64)


# --- the "keygroups" strategy -------------------------------------------------------------

def _stats(seed: int = 0, n: int = 600):
    from sparkbalance.stats.keystats import KeyStats
    rng = np.random.default_rng(seed)
    counts = rng.lognormal(0, 1, n)
    return KeyStats([f"k{i}" for i in range(n)], counts, counts, np.ones(n))


def test_keygroups_strategy_registered_and_balances():
    from sparkbalance import strategies
    from sparkbalance.routing.keygroups import KeyGroupPartitioner
    stats = _stats()
    f = strategies.fit("keygroups", stats, 6, num_groups=96, tau=0.2)
    assert isinstance(f, KeyGroupPartitioner) and f.num_partitions == 6
    loads = np.bincount(f.assign(stats.keys), weights=stats.cost, minlength=6)
    assert loads.max() <= 1.2 * loads.sum() / 6 * (1 + 1e-9)


def test_keygroups_change_of_partition_count_uses_current_layout():
    from sparkbalance.strategies.keygroups import group_statistics, plan_keygroups
    stats = _stats(1)
    f, p0 = plan_keygroups(stats, 6, num_groups=96, tau=0.3)
    for n2 in (6, 8, 4):
        g, plan = plan_keygroups(stats, n2, current=f, tau=0.3)
        assert g.num_groups == 96 and g.num_partitions == n2
        assert plan.previous_bounds.tolist() == f.bounds.tolist()
        assert plan.feasible
        # cost == state of groups whose partition index changes
        w, s = group_statistics(stats, 96)
        moved = f.owner_of_group != g.owner_of_group
        assert plan.migration_cost == pytest.approx(s[moved].sum())
        if n2 == 6:
            assert plan.migration_cost == 0        # already balanced: nothing moves
    # a non-keygroup current partitioner -> equal split start
    from sparkbalance.routing.hash import HashPartitioner
    g, plan = plan_keygroups(stats, 5, current=HashPartitioner(3), num_groups=60, tau=0.3)
    assert plan.previous_bounds.tolist() == [0, 20, 40, 60]


def test_keygroups_no_stats_and_infeasible():
    from sparkbalance.strategies.keygroups import plan_keygroups
    from sparkbalance.stats.keystats import KeyStats
    f, plan = plan_keygroups(KeyStats([], []), 4, num_groups=8)
    assert f.bounds.tolist() == [0, 2, 4, 6, 8] and plan.migration_cost == 0
    hot = KeyStats(["a", "b", "c"], [1000.0, 1.0, 1.0])
    f, plan = plan_keygroups(hot, 4, num_groups=16, tau=0.1)
    assert plan.feasible is False and f.num_partitions == 4


def test_pmc_extra_candidates_are_used_when_sampling():
    rng = np.random.default_rng(1)
    w = rng.random(24) + 0.2
    mtm = transition_matrix([4, 5, 6, 5, 4])
    extra = {5: [np.array([0, 5, 10, 15, 20, 24])],
             6: [np.array([0, 24, 24, 24, 24, 24, 24])]}   # unbalanced: ignored
    r = pmc(w, w, mtm, tau=0.5, max_partitionings=20, samples=5, candidates=extra)
    assert not r.exact
    rows = {tuple(x) for x in r.partitionings[5].tolist()}
    assert (0, 5, 10, 15, 20, 24) in rows
    assert (0, 24, 24, 24, 24, 24, 24) not in {tuple(x) for x in r.partitionings[6].tolist()}
