"""Renaming the nodes of a plan made from scratch so that as little as possible moves.

A global plan (Xing et al. §3.4) fills n empty nodes; which of them is called "node 0" is
arbitrary, and every quality figure (node variances, pairwise ρ) is invariant under a
renaming. The current assignment is not: choosing the renaming that keeps the most load (or
state) where it already is turns a from-scratch plan into a migration plan. This is the
linear assignment problem on the n×n overlap matrix, solved exactly (Hungarian method,
O(n³), inner loops vectorised). Our extension; the paper does not discuss it.
"""
from __future__ import annotations

import numpy as np

__all__ = ["max_weight_matching", "relabel"]


def max_weight_matching(w: np.ndarray) -> np.ndarray:
    """Permutation ``p`` maximising Σ_i w[i, p[i]] for a square matrix ``w``.

    Examples
    --------
    >>> max_weight_matching(np.array([[1., 5.], [4., 1.]])).tolist()
    [1, 0]
    """
    w = np.asarray(w, dtype=np.float64)
    n = w.shape[0]
    if w.shape != (n, n):
        raise ValueError(f"w has shape {w.shape}; expected a square matrix")
    cost = w.max(initial=0.0) - w          # minimise: non-negative costs
    u = np.zeros(n + 1)
    v = np.zeros(n + 1)
    p = np.zeros(n + 1, dtype=np.int64)    # p[j] = row matched to column j (1-based)
    way = np.zeros(n + 1, dtype=np.int64)
    for i in range(1, n + 1):
        p[0] = i
        j0 = 0
        minv = np.full(n + 1, np.inf)
        used = np.zeros(n + 1, dtype=bool)
        while True:
            used[j0] = True
            i0 = p[j0]
            cur = cost[i0 - 1] - u[i0] - v[1:]
            free = ~used[1:]
            better = free & (cur < minv[1:])
            minv[1:][better] = cur[better]
            way[1:][better] = j0
            masked = np.where(free, minv[1:], np.inf)
            j1 = int(np.argmin(masked)) + 1
            d = masked[j1 - 1]
            u[p[used]] += d
            v[used] -= d
            minv[~used] -= d
            j0 = j1
            if p[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
    perm = np.empty(n, dtype=np.int64)
    perm[p[1:] - 1] = np.arange(n)
    return perm


def relabel(new: np.ndarray, old: np.ndarray, weight: np.ndarray, num_nodes: int
            ) -> np.ndarray:
    """The renaming ``perm`` (planned node p becomes ``perm[p]``) that keeps the most
    ``weight`` of the units of ``new`` on their ``old`` node.

    Examples
    --------
    >>> perm = relabel(np.array([1, 1, 0]), np.array([0, 0, 1]), np.ones(3), 2)
    >>> perm[np.array([1, 1, 0])].tolist()
    [0, 0, 1]
    """
    overlap = np.zeros((num_nodes, num_nodes))
    np.add.at(overlap, (new, old), weight)
    return max_weight_matching(overlap)
