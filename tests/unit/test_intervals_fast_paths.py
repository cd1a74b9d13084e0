"""The fast paths of the interval planners give the same results as the code they replaced.

Slow references kept here: the pair-by-pair matching DP of the PMC cost matrices and its
Bellman sweeps (Ding et al. Fig. 6), the greedy cover walked jump by jump of the least
max-load layout, and the banded programme with per-cell gathers. Each optimised path must
give the same floats (not just close ones), so MTM-aware, SSM and the banded plan choose
exactly what they chose before. Also: SSM through the "keygroups" strategy at n = 10,000
partitions completes with a valid plan (speed is measured by
``integration/benchmarks/bench_scale.py``, not asserted here).
"""
from __future__ import annotations

import numpy as np
import pytest

from sparkbalance.planning.intervals import MTMAware, mtm as mtm_mod, pmc
from sparkbalance.planning.intervals import partitionings as parts_mod
from sparkbalance.planning.intervals.banded import _windows, banded_positional, band_width
from sparkbalance.planning.intervals.model import make_problem, min_max_partition
from sparkbalance.planning.intervals.partitionings import pairwise_costs


# --- slow references (the code before the optimisation) ----------------------------------

def _batch_gain_ref(sc, old, new):
    bsz, n1 = old.shape[0], old.shape[1] - 1
    n2 = new.shape[1] - 1
    lo = np.maximum(old[:, :-1, None], new[:, None, :-1])
    hi = np.minimum(old[:, 1:, None], new[:, None, 1:])
    ov = np.where(hi > lo, sc[np.maximum(hi, lo)] - sc[lo], 0.0)
    prev = np.zeros((bsz, n2 + 1))
    for i in range(n1):
        row = np.zeros((bsz, n2 + 1))
        best = np.maximum(prev[:, 1:], prev[:, :-1] + ov[:, i, :])
        row[:, 1:] = np.maximum.accumulate(best, axis=1)
        prev = row
    return prev[:, -1]


def pairwise_costs_ref(sc, olds, news, trie=None):
    olds, news = np.asarray(olds, dtype=np.int64), np.asarray(news, dtype=np.int64)
    a, b = olds.shape[0], news.shape[0]
    out = np.empty((a, b))
    if a == 0 or b == 0:
        return out
    o, nn = np.repeat(olds, b, axis=0), np.tile(news, (a, 1))
    out[:] = (float(sc[-1]) - _batch_gain_ref(sc, o, nn)).reshape(a, b)
    return np.maximum(out, 0.0)


def pmc_values_ref(result, mtm, gamma, max_iter=1000, tol=1e-9):
    """Fig. 6's value iteration on the candidate set of ``result``, every cost matrix
    computed pair by pair in both directions and every sweep with a full temporary."""
    parts, sc = result.partitionings, result.sizes_prefix
    counts = sorted(parts)
    costs = {(n, n2): pairwise_costs_ref(sc, parts[n], parts[n2])
             for n, r in mtm.items() for n2 in r if parts[n].shape[0] and parts[n2].shape[0]}
    values = {n: np.zeros(parts[n].shape[0]) for n in counts}
    for _ in range(max_iter):
        new = {}
        for n in counts:
            acc = np.zeros(parts[n].shape[0])
            for n2, prob in mtm.get(n, {}).items():
                if (n, n2) in costs:
                    acc += prob * np.min(costs[(n, n2)] + gamma * values[n2][None, :], axis=1)
            new[n] = acc
        delta = max(float(np.max(np.abs(new[n] - values[n]), initial=0.0)) for n in counts)
        scale = max(float(np.max(np.abs(v), initial=0.0)) for v in new.values())
        values = new
        if delta <= tol * max(1.0, scale):
            break
    return values


def min_max_partition_ref(wc, k):
    m = wc.shape[0] - 1
    lo, hi = float(np.diff(wc).max(initial=0.0)), float(wc[-1])

    def cover(bound):
        nxt = (np.searchsorted(wc, wc[:-1] + bound * (1 + 1e-12), side="right") - 1).tolist()
        cuts, x = [0], 0
        while x < m:
            x2 = nxt[x]
            if x2 <= x or len(cuts) > k:
                return None
            cuts.append(x2)
            x = x2
        return cuts if len(cuts) - 1 <= k else None

    for _ in range(100):
        if hi - lo <= 1e-9 * max(hi, 1.0):
            break
        mid = (lo + hi) / 2
        if cover(mid) is None:
            lo = mid
        else:
            hi = mid
    cuts = cover(hi) or [0, m]
    return np.asarray(cuts + [m] * (k + 1 - len(cuts)), dtype=np.int64)


def banded_ref(p, width):
    m, n, k = p.m, p.n, p.num_nodes
    win = _windows(p, width)
    s = win.shape[1]
    f = np.where(win[k] == m, 0.0, -np.inf)
    args = np.zeros((k, s), dtype=np.int64)
    for j in range(k - 1, -1, -1):
        x, y = win[j][:, None], win[j + 1][None, :]
        load = p.wc[y] - p.wc[x]
        ok = ((y > x) | ((y == x) & (p.low <= 0))) & (load <= p.cap)
        if p.low > 0:
            ok &= load >= p.low
        s0, e0 = (int(p.bounds[j]), int(p.bounds[j + 1])) if j < n else (m, m)
        a, b = np.maximum(x, s0), np.minimum(y, e0)
        ov = np.where(b > a, p.sc[np.maximum(a, b)] - p.sc[a], 0.0)
        cand = np.where(ok, ov, -np.inf) + f[None, :]
        args[j] = np.argmax(cand, axis=1)
        f = cand[np.arange(s), args[j]]
    if f[0] == -np.inf:
        return float(f[0]), []
    cuts, col = [0], 0
    for j in range(k):
        col = int(args[j, col])
        cuts.append(int(win[j + 1, col]))
    return float(f[0]), cuts


# --- PMC / MTM-aware -----------------------------------------------------------------------

def _cuts(rng, m, k):
    return np.concatenate([[0], np.sort(rng.integers(0, m + 1, k - 1)), [m]])


def test_pairwise_costs_equal_the_pair_by_pair_dp_exactly():
    rng = np.random.default_rng(1)
    for _ in range(200):
        m = int(rng.integers(1, 16))
        sizes = rng.uniform(0, 5, m) * (rng.random(m) < 0.8)     # zero sizes too
        sc = np.concatenate([[0.0], np.cumsum(sizes)])
        k1, k2 = int(rng.integers(1, 7)), int(rng.integers(1, 7))
        olds = np.array([_cuts(rng, m, k1) for _ in range(int(rng.integers(1, 12)))])
        news = np.array([_cuts(rng, m, k2) for _ in range(int(rng.integers(1, 40)))])
        got = pairwise_costs(sc, olds, news)
        assert np.array_equal(got, pairwise_costs_ref(sc, olds, news))
        # the transposed matrix is the cost the other way round (PMC computes one of two)
        assert np.array_equal(got.T, pairwise_costs(sc, news, olds))


def test_pairwise_costs_across_old_blocks_and_node_chunks(monkeypatch):
    monkeypatch.setattr(parts_mod, "_OLD_BLOCK", 3)
    monkeypatch.setattr(parts_mod, "_CELLS", 7)
    rng = np.random.default_rng(2)
    sc = np.concatenate([[0.0], np.cumsum(rng.uniform(0, 3, 20))])
    olds = np.array([_cuts(rng, 20, 4) for _ in range(10)])
    news = np.array([_cuts(rng, 20, 5) for _ in range(25)])
    assert np.array_equal(pairwise_costs(sc, olds, news), pairwise_costs_ref(sc, olds, news))


@pytest.mark.parametrize("limit", [20_000, 40])    # exact enumeration, sampled candidates
def test_pmc_values_equal_the_reference_value_iteration(limit):
    rng = np.random.default_rng(3)
    for _ in range(6):
        m = int(rng.integers(8, 20))
        w = rng.uniform(0.2, 3.0, m)
        counts = [2, 3, 4]
        mtm = {2: {3: 1.0}, 3: {2: 0.4, 4: 0.6}, 4: {3: 0.7, 2: 0.3}}
        g = float(rng.choice([0.3, 0.8, 0.95]))
        r = pmc(w, w, mtm, gamma=g, tau=float(rng.choice([0.3, 0.8])),
                max_partitionings=limit, samples=30, seed=int(rng.integers(0, 99)))
        ref = pmc_values_ref(r, mtm, g)
        for n in counts:
            assert np.array_equal(r.projected[n], ref[n])


def test_mtm_aware_plans_equal_the_slow_path_on_random_replays(monkeypatch):
    rng = np.random.default_rng(4)
    cases = []
    for _ in range(4):
        m = int(rng.integers(10, 24))
        nodes = [2] + [int(c) for c in rng.integers(2, 5, 8)]
        base = rng.uniform(0.2, 3.0, m)
        cases.append((m, nodes, [base * rng.uniform(0.8, 1.2, m) for _ in nodes],
                      float(rng.choice([0.2, 0.4])), float(rng.choice([0.5, 0.8]))))

    def replay():
        out = []
        for m, nodes, ws, tau, g in cases:
            planner = MTMAware(mtm_mod.transition_matrix(nodes), gamma=g, tau=tau)
            bounds = np.linspace(0, m, nodes[0] + 1).round().astype(int)
            for w, n in zip(ws[1:], nodes[1:]):
                p = planner.plan(w, w, bounds, n)
                out.append((p.bounds.tolist(), p.owners.tolist(), p.migration_cost))
                bounds = p.bounds
        return out

    fast = replay()
    monkeypatch.setattr(mtm_mod, "pairwise_costs", pairwise_costs_ref)
    monkeypatch.setattr(mtm_mod, "_min_plus", lambda c, add, axis: np.min(
        c + add[None, :], axis=1) if axis == 1 else np.min(c + add[:, None], axis=0))
    assert replay() == fast


def test_counting_walks_equals_enumerating_them():
    rng = np.random.default_rng(5)
    for t in range(200):
        m, k = int(rng.integers(1, 12)), int(rng.integers(1, 5))
        w = rng.integers(0, 4, m).astype(float)
        p = make_problem(w, np.ones(m), [0, m], k, float(rng.choice([0.0, 0.5, 2.0])),
                         None if t % 2 else 0.3)
        ok = parts_mod.coverable(p, k)
        assert parts_mod._count_walks(p, k, ok) == sum(1 for _ in parts_mod._walk(p, k, ok))


# --- SSM at large n ---------------------------------------------------------------------

def test_min_max_partition_equals_the_jump_by_jump_cover():
    rng = np.random.default_rng(6)
    for _ in range(300):
        m, k = int(rng.integers(1, 40)), int(rng.integers(1, 50))
        w = rng.integers(0, 5, m) * rng.uniform(0.1, 3.0, m)
        wc = np.concatenate([[0.0], np.cumsum(w)])
        assert np.array_equal(min_max_partition(wc, k), min_max_partition_ref(wc, k))


def test_banded_plan_equals_the_per_cell_reference():
    rng = np.random.default_rng(7)
    for t in range(60):
        n = int(rng.integers(1, 30))
        m = int(rng.choice([1, 4, 16])) * n + int(rng.integers(0, 4))
        w = rng.zipf(1.5, m).astype(float) * (rng.random(m) < 0.9)
        s = rng.uniform(0, 2, m) * (rng.random(m) < 0.8)
        b = np.sort(np.concatenate([[0, m], rng.integers(0, m + 1, n - 1)]))
        p = make_problem(w, s, b, int(max(1, n + rng.integers(-3, 4))),
                         float(rng.choice([0.0, 0.2, 1.0])), None if t % 3 else 0.2)
        width = int(rng.integers(0, 17))
        gain, cuts = banded_positional(p, width)
        ref_gain, ref_cuts = banded_ref(p, width)
        assert gain == ref_gain and cuts.tolist() == ref_cuts


def test_band_narrows_only_at_thousands_of_partitions():
    assert band_width(1) == band_width(1600) == 16
    assert band_width(10_000) == 6 and band_width(10**7) == 4


def test_keygroups_at_ten_thousand_partitions_completes_with_a_valid_plan():
    from sparkbalance.stats.keystats import KeyStats
    from sparkbalance.strategies.keygroups import plan_keygroups
    rng = np.random.default_rng(8)
    k, n = 100_000, 10_000
    cost = rng.exponential(1.0, k)
    stats = KeyStats(np.arange(k, dtype=np.int64), np.ones(k), cost=cost, memory=cost)
    part, plan = plan_keygroups(stats, n)
    assert plan.algorithm == "SSM/banded" and part.num_partitions == n
    b = plan.bounds
    assert b[0] == 0 and b[-1] == part.num_groups and np.all(np.diff(b) >= 0)
    assert plan.loads.sum() == pytest.approx(cost.sum())
    _, plan2 = plan_keygroups(stats, n, current=part)     # re-plan from that layout
    assert plan2.migration_cost == 0.0 and np.array_equal(plan2.bounds, b)
