"""The banded positional plan: balanced whenever a plan is, and its loss against the exact
SSM programme (Ding et al. §3.3) where both run; large n plans fast and warn beyond."""
from __future__ import annotations

import numpy as np
import pytest

from sparkbalance.planning.intervals import SSM
from sparkbalance.planning.intervals import ssm as ssm_mod
from sparkbalance.planning.intervals.banded import banded_positional, repair_cuts
from sparkbalance.planning.intervals.model import make_problem


def _instance(rng):
    n = int(rng.integers(3, 30))
    m = int(rng.choice([4, 8, 16])) * n
    w = rng.zipf(1.6, m).astype(float)
    w = np.minimum(w, w.sum() / n / 2)
    s = rng.uniform(0.5, 2, m) * w
    b = np.sort(np.concatenate([[0, m], rng.integers(0, m, n - 1)]))
    return w, s, b, int(max(1, n + rng.integers(-2, 3)))


def test_banded_equals_exact_on_random_skewed_instances():
    rng = np.random.default_rng(19)
    extra = []
    for _ in range(25):
        w, s, b, n2 = _instance(rng)
        p = make_problem(w, s, b, n2, 0.2, None)
        p = ssm_mod._relaxed(p) if ssm_mod._solve_positional(p)[0] == -np.inf else p
        ge, _ = ssm_mod._solve_positional(p)
        gb, cuts = banded_positional(p)
        assert gb <= ge + 1e-6
        loads = np.diff(p.wc[cuts])
        assert loads.max() <= p.cap and cuts[0] == 0 and cuts[-1] == p.m
        total = float(p.sc[-1])
        extra.append(((total - gb) - (total - ge)) / total)  # extra moved, share of state
    # Measured (seed 19, 25 instances, W = 16): the band holds the exact optimum on 23; the
    # other two move 1.2% and 8.6% more of the state. Before the band took the repaired
    # old layout (repair_cuts) as a third reference it held 21, and four moved 4%, 7%, 27%
    # and 82% more (the exact plan shifted cuts far from the old and least-max-load cuts).
    assert sum(e <= 1e-9 for e in extra) >= 23
    assert max(extra) <= 0.1


def test_large_n_uses_the_banded_plan_and_stays_balanced():
    rng = np.random.default_rng(3)
    n, m = 2000, 8000
    w = rng.exponential(1.0, m)
    b = np.linspace(0, m, n + 1).astype(np.int64)
    plan = SSM(0.2, positional=True).plan(w, w, b, n)
    assert plan.algorithm == "SSM/banded"
    assert plan.bounds[0] == 0 and plan.bounds[-1] == m and np.all(np.diff(plan.bounds) >= 0)


def test_repair_cuts_are_balanced_and_keep_the_old_cuts_that_fit():
    rng = np.random.default_rng(5)
    for _ in range(40):
        w, s, b, n2 = _instance(rng)
        p = make_problem(w, s, b, n2, float(rng.choice([0.05, 0.2, 1.0])), None)
        p = ssm_mod._relaxed(p) if ssm_mod._solve_positional(p)[0] == -np.inf else p
        r = repair_cuts(p)
        assert r is not None and r[0] == 0 and r[-1] == p.m and np.all(np.diff(r) >= 0)
        assert np.diff(p.wc[r]).max() <= p.cap
    # an old layout that is balanced already is kept as it is
    w = np.ones(12)
    p = make_problem(w, w, np.array([0, 3, 7, 12]), 3, 0.5, None)
    assert repair_cuts(p).tolist() == [0, 3, 7, 12]
    # no balanced layout at all (one group above the bound): None
    p = make_problem([5.0, 1, 1, 1], [1.0] * 4, np.array([0, 2, 4]), 2, 0.0, None)
    assert repair_cuts(p) is None


def test_fallback_slack_moves_less_within_its_factor_of_the_least_max_load():
    rng = np.random.default_rng(11)
    n, m = 200, 3200
    w = rng.zipf(1.3, m).astype(float)
    w = np.minimum(w, w.sum() / n / 4)
    b = np.linspace(0, m, n + 1).astype(np.int64)
    strict = SSM(0.0, positional=True).plan(w, w, b, n)
    loose = SSM(0.0, positional=True, fallback_slack=0.05).plan(w, w, b, n)
    assert not strict.feasible and not loose.feasible
    assert loose.loads.max() <= 1.05 * strict.loads.max() * (1 + 1e-9)
    assert loose.migration_cost <= strict.migration_cost
    with pytest.raises(ValueError, match="fallback_slack=-0.1"):
        SSM(0.2, fallback_slack=-0.1)


def test_banded_fallback_after_drift_keeps_most_state_in_place():
    """n' = 2,000, a drifted re-plan with a bound no layout meets: the strict fallback
    (least maximum load) moves 64 % of the state; 5 % slack over it moves 0.3 %."""
    rng = np.random.default_rng(2)
    n, m = 2000, 32_000
    w = rng.exponential(1.0, m)
    first = SSM(0.0, positional=True).plan(w, w, np.linspace(0, m, n + 1).astype(np.int64), n)
    assert first.algorithm == "SSM/banded"
    w2 = w * rng.uniform(0.8, 1.2, m)
    again = SSM(0.0, positional=True, fallback_slack=0.05).plan(w2, w2, first.bounds, n)
    assert again.migration_cost < 0.02 * w2.sum()


def test_default_num_groups_keeps_sixteen_per_partition_within_the_budget():
    from sparkbalance.routing.keygroups import GROUP_BUDGET, default_num_groups
    assert default_num_groups(1) == 16 and default_num_groups(10_000) == 160_000
    assert default_num_groups(20_000) == GROUP_BUDGET
    assert default_num_groups(10**6) == 4 * 10**6
    with pytest.raises(ValueError):
        default_num_groups(0)
