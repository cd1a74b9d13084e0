"""The workloads of Xing et al. §5.1 and a period-by-period replay of load series.

Workloads (Table 2): independent linear operator chains of ``chain_length`` operators, each
fed by one input stream; operator loads are rate × cumulative selectivity × 1 ms per tuple,
scaled so that the mean node load equals the system load level.

* :func:`square_wave_workload` — every stream alternates between a high and a low rate
  (ratio 4, period 10 samples, equal halves) with its own phase offset, uniform in
  [0, period), so stream correlations span [−1, 1]; base rates and selectivities
  U(0.8, 1.2); Poisson arrival counts per sample (the paper's exponential inter-arrival
  times).
* :func:`on_off_workload` — the On-Off model of §5.1.2: streams alternate active/idle
  periods with exponential durations (means 5 and 5 samples); half the streams are
  independent, each other stream is the opposite of one of them or a time-shifted copy.

:func:`simulate` replays a trace: after ``warmup`` samples the ``once`` planner places the
units (a global algorithm), and from then on the ``every`` planner decides every period
from the last ``window`` samples (the paper's load distribution period: one sample). It
measures, per sample, the node loads under the assignment in force, and over the
evaluation part: the average node std and the mean pairwise node ρ over sliding windows of
``window`` samples, the load moved (Σ mean load of moved units per plan, §5.2.1 footnote
3), and a fluid-queue latency proxy (our stand-in for the paper's CSIM latency ratio: per
node, backlog(t+1) = max(0, backlog(t) + load(t) − capacity); a moved unit is suspended for
``migration_time`` and its work during that time joins the receiver's backlog).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .params import DEFAULT_WINDOW
from .stats import ZERO_STD_RTOL

__all__ = ["LoadTrace", "SimulationResult", "square_wave_workload", "on_off_workload",
           "connected_assignment", "random_assignment", "simulate", "window_metrics",
           "PAPER_NODES", "PAPER_UNITS_PER_NODE", "PAPER_CHAIN_LENGTH", "PAPER_PERIOD",
           "PAPER_RATIO", "PAPER_MIGRATION_TIME"]

#: Xing et al. Table 2: number of nodes, average operators per node, operators per chain,
#: input rate fluctuation period (samples of 1 s) and ratio, operator migration time (s).
PAPER_NODES = 20
PAPER_UNITS_PER_NODE = 10
PAPER_CHAIN_LENGTH = 10
PAPER_PERIOD = 10.0
PAPER_RATIO = 4.0
PAPER_MIGRATION_TIME = 0.2
_DELAY = 1e-3            # Table 2: operator processing delay, 1 ms per tuple


@dataclass(frozen=True, eq=False)
class LoadTrace:
    """Per-unit load per sample, shape (m, T), and the chain (input stream) of each unit."""

    series: np.ndarray
    chain: np.ndarray
    name: str


def _chains(num_nodes: int, units_per_node: int, chain_length: int,
            rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    m = num_nodes * units_per_node
    c = -(-m // chain_length)
    chain = np.arange(m) // chain_length
    sel = rng.uniform(0.8, 1.2, m)
    cum = np.empty(m)
    for j in range(c):          # cumulative selectivity along each chain
        idx = np.flatnonzero(chain == j)
        cum[idx] = np.cumprod(sel[idx])
    base = rng.uniform(0.8, 1.2, c)
    return chain, cum, base, c


def _finish(rate: np.ndarray, chain: np.ndarray, cum: np.ndarray, num_nodes: int,
            load_level: float, noise: bool, rng: np.random.Generator, name: str) -> LoadTrace:
    """Scale chain input rates (c, T) to the load level, draw arrivals, make unit loads."""
    expected = (rate[chain] * cum[:, None] * _DELAY).sum(axis=0).mean()
    rate = rate * (load_level * num_nodes / expected)
    counts = rng.poisson(rate).astype(np.float64) if noise else rate
    series = counts[chain] * cum[:, None] * _DELAY
    return LoadTrace(series=series, chain=chain, name=name)


def square_wave_workload(num_nodes: int = PAPER_NODES,
                         units_per_node: int = PAPER_UNITS_PER_NODE,
                         chain_length: int = PAPER_CHAIN_LENGTH, samples: int = 200,
                         period: float = PAPER_PERIOD, ratio: float = PAPER_RATIO,
                         load_level: float = 0.9, seed: int = 0, noise: bool = True,
                         phases: str = "spread") -> LoadTrace:
    """Periodically fluctuating workload (Xing et al. §5.1.2, Table 2).

    Each sample's rate is the square wave integrated over the sample (a phase offset can
    fall inside a sample), with high/low = ``ratio`` and mean 1 before scaling.
    ``phases="spread"`` gives the streams evenly spaced offsets (c·period/C, shuffled over
    the chains: "each input stream with a different offset", §5.1.2), so the total load is
    nearly flat as in the paper's Table 3 (RAND and LLF near ρ = 0); ``"random"`` draws
    them uniformly, which lets the total load itself swing and raises every planner's ρ.

    Examples
    --------
    >>> tr = square_wave_workload(num_nodes=2, units_per_node=5, chain_length=5, seed=1)
    >>> tr.series.shape, round(float(tr.series.sum(axis=0).mean()) / 2, 1)
    ((10, 200), 0.9)
    """
    rng = np.random.default_rng(seed)
    chain, cum, base, c = _chains(num_nodes, units_per_node, chain_length, rng)
    if phases == "spread":
        phase = rng.permutation(np.arange(c) * period / c)
    elif phases == "random":
        phase = rng.uniform(0.0, period, c)
    else:
        raise ValueError(f"phases={phases!r}; expected 'spread' or 'random'")
    high, low = 2.0 * ratio / (1.0 + ratio), 2.0 / (1.0 + ratio)
    # fraction of [t, t+1) spent in the high half of the period, by fine sub-steps
    sub = 20
    t = (np.arange(samples * sub) + 0.5) / sub
    up = (((t[None, :] + phase[:, None]) % period) < period / 2.0).astype(np.float64)
    frac = up.reshape(c, samples, sub).mean(axis=2)
    rate = base[:, None] * (low + (high - low) * frac) * 100.0
    return _finish(rate, chain, cum, num_nodes, load_level, noise, rng, "square-wave")


def _on_off(total: float, mean_on: float, mean_off: float, rng: np.random.Generator,
            t: np.ndarray) -> np.ndarray:
    """Active (1) / idle (0) state at times ``t`` of one stream, random initial state."""
    edges, state, now = [], bool(rng.integers(2)), -rng.exponential(mean_on)
    states = []
    while now < total:
        dur = rng.exponential(mean_on if state else mean_off)
        edges.append(now)
        states.append(state)
        now += dur
        state = not state
    idx = np.searchsorted(np.asarray(edges), t, side="right") - 1
    return np.asarray(states, dtype=np.float64)[np.clip(idx, 0, None)]


def on_off_workload(num_nodes: int = PAPER_NODES, units_per_node: int = PAPER_UNITS_PER_NODE,
                    chain_length: int = PAPER_CHAIN_LENGTH, samples: int = 200,
                    mean_on: float = 5.0, mean_off: float = 5.0, load_level: float = 0.9,
                    seed: int = 0, max_shift: float = PAPER_PERIOD) -> LoadTrace:
    """Bursty On-Off workload (Xing et al. §5.1.2 and §5.2.4).

    Data arrives periodically while a stream is active (no arrival noise), so a sample's
    load is its active fraction × the stream rate.

    Examples
    --------
    >>> tr = on_off_workload(num_nodes=2, units_per_node=5, chain_length=5, seed=1)
    >>> tr.series.shape, bool((tr.series >= 0).all())
    ((10, 200), True)
    """
    rng = np.random.default_rng(seed)
    chain, cum, base, c = _chains(num_nodes, units_per_node, chain_length, rng)
    sub = 20
    t = (np.arange(samples * sub) + 0.5) / sub
    n_ind = max(1, c // 2)
    ind = [int(rng.integers(2 ** 31)) for _ in range(n_ind)]
    states = np.empty((c, t.size))
    for j in range(c):
        if j < n_ind:
            states[j] = _on_off(samples + max_shift, mean_on, mean_off,
                                np.random.default_rng(ind[j]), t)
        else:
            b = int(rng.integers(n_ind))
            if rng.random() < 0.5:     # the opposite of stream b
                states[j] = 1.0 - _on_off(samples + max_shift, mean_on, mean_off,
                                          np.random.default_rng(ind[b]), t)
            else:                      # stream b with its periods starting later
                shift = rng.uniform(0.0, max_shift)
                states[j] = _on_off(samples + max_shift, mean_on, mean_off,
                                    np.random.default_rng(ind[b]), t + shift)
    frac = states.reshape(c, samples, sub).mean(axis=2)
    rate = base[:, None] * 2.0 * frac * 100.0
    return _finish(rate, chain, cum, num_nodes, load_level, False, rng, "on-off")


def connected_assignment(trace: LoadTrace, num_nodes: int) -> np.ndarray:
    """Every chain on one node (the "connected plan" of §1 and §5.2.2).

    Examples
    --------
    >>> connected_assignment(LoadTrace(np.zeros((4, 1)), np.array([0, 0, 1, 1]), ""), 2).tolist()
    [0, 0, 1, 1]
    """
    return (trace.chain % num_nodes).astype(np.int64)


def random_assignment(num_units: int, num_nodes: int, seed: int = 0) -> np.ndarray:
    """A random placement with equal unit counts per node (±1) (§5.1.4).

    Examples
    --------
    >>> np.bincount(random_assignment(10, 5, seed=3)).tolist()
    [2, 2, 2, 2, 2]
    """
    rng = np.random.default_rng(seed)
    return rng.permutation(np.arange(num_units) % num_nodes).astype(np.int64)


def window_metrics(loads: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per sliding window of an (n, T) node-load array: average node std, mean pair ρ and
    std(X)/n (Theorem 1's bound), each of length T − window + 1.

    Examples
    --------
    >>> s, r, b = window_metrics(np.array([[1., 0., 1.], [0., 1., 0.]]), 2)
    >>> s.tolist(), r.tolist(), b.tolist()
    ([0.5, 0.5], [-1.0, -1.0], [0.0, 0.0])
    """
    n = loads.shape[0]
    w = sliding_window_view(loads, window, axis=1)          # (n, W, window)
    c = w - w.mean(axis=2, keepdims=True)
    std = np.sqrt((c * c).mean(axis=2))                     # (n, W)
    flat = std <= ZERO_STD_RTOL * np.abs(w).max(axis=2)
    z = np.where(flat[..., None], 0.0, c / np.where(flat, 1.0, std)[..., None])
    if n >= 2:
        r = np.clip(np.einsum("iwk,jwk->wij", z, z) / window, -1.0, 1.0)
        iu = np.triu_indices(n, 1)
        rho = r[:, iu[0], iu[1]].mean(axis=1)
    else:
        rho = np.zeros(w.shape[1])
    tot = w.sum(axis=0)
    bound = tot.std(axis=1) / n
    return std.mean(axis=0), rho, bound


@dataclass(frozen=True, eq=False)
class SimulationResult:
    """Figures of one replay over its evaluation part (samples from ``warmup`` on).

    ``planned_pair_correlation`` is the mean pairwise node ρ each plan reported on its own
    window (averaged over plans); ``mean_pair_correlation`` is measured on the windows that
    followed, with fresh arrival noise.
    """

    name: str
    node_std_mean: float
    std_bound: float
    mean_pair_correlation: float
    load_moved: float
    moves: int
    delay_proxy: float
    overload_fraction: float
    max_avg_load: float
    plans: int
    plan_seconds: float
    planned_pair_correlation: float
    loads: np.ndarray = field(repr=False)
    moved_per_sample: np.ndarray = field(repr=False)


def _call(planner: Any, window: np.ndarray, a: np.ndarray, n: int
          ) -> tuple[np.ndarray, float, float]:
    t0 = time.perf_counter()
    p = planner.plan(window, assignment=a, num_nodes=n)
    dt = time.perf_counter() - t0
    return np.asarray(p.assignment, dtype=np.int64), dt, p.mean_pair_correlation


def simulate(trace: LoadTrace, num_nodes: int, initial: np.ndarray, *, once: Any = None,
             every: Any = None, warmup: int = DEFAULT_WINDOW, window: int = DEFAULT_WINDOW,
             capacity: float = 1.0, migration_time: float = PAPER_MIGRATION_TIME,
             name: str = "") -> SimulationResult:
    """Replay ``trace`` from ``initial``: ``once`` at ``warmup``, ``every`` each period after.

    Planners are called as ``plan(window_series, assignment=a, num_nodes=n)``.

    Examples
    --------
    >>> from sparkbalance.planning.correlation import GlobalCorrelation
    >>> tr = square_wave_workload(num_nodes=4, units_per_node=4, chain_length=4, samples=60)
    >>> r = simulate(tr, 4, connected_assignment(tr, 4), once=GlobalCorrelation())
    >>> r.plans, r.node_std_mean < simulate(tr, 4, connected_assignment(tr, 4)).node_std_mean
    (1, True)
    """
    s = trace.series
    m, T = s.shape
    if not (window <= warmup < T):
        raise ValueError(f"warmup={warmup}; expected window={window} <= warmup < samples={T}")
    a = np.asarray(initial, dtype=np.int64).copy()
    loads = np.zeros((num_nodes, T))
    backlog = np.zeros(num_nodes)
    queued = np.zeros(T)
    moved_load = np.zeros(T)
    moves = plans = 0
    seconds = 0.0
    planned: list[float] = []
    for t in range(T):
        if t == warmup:
            planner = once if once is not None else every
        else:
            planner = every if t > warmup else None
        if planner is not None:
            win = s[:, t - window:t]
            new, dt, rho_planned = _call(planner, win, a, num_nodes)
            planned.append(rho_planned)
            seconds += dt
            plans += 1
            mv = np.flatnonzero(new != a)
            unit_mean = win.mean(axis=1)
            moved_load[t] = unit_mean[mv].sum()
            moves += mv.size
            # suspended units: their work during the migration lands on the receiver later
            np.add.at(backlog, new[mv], migration_time * s[mv, t])
            a = new
        np.add.at(loads[:, t], a, s[:, t])
        backlog = np.maximum(0.0, backlog + loads[:, t] - capacity)
        queued[t] = backlog.mean()
    ev = loads[:, warmup:]
    std, rho, bound = window_metrics(ev, window)
    means = ev.mean(axis=0)
    return SimulationResult(
        name=name or trace.name, node_std_mean=float(std.mean()), std_bound=float(bound.mean()),
        mean_pair_correlation=float(rho.mean()), load_moved=float(moved_load.sum()),
        moves=moves, delay_proxy=float(queued[warmup:].mean()),
        overload_fraction=float((ev > capacity).mean()),
        max_avg_load=float(np.mean(ev.max(axis=0) / np.where(means > 0, means, 1.0))),
        plans=plans, plan_seconds=seconds,
        planned_pair_correlation=float(np.mean(planned)) if planned else float("nan"),
        loads=loads, moved_per_sample=moved_load)
