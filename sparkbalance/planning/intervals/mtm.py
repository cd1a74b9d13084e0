"""MTM-aware migration and PMC, its projected-cost precomputation (Ding et al. §4.2, Fig. 6).

A migration transition matrix (MTM) ``M[n][n']`` gives the probability that the next
migration goes from ``n`` to ``n'`` nodes (learned from past migrations,
:func:`transition_matrix`). PMC computes, for every balanced partitioning ``P`` with ``n``
intervals, its projected future migration cost by value iteration on the Bellman equation

    C[P] = sum_{n'} M[n][n'] * min_{P' balanced, n' intervals} ( c(P, P') + gamma * C[P'] )

where ``c(P, P')`` is the optimal migration cost (best owners, :func:`pairwise_costs`).
Online, MTM-aware picks ``P'`` minimising ``c(current, P') + gamma * C[P']`` (Definition
4.1); gamma = 0 is SSM.

Deviations from the printed Fig. 6 (documented in the closing notes): line 7 sums over all
``P'`` weighted by a partitioning-level ``M[P, P']`` that the paper never defines; we take
the MDP form above (the controller chooses the best ``P'`` for the drawn node count), which
is what §4.2's text describes. By Lemma 4.2 partitionings are kept canonically (empty
intervals last). When the number of balanced partitionings exceeds ``max_partitionings``
(the paper spent hundreds of minutes on 64 executors), PMC runs on a candidate set: the
caller's layouts (``candidates=``, e.g. those past migrations went through), random
balanced partitionings, the least-max-load layout of each count, and two rounds of SSM's
own plans between node counts. The values are then exact for the MDP restricted to the
candidates, an approximation of Fig. 6; the online choice always also considers SSM's
plan, scored with one exact Bellman backup, so gamma -> 0 still gives SSM.

PMC is embarrassingly parallel over ``P``: pass ``map_fn(func, items) -> list`` and the
rows of the cost matrices are computed through it (the Spark caller passes
``lambda f, xs: sc.parallelize(xs, k).map(f).collect()``, so executors do the work); the value
iteration itself is cheap and runs on the driver. This module never touches Spark.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .model import IntervalPlan, Problem, check_count, check_tau, make_problem, \
    min_max_partition, plan_from_partition
from .partitionings import (DEFAULT_MAX_PARTITIONINGS, TooManyPartitionings,
                            enumerate_partitionings, pairwise_costs, prefix_trie,
                            sample_partitionings)
from .ssm import SSM

__all__ = ["MTMAware", "PMCResult", "pmc", "transition_matrix", "DEFAULT_GAMMA"]

#: Discount factor gamma, the default of Ding et al. §6.
DEFAULT_GAMMA: float = 0.8
#: Candidates sampled per node count when exact enumeration is too large.
DEFAULT_SAMPLES: int = 150
_ROWS_PER_TASK: int = 512        # rows of a cost matrix per Spark task
_MIN_PLUS_CELLS: int = 1 << 15   # entries per block of a Bellman sweep: 256 KB, in cache

Matrix = dict[int, dict[int, float]]


def transition_matrix(node_counts: Sequence[int]) -> Matrix:
    """Learn an MTM from a history of node counts (Ding et al. §6): count the changes
    ``n -> n'`` (``n != n'``) and normalise each row.

    Examples
    --------
    >>> transition_matrix([2, 3, 3, 4, 3, 2])
    {2: {3: 1.0}, 3: {4: 0.5, 2: 0.5}, 4: {3: 1.0}}
    """
    rows: dict[int, dict[int, float]] = {}
    seq = [check_count(c, "node_counts[i]") for c in node_counts]
    for a, b in zip(seq, seq[1:]):
        if a != b:
            rows.setdefault(a, {}).setdefault(b, 0.0)
            rows[a][b] += 1.0
    return {a: {b: c / sum(r.values()) for b, c in r.items()} for a, r in rows.items()}


def _normalise(matrix: Any, node_counts: Sequence[int] | None) -> Matrix:
    if isinstance(matrix, Mapping):
        rows = {check_count(a, "matrix row"): {check_count(b, "matrix column"): float(v)
                                               for b, v in r.items()}
                for a, r in matrix.items()}
    else:
        arr = np.asarray(matrix, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
            raise ValueError(f"matrix has shape {arr.shape}; expected a square matrix")
        if node_counts is None:
            raise ValueError("node_counts is required with an array matrix "
                             "(the node count of each row/column)")
        labels = [check_count(c, "node_counts[i]") for c in node_counts]
        if len(labels) != arr.shape[0]:
            raise ValueError(f"len(node_counts)={len(labels)}; expected {arr.shape[0]}")
        rows = {a: {b: float(arr[i, j]) for j, b in enumerate(labels) if arr[i, j] != 0}
                for i, a in enumerate(labels)}
    out: Matrix = {}
    for a, r in rows.items():
        for b, v in r.items():
            if not math.isfinite(v) or v < 0:
                raise ValueError(f"matrix[{a}][{b}]={v}; expected a probability >= 0")
        tot = sum(r.values())
        if tot > 0:
            out[a] = {b: v / tot for b, v in r.items() if v > 0}
    if not out:
        raise ValueError("matrix has no positive transition probability")
    return out


@dataclass(frozen=True)
class PMCResult:
    """Projected migration costs of the balanced partitionings of each node count."""

    partitionings: dict[int, np.ndarray]   # n -> (K_n, n+1) canonical cut points
    projected: dict[int, np.ndarray]       # n -> C[P] for each row of partitionings[n]
    iterations: int
    converged: bool
    exact: bool                            # all balanced partitionings were enumerated
    seconds: float
    cost_seconds: float                    # time of the pairwise cost matrices
    used_map_fn: bool = False              # the cost rows went through the caller's map_fn
    sizes_prefix: np.ndarray = field(default_factory=lambda: np.zeros(1))

    @property
    def num_partitionings(self) -> int:
        return int(sum(v.shape[0] for v in self.partitionings.values()))


def _canonical(cuts: np.ndarray, k: int, m: int) -> np.ndarray:
    inner = [int(c) for c, d in zip(cuts[1:], np.diff(cuts)) if d > 0]
    return np.asarray([0] + inner + [m] * (k + 1 - 1 - len(inner)), dtype=np.int64)


def _candidates(w: np.ndarray, s: np.ndarray, tau: float, counts: list[int],
                succ: dict[int, list[int]], limit: int, samples: int, seed: int,
                extra: Mapping[int, Any] | None = None) -> tuple[dict[int, np.ndarray], bool]:
    m = w.shape[0]
    probs = {n: make_problem(w, s, [0, m], n, tau) for n in counts}
    out: dict[int, np.ndarray] = {}
    try:
        for n in counts:
            out[n] = enumerate_partitionings(probs[n], limit=limit)
        return out, True
    except TooManyPartitionings:
        pass
    rng = np.random.default_rng(seed)
    sets: dict[int, set[tuple[int, ...]]] = {n: set() for n in counts}
    for n, rows in (extra or {}).items():
        if n not in sets:
            continue
        for row in np.asarray(rows, dtype=np.int64).reshape(-1, n + 1):
            loads = probs[n].wc[row[1:]] - probs[n].wc[row[:-1]]
            if row[0] == 0 and row[-1] == m and np.all(np.diff(row) >= 0) \
                    and np.all(loads <= probs[n].cap):
                sets[n].add(tuple(_canonical(row, n, m).tolist()))
    for n in counts:
        for row in sample_partitionings(probs[n], samples, rng=rng):
            sets[n].add(tuple(row.tolist()))
        mm = min_max_partition(probs[n].wc, n)
        loads = probs[n].wc[mm[1:]] - probs[n].wc[mm[:-1]]
        if np.all(loads <= probs[n].cap):
            sets[n].add(tuple(_canonical(mm, n, m).tolist()))
    # closure of SSM plans between node counts: the partitionings single-step would visit
    frontier = {n: list(sets[n]) for n in counts}
    for _ in range(2):
        nxt: dict[int, list[tuple[int, ...]]] = {n: [] for n in counts}
        for n in counts:
            for cuts in frontier[n][:samples]:
                for n2 in succ.get(n, []):
                    pl = SSM(tau).plan(w, s, np.asarray(cuts), n2)
                    if pl.feasible:
                        t = tuple(_canonical(pl.bounds, n2, m).tolist())
                        if t not in sets[n2]:
                            sets[n2].add(t)
                            nxt[n2].append(t)
        frontier = nxt
    for n in counts:
        out[n] = np.asarray(sorted(sets[n]), dtype=np.int64).reshape(len(sets[n]), n + 1)
    return out, False


@dataclass(frozen=True)
class _CostRows:
    """Rows ``i0:i1`` of the cost matrices from node count ``n`` (one task of ``map_fn``).

    A module-level, picklable callable: ``map_fn`` may ship it to other processes.
    """

    sc_prefix: np.ndarray
    parts: dict[int, np.ndarray]
    succ: dict[int, list[int]]
    tries: dict[int, list] = field(default_factory=dict)

    def __call__(self, task: tuple[int, int, int]
                 ) -> tuple[tuple[int, int, int], dict[int, np.ndarray]]:
        return _cost_rows(task, self.sc_prefix, self.parts, self.succ, self.tries)


def _cost_rows(task: tuple[int, int, int], sc_prefix: np.ndarray,
               parts: dict[int, np.ndarray], succ: dict[int, list[int]],
               tries: Mapping[int, list] | None = None
               ) -> tuple[tuple[int, int, int], dict[int, np.ndarray]]:
    """Rows ``i0:i1`` of the cost matrices from node count ``n`` (``tries``: the
    :func:`.partitionings.prefix_trie` of ``parts[n2]``, built once for all tasks)."""
    n, i0, i1 = task
    olds = parts[n][i0:i1]
    tries = tries or {}
    return task, {n2: pairwise_costs(sc_prefix, olds, parts[n2], trie=tries.get(n2))
                  for n2 in succ.get(n, []) if parts[n2].shape[0]}


def _min_plus(costs: np.ndarray, add: np.ndarray, axis: int) -> np.ndarray:
    """``min(costs + add[None, :], axis=1)`` (``axis=1``) or ``min(costs + add[:, None],
    axis=0)`` (``axis=0``, the transposed matrix), in cache-sized row blocks: the same
    floats (one addition per entry, an exact minimum) without a temporary the size of
    ``costs`` per Bellman sweep."""
    rows = max(1, _MIN_PLUS_CELLS // max(1, costs.shape[1]))
    buf = np.empty((min(rows, costs.shape[0]), costs.shape[1]))
    if axis == 1:
        out = np.empty(costs.shape[0])
        for r0 in range(0, costs.shape[0], rows):
            b = buf[:min(rows, costs.shape[0] - r0)]
            np.add(costs[r0:r0 + rows], add[None, :], out=b)
            b.min(axis=1, out=out[r0:r0 + rows])
        return out
    out = np.full(costs.shape[1], np.inf)
    for r0 in range(0, costs.shape[0], rows):
        b = buf[:min(rows, costs.shape[0] - r0)]
        np.add(costs[r0:r0 + rows], add[r0:r0 + rows, None], out=b)
        np.minimum(out, b.min(axis=0), out=out)
    return out


def pmc(weights: Any, sizes: Any, matrix: Any, gamma: float = DEFAULT_GAMMA,
        tau: float = 0.2, *, node_counts: Sequence[int] | None = None,
        max_partitionings: int = DEFAULT_MAX_PARTITIONINGS, samples: int = DEFAULT_SAMPLES,
        seed: int = 0, tol: float = 1e-9, max_iter: int = 1000,
        map_fn: Callable[[Callable[[Any], Any], list], list] | None = None,
        candidates: Mapping[int, Any] | None = None) -> PMCResult:
    """PMC (Ding et al. Fig. 6): projected migration cost of every balanced partitioning.

    ``map_fn(func, items) -> [func(x) for x in items]``, optional: how the rows of the cost
    matrices are computed (in any order); e.g.
    ``lambda f, xs: sc.parallelize(xs, k).map(f).collect()`` to use Spark executors. Default:
    a plain loop on this process.
    ``candidates``: extra partitionings ``{n: rows of n+1 cut points}`` for the candidate
    set used when exact enumeration exceeds ``max_partitionings`` (e.g. the layouts past
    migrations went through); unbalanced rows are ignored.

    Examples
    --------
    >>> r = pmc([1] * 6, [1] * 6, {2: {3: 1.0}, 3: {2: 1.0}}, gamma=0.5, tau=0.0)
    >>> r.partitionings[2].tolist(), r.partitionings[3].tolist()
    ([[0, 3, 6]], [[0, 2, 4, 6]])
    >>> [round(float(c), 6) for c in r.projected[2]]     # 2 + 0.5 * (2 + 0.5 * (...))
    [4.0]
    """
    t0 = time.perf_counter()
    mtm = _normalise(matrix, node_counts)
    g = float(gamma)
    if not (0.0 <= g <= 1.0):
        raise ValueError(f"gamma={gamma!r}; expected a discount factor in [0, 1]")
    t = check_tau(tau)
    base = make_problem(weights, sizes, [0, len(np.asarray(weights))], 1, t)
    w, s = base.weights, base.sizes
    counts = sorted(set(mtm) | {b for r in mtm.values() for b in r})
    succ = {a: sorted(r) for a, r in mtm.items()}
    parts, exact = _candidates(w, s, t, counts, succ, check_count(max_partitionings,
                               "max_partitionings"), check_count(samples, "samples"), seed,
                               candidates)
    # c(P, P') == c(P', P) exactly (the matching DP transposed), so of n -> n2 and
    # n2 -> n only the first is computed; the other is its transpose.
    direct = {n: [n2 for n2 in r if not (n2 < n and n in succ.get(n2, []))]
              for n, r in succ.items()}
    tasks = [(n, i0, min(i0 + _ROWS_PER_TASK, len(parts[n]))) for n in counts
             if direct.get(n) for i0 in range(0, len(parts[n]), _ROWS_PER_TASK)]
    t1 = time.perf_counter()
    tries = {n2: prefix_trie(parts[n2]) for r in direct.values() for n2 in r if len(parts[n2])}
    if map_fn is not None:
        rows = list(map_fn(_CostRows(base.sc, parts, direct, tries), tasks))
        if len(rows) != len(tasks):
            raise ValueError(f"map_fn returned {len(rows)} results for {len(tasks)} items; "
                             "expected one per item")
    else:
        rows = [_cost_rows(task, base.sc, parts, direct, tries) for task in tasks]
    costs: dict[tuple[int, int], np.ndarray] = {}
    for (n, i0, i1), blocks in sorted(rows, key=lambda r: r[0]):
        for n2, blk in blocks.items():
            costs.setdefault((n, n2), np.empty((parts[n].shape[0], parts[n2].shape[0])))
            costs[(n, n2)][i0:i1] = blk
    cost_seconds = time.perf_counter() - t1
    values = {n: np.zeros(parts[n].shape[0]) for n in counts}
    converged, it = False, 0
    for it in range(1, max_iter + 1):
        new = {}
        for n in counts:
            acc = np.zeros(parts[n].shape[0])
            for n2, prob in mtm.get(n, {}).items():
                if not parts[n2].shape[0]:
                    continue
                if (n, n2) in costs:
                    acc += prob * _min_plus(costs[(n, n2)], g * values[n2], axis=1)
                elif (n2, n) in costs:
                    acc += prob * _min_plus(costs[(n2, n)], g * values[n2], axis=0)
            new[n] = acc
        delta = max((float(np.max(np.abs(new[n] - values[n]), initial=0.0)) for n in counts),
                    default=0.0)
        scale = max((float(np.max(np.abs(v), initial=0.0)) for v in new.values()), default=0.0)
        values = new
        if delta <= tol * max(1.0, scale):
            converged = True
            break
    return PMCResult(parts, values, it, converged, exact, time.perf_counter() - t0,
                     cost_seconds, map_fn is not None, base.sc)


class MTMAware:
    """MTM-aware migration (Ding et al. §4.2): single-step cost + gamma * projected cost.

    Parameters
    ----------
    matrix : MTM as ``{n: {n': probability}}`` or a square array with ``node_counts``.
    gamma : discount factor in [0, 1] (0 = SSM; default 0.8 as in Ding et al. §6).
    tau : balance parameter.
    max_partitionings, samples, seed : exact enumeration limit; candidate-set size otherwise.

    Examples
    --------
    >>> mtm = MTMAware({2: {3: 1.0}, 3: {4: 1.0}, 4: {2: 1.0}}, gamma=0.8, tau=0.4)
    >>> plan = mtm.plan([1] * 20, [1] * 20, [0, 13, 20], 3)
    >>> plan.feasible, plan.migration_cost >= 4
    (True, True)
    """

    name = "MTM-aware"

    def __init__(self, matrix: Any, gamma: float = DEFAULT_GAMMA, tau: float = 0.2, *,
                 node_counts: Sequence[int] | None = None,
                 max_partitionings: int = DEFAULT_MAX_PARTITIONINGS,
                 samples: int = DEFAULT_SAMPLES, seed: int = 0, max_iter: int = 1000) -> None:
        self.matrix = _normalise(matrix, node_counts)
        g = float(gamma)
        if not (0.0 <= g <= 1.0):
            raise ValueError(f"gamma={gamma!r}; expected a discount factor in [0, 1]")
        self.gamma = g
        self.tau = check_tau(tau)
        self.max_partitionings = check_count(max_partitionings, "max_partitionings")
        self.samples = check_count(samples, "samples")
        self.seed = int(seed)
        self.max_iter = check_count(max_iter, "max_iter")
        self.pmc_: PMCResult | None = None
        self._fitted_on: tuple[np.ndarray, np.ndarray] | None = None

    def precompute(self, weights: Any, sizes: Any,
                   map_fn: Callable[[Callable[[Any], Any], list], list] | None = None,
                   candidates: Mapping[int, Any] | None = None) -> PMCResult:
        """Run PMC for these task weights and sizes (``map_fn``: see :func:`pmc`)."""
        self.pmc_ = pmc(weights, sizes, self.matrix, self.gamma, self.tau,
                        max_partitionings=self.max_partitionings, samples=self.samples,
                        seed=self.seed, max_iter=self.max_iter, map_fn=map_fn,
                        candidates=candidates)
        self._fitted_on = (np.asarray(weights, dtype=np.float64).copy(),
                           np.asarray(sizes, dtype=np.float64).copy())
        return self.pmc_

    def _backup(self, p: Problem, cuts: np.ndarray, n2: int) -> float:
        """One exact Bellman backup of the projected cost of ``cuts`` (n2 intervals)."""
        r = self.pmc_
        assert r is not None
        v = 0.0
        for n3, prob in self.matrix.get(n2, {}).items():
            parts = r.partitionings.get(n3)
            if parts is not None and parts.shape[0]:
                c = pairwise_costs(p.sc, cuts[None, :], parts)[0]
                v += prob * float(np.min(c + self.gamma * r.projected[n3]))
        return v

    def plan(self, weights: Any, sizes: Any, bounds: Any, num_nodes: int) -> IntervalPlan:
        """Plan the migration to ``num_nodes`` minimising cost + gamma * projected cost."""
        t0 = time.perf_counter()
        p = make_problem(weights, sizes, bounds, num_nodes, self.tau)
        single = SSM(self.tau).plan_problem(p)
        if self.gamma == 0:     # SSM's plan whatever PMC says: skip PMC
            return replace(single, algorithm=self.name, seconds=time.perf_counter() - t0)
        fitted = self._fitted_on
        if (self.pmc_ is None or fitted is None or not np.array_equal(fitted[0], p.weights)
                or not np.array_equal(fitted[1], p.sizes)):
            self.precompute(p.weights, p.sizes)
        r = self.pmc_
        assert r is not None
        parts = r.partitionings.get(p.num_nodes)
        if not single.feasible or parts is None or not parts.shape[0]:
            return replace(single, algorithm=self.name, seconds=time.perf_counter() - t0)
        vals = pairwise_costs(p.sc, p.bounds[None, :], parts)[0] + self.gamma * \
            r.projected[p.num_nodes]
        i = int(np.argmin(vals))
        ssm_val = single.migration_cost + self.gamma * self._backup(
            p, _canonical(single.bounds, p.num_nodes, p.m), p.num_nodes)
        if vals[i] < ssm_val - 1e-9 * max(1.0, abs(ssm_val)):
            return plan_from_partition(p, parts[i], algorithm=self.name,
                                       seconds=time.perf_counter() - t0)
        return replace(single, algorithm=self.name, seconds=time.perf_counter() - t0)
