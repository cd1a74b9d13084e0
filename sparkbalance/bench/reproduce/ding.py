"""Ding et al., "Optimal Operator State Migration for Elastic Data Stream Processing" §6,
simulated on :mod:`sparkbalance.planning.intervals` (no Spark).

* Fig. 9: migration cost (% of all state, mean per migration) vs τ for SSM, MTM-aware,
  consistent hashing (mean over seeds) and Storm's default scheduler.
* Figs. 10/12: SSM's plan time vs τ and vs the number of tasks m, cost vs m.
* Fig. 14: MTM-aware's cost and PMC's precomputation time vs the discount factor γ.

Workload: m tasks (key groups of a Zipf z = 1 word stream, sizes = weights), node counts
following a random walk over [2, n_max] (the MTM is learned from that walk), weights
re-drawn with ±20 % noise each step. The paper's defaults: m = 64, 100 migrations,
γ = 0.8; its τ axis is a ratio (default 1.2) — here τ is the tolerated overload
(capacity (1 + τ)·W/n').
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from sparkbalance.planning.intervals import (SSM, ConsistentHashing, MTMAware, StormDefault,
                                   transition_matrix)
from sparkbalance.bench.reproduce.common import format_rows, line_plot

__all__ = ["run", "scenario", "replay"]


def scenario(m: int, steps: int, n_max: int, seed: int = 0
             ) -> tuple[list[np.ndarray], list[int]]:
    """(task weights per step, node count per step) of the simulated elastic run."""
    rng = np.random.default_rng(seed)
    p = np.arange(1, 50 * m + 1, dtype=float) ** -1.0
    groups = rng.integers(0, m, p.shape[0])
    base = np.bincount(groups, weights=p / p.sum(), minlength=m) * 1e4
    nodes = [2]
    for _ in range(steps):
        nodes.append(int(np.clip(nodes[-1] + rng.choice([-1, 1]), 2, n_max)))
    weights = [base * rng.uniform(0.8, 1.2, m) for _ in nodes]
    return weights, nodes


def replay(planner, weights: list[np.ndarray], nodes: list[int]) -> tuple[float, float, int]:
    """(mean migration % of the state per step, mean plan seconds, infeasible steps)."""
    m = weights[0].shape[0]
    bounds = np.linspace(0, m, nodes[0] + 1).round().astype(int)
    cost, secs, bad = [], [], 0
    for w, n in zip(weights[1:], nodes[1:]):
        p = planner.plan(w, w, bounds, n)
        cost.append(100 * p.migration_cost / w.sum())
        secs.append(p.seconds)
        bad += not p.feasible
        bounds = p.bounds
    return float(np.mean(cost)), float(np.mean(secs)), bad


def _ch(weights: list[np.ndarray], nodes: list[int], tau: float, seeds: int) -> float:
    out = []
    for s in range(seeds):
        ch = ConsistentHashing(weights[0].shape[0], tau=tau, seed=s)
        ch.plan(weights[0], weights[0], nodes[0])
        out.append(np.mean([100 * ch.plan(w, w, n).migration_cost / w.sum()
                            for w, n in zip(weights[1:], nodes[1:])]))
    return float(np.mean(out))


def _show(texts: list[str], table: str) -> None:
    """Keep ``table`` and print it at once (a full run takes minutes per table)."""
    texts.append(table)
    print(table + "\n", flush=True)


def run(out: Path, quick: bool = False, migrations: int | None = None) -> str:
    """Run the experiments, print and return the tables, write plots under ``out``.

    ``migrations``: replay only the first that many migrations of the run in the MTM-aware
    experiments (Figs. 9 and 14; the MTM is learned from those steps), a reduced form when
    the full one takes too long on a loaded machine. Fig. 12 (SSM only) keeps them all.
    """
    m = 24 if quick else 64
    full_steps = 10 if quick else 40
    steps = full_steps if migrations is None else min(int(migrations), full_steps)
    n_max = 4 if quick else 6
    weights, nodes = scenario(m, full_steps, n_max)
    weights, nodes = weights[:steps + 1], nodes[:steps + 1]
    M = transition_matrix(nodes)
    taus = (0.2, 0.5) if quick else (0.1, 0.2, 0.3, 0.5, 0.8)
    texts, rows = [], []
    for tau in taus:
        ssm = replay(SSM(tau=tau), weights, nodes)
        mtm = replay(MTMAware(M, gamma=0.8, tau=tau), weights, nodes)
        storm = replay(StormDefault(tau=tau), weights, nodes)
        rows.append([tau, ssm[0], mtm[0], _ch(weights, nodes, tau, 3 if quick else 20),
                     storm[0], 1e3 * ssm[1], ssm[2]])
    _show(texts, format_rows(
        f"Ding et al. Fig. 9/10: migration % of state per step vs τ (m = {m}, {steps} "
        f"migrations, nodes 2..{n_max}; paper: SSM, MTM below CH and Storm; SSM < 2 ms)",
        ["τ", "SSM %", "MTM %", "CH %", "Storm %", "SSM ms", "SSM infeasible"], rows))
    line_plot(out / "ding_fig9.png", "Fig. 9: cost vs τ", "τ", "migration % per step",
              {nm: (taus, [r[i] for r in rows]) for i, nm in
               ((1, "SSM"), (2, "MTM-aware"), (3, "CH"), (4, "Storm"))})
    ms = (16, 32) if quick else (16, 32, 64, 128)
    rows = []
    for mm in ms:
        w2, n2 = scenario(mm, full_steps, n_max, seed=1)
        c, s, _ = replay(SSM(tau=0.2), w2, n2)
        rows.append([mm, c, 1e3 * s])
    _show(texts, format_rows(f"Ding et al. Fig. 12: SSM vs m (τ = 0.2, {full_steps} migrations; "
                             "paper: time grows quadratically, cost falls with m)",
                             ["m", "SSM %", "SSM ms"], rows))
    line_plot(out / "ding_fig12.png", "Fig. 12: SSM cost vs m", "m", "migration %",
              {"SSM": (ms, [r[1] for r in rows])}, logx=True)
    gammas = (0.0, 0.8) if quick else (0.0, 0.2, 0.4, 0.6, 0.8, 0.95)
    rows = []
    for g in gammas:
        mtm = MTMAware(M, gamma=g, tau=0.2)
        t0 = time.perf_counter()
        mtm.precompute(weights[0], weights[0])
        pre = time.perf_counter() - t0
        c, s, _ = replay(mtm, weights, nodes)
        rows.append([g, c, pre, 1e3 * s])
    _show(texts, format_rows("Ding et al. Fig. 14: MTM-aware vs γ (τ = 0.2; paper: cost "
                             "falls and PMC time grows with γ; γ = 0 is SSM)",
                             ["γ", "MTM %", "PMC s", "plan ms"], rows))
    line_plot(out / "ding_fig14.png", "Fig. 14: MTM-aware vs γ", "γ", "migration %",
              {"MTM-aware": (gammas, [r[1] for r in rows])})
    return "\n\n".join(texts)
