"""The banded positional plan: balanced whenever a plan is, and its loss against the exact
SSM programme (Ding et al. §3.3) where both run; large n plans fast and warn beyond."""
from __future__ import annotations

import numpy as np

from sparkbalance.planning.intervals import SSM
from sparkbalance.planning.intervals import ssm as ssm_mod
from sparkbalance.planning.intervals.banded import banded_positional
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
    # Measured (seed 19, 25 instances, W = 16): the band holds the exact optimum on 21; the
    # other four move 4%, 7%, 27% and 82% more of the state (one group heavier than the
    # bound: the exact plan shifts cuts far from both reference layouts). A known loss.
    assert sum(e <= 1e-9 for e in extra) >= 21


def test_large_n_uses_the_banded_plan_and_stays_balanced():
    rng = np.random.default_rng(3)
    n, m = 2000, 8000
    w = rng.exponential(1.0, m)
    b = np.linspace(0, m, n + 1).astype(np.int64)
    plan = SSM(0.2, positional=True).plan(w, w, b, n)
    assert plan.algorithm == "SSM/banded"
    assert plan.bounds[0] == 0 and plan.bounds[-1] == m and np.all(np.diff(plan.bounds) >= 0)
