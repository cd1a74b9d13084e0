"""Brute-force oracle for interval migration (tests only; exponential).

Enumerates every partitioning of the m tasks into n' (possibly empty) intervals and every
injective assignment of the intervals to nodes (old nodes ``0..n-1``, new nodes beyond), and
keeps the cheapest balanced one. Independent of the DP's lemmas, so it checks them.
"""
from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from .model import (IntervalPlan, balanced, interval_loads, make_problem, min_max_partition,
                    overlap_matrix, plan_from_partition)

__all__ = ["brute_force", "balanced_partitionings"]


def balanced_partitionings(p: Any) -> list[np.ndarray]:
    """All cut-point vectors of ``p.num_nodes`` intervals meeting the balance bound(s)."""
    m, k = p.m, p.num_nodes
    out = []
    for inner in itertools.combinations_with_replacement(range(m + 1), k - 1):
        cuts = np.asarray((0,) + inner + (m,), dtype=np.int64)
        if balanced(interval_loads(p.wc, cuts), p.cap, p.low):
            out.append(cuts)
    return out


def brute_force(weights: Any, sizes: Any, bounds: Any, num_nodes: int, tau: float,
                min_load: float | None = None) -> IntervalPlan:
    """Cheapest balanced plan by exhaustive enumeration (``feasible=False`` if none).

    Examples
    --------
    >>> brute_force([1] * 20, [1] * 20, [0, 13, 20], 3, 0.4).migration_cost
    4.0
    """
    p = make_problem(weights, sizes, bounds, num_nodes, tau, min_load)
    n, k = p.n, p.num_nodes
    nodes = max(n, k)
    perms = np.asarray(list(itertools.permutations(range(nodes), k)), dtype=np.int64)
    best: tuple[float, Any, Any] = (-1.0, None, None)
    rows = np.arange(k)
    for cuts in balanced_partitionings(p):
        ov = np.zeros((k, nodes))
        ov[:, :n] = overlap_matrix(p.sc, p.bounds, cuts).T
        gains = ov[rows[None, :], perms].sum(axis=1)
        i = int(np.argmax(gains))
        if gains[i] > best[0]:
            best = (float(gains[i]), cuts, perms[i])
    if best[1] is None:
        return plan_from_partition(p, min_max_partition(p.wc, k), algorithm="brute_force")
    owners = best[2].copy()
    # nodes >= n in the permutation are new nodes: renumber them n, n+1, ... in order
    fresh = n
    for j in range(k):
        if owners[j] >= n:
            owners[j] = fresh
            fresh += 1
    return plan_from_partition(p, best[1], owners, algorithm="brute_force")
