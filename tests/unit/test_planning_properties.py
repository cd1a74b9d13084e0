"""Property tests (hypothesis) for the routing-table planners over random Zipf workloads."""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkbalance.planning import (LLFD, MinMig, MinTable, Mixed, MixedBF, Readj, Workload,
                                   compact)
from sparkbalance.routing.table import RoutingTable

from .test_planning_core import check_plan_invariants

SETTINGS = settings(max_examples=int(os.environ.get("SB_PLANNING_EXAMPLES", "40")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def zipf_cases(draw):
    K = draw(st.integers(1, 250))
    n = draw(st.integers(1, 10))
    z = draw(st.floats(0.2, 1.6))
    seed = draw(st.integers(0, 2**31 - 1))
    moved_frac = draw(st.sampled_from([0.0, 0.05, 0.3]))
    rng = np.random.default_rng(seed)
    p = np.arange(1, K + 1, dtype=float) ** (-z)
    cost = rng.multinomial(20 * K, p / p.sum()).astype(float)
    if draw(st.booleans()):
        cost = cost * rng.uniform(0.01, 3.0, K)  # non-integer costs (time-weighted)
    memory = cost * rng.uniform(0.0, 2.0, K)
    home = rng.integers(0, n, K)
    routed = rng.random(K) < moved_frac
    cur = np.where(routed, rng.integers(0, n, K), home)
    w = Workload(np.arange(K), cost, memory, home, cur, n)
    entries = {int(k): int(cur[k]) for k in np.flatnonzero(cur != home)}
    if draw(st.booleans()):
        entries["absent-key"] = int(rng.integers(0, n))  # stale entry
    return w, RoutingTable(entries, version=draw(st.integers(0, 5)))


planners = st.sampled_from([MinTable, MinMig, Mixed, MixedBF, LLFD, Readj])
thetas = st.sampled_from([0.0, 0.01, 0.08, 0.3])


@SETTINGS
@given(case=zipf_cases(), cls=planners, theta=thetas,
       max_table=st.one_of(st.none(), st.integers(0, 60)),
       comp=st.sampled_from([False, 1, 8]), phase2=st.sampled_from(["paper", "fit"]))
def test_every_plan_is_consistent(case, cls, theta, max_table, comp, phase2):
    w, table = case
    p = cls(theta=theta, max_table=max_table, compact=comp, phase2=phase2).plan(w, table)
    check_plan_invariants(w, table, p, theta, max_table)
    # realised routes agree with the table for keys absent from the workload as well
    for k, v in p.table.items():
        assert 0 <= v < w.num_partitions


@SETTINGS
@given(case=zipf_cases(), cls=st.sampled_from([MinTable, MinMig, Mixed, MixedBF, LLFD]),
       theta=st.sampled_from([0.01, 0.08, 0.3]), phase2=st.sampled_from(["paper", "fit"]))
def test_easy_instances_are_feasible(case, cls, theta, phase2):
    w, table = case
    cap = theta * w.mean_load
    cost = np.minimum(w.cost, cap)  # every c(k) <= θ·L̄' (L̄' <= L̄ after clipping)
    w2 = Workload(w.keys, cost, w.memory, w.home, w.current, w.num_partitions)
    if np.any(w2.cost > theta * w2.mean_load):
        cost = np.minimum(cost, theta * w2.mean_load)
        w2 = Workload(w.keys, cost, w.memory, w.home, w.current, w.num_partitions)
    if np.any(w2.cost > theta * w2.mean_load * (1 + 1e-12)):
        return  # clipping twice was not enough (tiny instance); not an easy instance
    p = cls(theta=theta, max_table=None, phase2=phase2).plan(w2, table)
    assert p.feasible, p.summary()


@SETTINGS
@given(case=zipf_cases(), theta=thetas, max_table=st.integers(0, 40))
def test_mixedbf_never_moves_more_than_mixed_when_both_feasible(case, theta, max_table):
    w, table = case
    m = Mixed(theta=theta, max_table=max_table).plan(w, table)
    bf = MixedBF(theta=theta, max_table=max_table).plan(w, table)
    if m.feasible:
        assert bf.feasible
        assert bf.migration_cost <= m.migration_cost * (1 + 1e-9) + 1e-9


@SETTINGS
@given(case=zipf_cases(), degree=st.sampled_from([1, 2, 8, 64]), theta=thetas)
def test_compact_estimates_match_realised_keys(case, degree, theta):
    w, table = case
    p = Mixed(theta=theta, compact=degree).plan(w, table)
    r = compact(w, degree)
    a = p.info["records_assignment"]  # realised records, before the exact touch-up
    n = w.num_partitions
    est = p.info["estimated_loads_after"]
    assert np.allclose(est, np.bincount(a, weights=r.approx_cost, minlength=n), atol=1e-6)
    err = np.bincount(a, weights=np.abs(r.approx_cost - w.cost), minlength=n)
    before = w.loads(a)
    assert np.all(np.abs(before - est) <= err + 1e-6)
    # the exact touch-up never makes the maximum worse
    assert p.loads_after.max() <= before.max() + 1e-6
    assert p.info["records"] <= max(len(w), 1)


@SETTINGS
@given(case=zipf_cases(), cls=planners, theta=thetas)
def test_plans_are_deterministic(case, cls, theta):
    w, table = case
    a = cls(theta=theta).plan(w, table)
    b = cls(theta=theta).plan(w, table)
    assert np.array_equal(a.assignment, b.assignment)
    assert dict(a.table.routes) == dict(b.table.routes)


@pytest.mark.parametrize("cls", [MinTable, MinMig, Mixed, MixedBF, LLFD, Readj])
def test_single_partition_and_single_key(cls):
    w = Workload(np.arange(3), [1., 2., 3.], [1., 1., 1.], [0, 0, 0], [0, 0, 0], 1)
    p = cls(theta=0.0).plan(w)
    assert p.feasible and p.moves == ()
    w1 = Workload(np.arange(1), [5.], [1.], [1], [1], 3)
    p1 = cls(theta=0.0).plan(w1)
    assert p1.imbalance_after == pytest.approx(w1.imbalance_lower_bound)


@SETTINGS
@given(case=zipf_cases(), theta=thetas, max_table=st.integers(0, 40),
       cls=st.sampled_from([Mixed, MixedBF, MinTable]), comp=st.sampled_from([False, 4]))
def test_table_planners_never_exceed_max_table(case, theta, max_table, cls, comp):
    """A_max is a hard limit: a plan within it always exists (every key home), so a
    table-controlling planner never exceeds it; the status says when balance was given up."""
    w, table = case
    p = cls(theta=theta, max_table=max_table, compact=comp).plan(w, table)
    assert p.table_size <= max_table, p.summary()
    mt = MinTable(theta=theta, max_table=None).plan(w, table)
    if cls is Mixed and not comp and mt.table_size <= max_table and mt.feasible:
        assert p.feasible, (p.summary(), mt.summary())
    if p.info["max_table_status"] != "within":
        assert not p.feasible


@SETTINGS
@given(case=zipf_cases(), theta=thetas, max_table=st.integers(0, 40),
       cls=st.sampled_from([Mixed, MixedBF]))
def test_theorem2_never_worse_than_llfd_when_its_table_fits(case, theta, max_table, cls):
    """Fang et al. Theorem 2: "the balance status generated by Mixed is not worse than that
    generated by LLFD" — read as: when LLFD's table fits A_max, Mixed meets θ whenever
    LLFD does, and when Mixed misses θ its maximum load is no higher than LLFD's."""
    w, table = case
    llfd = LLFD(theta=theta, max_table=None).plan(w, table)
    p = cls(theta=theta, max_table=max_table).plan(w, table)
    if llfd.table_size <= max_table:
        if llfd.feasible:
            assert p.feasible, (p.summary(), llfd.summary())
        else:
            tol = 1e-9 * max(w.mean_load, 1e-300)
            assert p.loads_after.max() <= llfd.loads_after.max() + tol, (p.summary(),
                                                                          llfd.summary())


@SETTINGS
@given(case=zipf_cases(), theta=thetas, max_table=st.integers(0, 10))
def test_allow_overflow_keeps_the_better_balanced_plan(case, theta, max_table):
    w, table = case
    strict = Mixed(theta=theta, max_table=max_table).plan(w, table)
    loose = Mixed(theta=theta, max_table=max_table, allow_overflow=True).plan(w, table)
    assert loose.loads_after.max() <= strict.loads_after.max() + 1e-9 * max(w.mean_load, 1)
    if loose.table_size > max_table:
        assert loose.info["max_table_status"].startswith("exceeded")
