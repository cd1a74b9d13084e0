"""Per-group cost of a grouped-map function, fitted from measured task times.

A per-group Python function (``applyInPandas``) costs a fixed amount per call (building
the frame, fitting a model for a fixed number of iterations, an I/O round trip) plus an
amount per row; its cost is often *not* proportional to the rows, so record counts (or
the per-partition seconds-per-record of :mod:`sparkbalance.stats.timeweights`, which
spreads a task's time over its keys by rows) misjudge it. From one finished run placed by
a known key-grouping function we know, per partition p, its seconds ``T_p``, its rows
``R_p`` and its groups ``G_p``, and fit the affine model

    T_p = t0 + alpha * R_p + beta * G_p,      t0, alpha, beta >= 0

by non-negative least squares over the partitions (``t0`` is the per-task overhead and
belongs to no key); the cost of group k is then ``c(k) = alpha * rows(k) + beta`` seconds,
the weight a key-grouping planner balances (Fang et al. §2: the load of a task is the sum
of its keys' costs c(k)). Pure (numpy only).

Examples
--------
>>> m = fit_group_cost(seconds=[3.0, 5.0, 4.0], rows=[10, 10, 20], groups=[1, 3, 1])
>>> round(m.beta, 6), round(m.alpha, 6)
(1.0, 0.1)
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Sequence

import numpy as np

from .keystats import KeyStats

__all__ = ["GroupCost", "fit_group_cost", "group_cost_stats"]


@dataclass(frozen=True)
class GroupCost:
    """The fitted model ``T_p = t0 + alpha * R_p + beta * G_p`` (seconds).

    Examples
    --------
    >>> GroupCost(t0=0.0, alpha=0.5, beta=2.0).cost([0, 4]).tolist()
    [2.0, 4.0]
    """

    t0: float
    alpha: float
    beta: float

    def cost(self, rows: Sequence[float] | np.ndarray) -> np.ndarray:
        """c(k) = alpha * rows(k) + beta for every group (seconds)."""
        return self.alpha * np.asarray(rows, dtype=np.float64) + self.beta


def _nnls(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    # Three unknowns: the exact non-negative least-squares optimum is the best feasible
    # unconstrained optimum over the 2^3 sets of free variables (no solver dependency).
    best, best_err = np.zeros(x.shape[1]), float(np.sum(y ** 2))
    for r in range(1, x.shape[1] + 1):
        for free in combinations(range(x.shape[1]), r):
            sol, *_ = np.linalg.lstsq(x[:, free], y, rcond=None)
            if np.any(sol < 0):
                continue
            coef = np.zeros(x.shape[1])
            coef[list(free)] = sol
            err = float(np.sum((x @ coef - y) ** 2))
            if err < best_err - 1e-15:
                best, best_err = coef, err
    return best


def fit_group_cost(seconds: Sequence[float] | np.ndarray, rows: Sequence[float] | np.ndarray,
                   groups: Sequence[float] | np.ndarray) -> GroupCost:
    """Fit ``T_p = t0 + alpha R_p + beta G_p`` (all >= 0) over the measured partitions.

    Partitions with a NaN time (no successful task) are left out.

    Parameters
    ----------
    seconds : T_p, seconds of each partition's task.
    rows : R_p, rows of each partition.
    groups : G_p, groups (distinct keys) of each partition.

    Examples
    --------
    >>> m = fit_group_cost([1.0, 1.0, 2.0], rows=[5, 50, 7], groups=[1, 1, 2])
    >>> round(m.beta, 6), round(m.alpha, 6)
    (1.0, 0.0)
    """
    t = np.asarray(seconds, dtype=np.float64)
    r = np.asarray(rows, dtype=np.float64)
    g = np.asarray(groups, dtype=np.float64)
    if not (t.shape == r.shape == g.shape) or t.ndim != 1:
        raise ValueError(f"seconds {t.shape}, rows {r.shape} and groups {g.shape} must be 1-D "
                         "of equal length (one value per partition)")
    ok = np.isfinite(t)
    if not ok.any():
        raise ValueError("no partition has a measured time; run the keyed stage first")
    t, r, g = t[ok], r[ok], g[ok]
    x = np.column_stack([np.ones_like(t), r, g])
    t0, alpha, beta = _nnls(x, t)
    if alpha == 0.0 and beta == 0.0:  # all time is task overhead: fall back to rows
        alpha = float(t.sum() / r.sum()) if r.sum() > 0 else 0.0
        beta = 0.0 if r.sum() > 0 else float(t.mean())
    return GroupCost(float(t0), float(alpha), float(beta))


def group_cost_stats(stats: KeyStats, seconds: Sequence[float] | np.ndarray,
                     key_partition: Sequence[int] | np.ndarray,
                     measured: KeyStats | None = None) -> tuple[KeyStats, GroupCost]:
    """``stats`` with cost c(k) = alpha rows(k) + beta fitted on a measured run.

    Parameters
    ----------
    stats : counts of the data to place (the keys whose cost is wanted).
    seconds : seconds of each partition's task in the measured run (NaN: none).
    key_partition : partition of each key of ``measured`` in the measured run.
    measured : counts of the data the measured run processed (default ``stats``; a sample
        run measures a sample and prices the whole data).

    Returns
    -------
    (stats with the fitted cost, the fitted :class:`GroupCost`).

    Examples
    --------
    >>> s = KeyStats.from_counts({"a": 10, "b": 10, "c": 20, "d": 10})
    >>> out, m = group_cost_stats(s, [2.0, 4.0, 3.0], [0, 1, 2, 1])
    >>> out.cost.round(6).tolist()
    [2.0, 2.0, 3.0, 2.0]
    """
    src = stats if measured is None else measured
    part = np.asarray(key_partition, dtype=np.int64)
    t = np.asarray(seconds, dtype=np.float64)
    if part.shape != (len(src),):
        raise ValueError(f"key_partition has shape {part.shape}; expected ({len(src)},), "
                         "one partition per measured key")
    if part.size and (part.min() < 0 or part.max() >= t.shape[0]):
        raise ValueError(f"key_partition ids in [{part.min()}, {part.max()}]; expected "
                         f"[0, {t.shape[0] - 1}] (one time per partition)")
    n = t.shape[0]
    rows = np.bincount(part, weights=src.counts, minlength=n)
    groups = np.bincount(part, minlength=n).astype(np.float64)
    model = fit_group_cost(t, rows, groups)
    return stats.with_cost(model.cost(stats.counts)), model
