"""SSM: optimal single-step migration over task intervals (Ding et al. §3.3, Fig. 4).

The dynamic programme follows the paper's lemmas, in a state form that vectorises:

* Lemma 3.2 (beta = m, delta = n): only suffix sub-problems ``[x, m)`` are materialised.
* Lemma 3.3 (two gamma per alpha): the nodes still usable by the suffix ``[x, m)`` are all
  nodes from ``node(x)`` on, except that ``node(x)`` itself may already own the previous
  interval when its old interval straddles ``x``. One bit ``u`` (1 = ``node(x)`` free)
  replaces gamma, so a sub-problem is ``(k, x, u)``: at most ``k`` intervals cover ``[x, m)``.
* Lemma 3.5 (two y per x): the next interval ``[x, x')`` is either matched with
  ``node(x'-1)`` (the only candidate that can straddle ``x'`` and block the next
  sub-problem), or with the best *other* node (they all end before ``x'``), or with none.
* Lemma 3.4 (empty intervals, n_l = n_min): "at most k intervals" — unused intervals are
  empty, so the interval count never needs to be enumerated.

Every ``(k, x, u)`` scans its feasible ends ``x'`` (a band ``x < x' <= R(x)``, where ``R(x)``
is the last end within the balance bound) with O(1) work each: the overlap with
``node(x'-1)`` from prefix sums, the best other node from a per-node running maximum. Time
O(n' m D) <= O(m^2 n') with D = max(R(x) - x) <= m; space O(m (n' + D) + n m). The loop over
``k`` is Python, everything inside is numpy over the (x, x') band.

``positional=True`` solves the variant where interval ``j`` must stay with node ``j`` (the
layout :class:`~sparkbalance.routing.keygroups.KeyGroupPartitioner` routes by: partition ``i``
owns ``bounds[i]:bounds[i+1]``); same band DP, one interval per step.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import replace as dc_replace
from typing import Any

import numpy as np

from .banded import band_width, banded_positional
from .model import (IntervalPlan, Problem, check_tau, check_min_load, fill_owners,
                    make_problem, min_max_partition, plan_from_partition)

__all__ = ["SSM", "ssm_gain", "exact_cells", "EXACT_CELL_LIMIT", "PlannerScaleWarning"]

#: Largest exact programme (``n' * m * D`` band cells) run; beyond it the banded plan of
#: :mod:`.banded` (about 3 x 10^7 cells: ~1 s and ~1 GB at most on the exact path).
EXACT_CELL_LIMIT: int = 30_000_000
#: Banded cells (``n' * S^2``) beyond which a plan takes more than a few seconds: warned.
BANDED_CELL_LIMIT: int = 400_000_000


class PlannerScaleWarning(UserWarning):
    """A planning request beyond what runs within a few seconds."""


def exact_cells(p: Problem) -> int:
    """Work of the exact programme: ``n' * (m + 1) * D`` (``D`` the widest feasible
    interval in groups), the number of (k, x, x') cells SSM evaluates.

    Examples
    --------
    >>> p = make_problem([1] * 20, [1] * 20, [0, 13, 20], 3, 0.4, None)
    >>> exact_cells(p)
    630
    """
    x = np.arange(p.m)
    r = np.searchsorted(p.wc, p.wc[:-1] + p.cap, side="right") - 1
    d = int((r - x).max(initial=0)) + 1
    return int(p.num_nodes) * (p.m + 1) * d

_NEG = -np.inf

#: Largest n x m running-maximum table built at once (16 M floats = 128 MB); beyond it the
#: best-other-node values are computed row by row.
_ACC_LIMIT: int = 1 << 24


class _Band:
    """Per-(x, x') quantities of Fig. 4 for every x and every feasible end x' = x + d."""

    def __init__(self, p: Problem, allow_empty: bool) -> None:
        m, n = p.m, p.n
        b = p.bounds
        wc, sc = p.wc, p.sc
        self.m = m
        t = np.arange(m, dtype=np.int64)
        # node(t): the non-empty old interval containing task t; node(m) = n (sentinel).
        node = np.searchsorted(b, t, side="right") - 1
        self.node = node
        self.node_ext = np.concatenate([node, [n]])
        start, end = b[:-1], b[1:]
        self.start, self.end = start, end
        x = np.arange(m, dtype=np.int64)
        # R(x): last end x' with load [x, x') within the cap; lo(x): first end meeting min_load.
        r = np.searchsorted(wc, wc[:-1] + p.cap, side="right") - 1
        if p.low > 0:
            lo = np.maximum(np.searchsorted(wc, wc[:-1] + p.low, side="left"), x + 1)
        else:
            lo = x + (0 if allow_empty else 1)
        d0 = 0 if (allow_empty and p.low <= 0) else 1
        dmax = int(max(int((r - x).max(initial=0)), d0))
        d = np.arange(d0, dmax + 1, dtype=np.int64)
        self.d0, self.width = d0, d.shape[0]
        xp = x[:, None] + d[None, :]
        valid = (xp <= r[:, None]) & (xp >= lo[:, None])
        xpc = np.minimum(xp, m)
        self.xp = xpc
        self.neg = np.where(valid, 0.0, _NEG)
        self.valid = valid
        nx = node[:, None]
        last = node[np.maximum(xpc - 1, 0)]         # node(x'-1)
        nonempty = xpc > x[:, None]
        # candidate 1: node(x'-1), overlap [max(x, start), x')
        self.ov1 = np.where(nonempty, sc[xpc] - sc[np.maximum(x[:, None], start[last])], _NEG)
        self.blk1 = end[last] > xpc                  # it straddles x' -> next u = 0
        self.y1nx = (last == nx) | ~nonempty        # it is node(x): unusable when u = 0
        self.samen = self.node_ext[xpc] == nx        # no match: u carries over
        # candidate 2: best other node. Nodes after node(x) ending by x'-1 contribute their
        # full size at their last task; node(x) contributes [x, end(node(x))).
        full = np.full(m, _NEG)
        is_last = end[node] == t + 1
        full[is_last] = (sc[end] - sc[start])[node[is_last]]
        if n * m <= _ACC_LIMIT:
            acc = np.where(t[None, :] >= end[:, None], full[None, :], _NEG)
            acc = np.maximum.accumulate(acc, axis=1)   # acc[y, t] = max full[end(y)..t]
            tt = xpc - 2
            bo0 = np.where(tt >= 0, acc[nx, np.maximum(tt, 0)], _NEG)
        else:  # very many old nodes: per-row running max (same values, less memory)
            bo0 = np.full(xpc.shape, _NEG)
            for i in range(m):
                e = int(end[node[i]])
                hi = int(xpc[i, -1]) - 1
                if hi > e:
                    run = np.maximum.accumulate(full[e:hi])
                    tt = xpc[i] - 2 - e
                    ok = tt >= 0
                    bo0[i, ok] = run[np.minimum(tt[ok], run.shape[0] - 1)]
        self.bo0 = bo0
        part = sc[end[node]] - sc[x]
        self.bo1 = np.where(self.y1nx, _NEG, np.maximum(bo0, part[:, None]))


def _solve(p: Problem) -> tuple[float, list[tuple[int, int, int]]]:
    """Max gain and the intervals ``(lb, ub, node or -1)`` of an optimal plan (or -inf, [])."""
    m, k_max = p.m, p.num_nodes
    exact = p.low > 0            # with a lower bound every interval must be non-empty
    band = _Band(p, allow_empty=False)
    width = band.width
    g = np.full((k_max + 1, m + 1, 2), _NEG)
    if exact:
        g[0, m, :] = 0.0
    else:
        g[:, m, :] = 0.0
    arg = np.zeros((k_max + 1, m, 2), dtype=np.int32)
    xp, neg = band.xp, band.neg
    for k in range(1, k_max + 1):
        g1 = g[k - 1, :, 1][xp] + neg
        g0 = g[k - 1, :, 0][xp] + neg
        ny = np.where(band.blk1, g0, g1)
        c1 = band.ov1 + ny
        cand = np.empty((2, m, 3 * width))
        cand[1, :, :width] = c1
        cand[0, :, :width] = np.where(band.y1nx, _NEG, c1)
        cand[1, :, width:2 * width] = band.bo1 + g1
        cand[0, :, width:2 * width] = band.bo0 + g1
        cand[1, :, 2 * width:] = g1
        cand[0, :, 2 * width:] = np.where(band.samen, g0, g1)
        arg[k] = np.argmax(cand, axis=2).T
        g[k, :m, :] = cand.max(axis=2).T
        if not exact and np.array_equal(g[k], g[k - 1]):
            # "at most k" saturates: g[k+1] = F(g[k]) = F(g[k-1]) = g[k], same choices
            g[k + 1:] = g[k]
            arg[k + 1:] = arg[k]
            break
    best = float(g[k_max, 0, 1])
    if best == _NEG:
        return best, []
    # Post-processing (Fig. 4 line 21): walk the stored choices.
    out: list[tuple[int, int, int]] = []
    x, u, k = 0, 1, k_max
    node, node_ext, start, end = band.node, band.node_ext, band.start, band.end
    while x < m:
        a = int(arg[k, x, u])
        c, d = divmod(a, width)
        x2 = x + d + band.d0
        if c == 0:
            y = int(node[x2 - 1])
            out.append((x, x2, y))
            u = 0 if end[y] > x2 else 1
        elif c == 1:
            y0 = int(node[x]) + (0 if u else 1)
            y1 = int(node[x2 - 1])
            best_y, best_ov = -1, _NEG
            for y in range(y0, y1):
                lo, hi = max(x, int(start[y])), min(x2, int(end[y]))
                if hi > lo and p.sc[hi] - p.sc[lo] > best_ov:
                    best_y, best_ov = y, p.sc[hi] - p.sc[lo]
            out.append((x, x2, best_y))
            u = 1
        else:
            out.append((x, x2, -1))
            u = u if node_ext[x2] == node[x] else 1
        x, k = x2, k - 1
    return best, out


def _solve_positional(p: Problem) -> tuple[float, np.ndarray]:
    """Max gain when interval j stays with node j; returns (gain, cut points)."""
    m, n, k_max = p.m, p.n, p.num_nodes
    band = _Band(p, allow_empty=p.low <= 0)
    xp, neg = band.xp, band.neg
    x = np.arange(m + 1, dtype=np.int64)
    # rows for x = m as well (only the empty interval [m, m) is possible there)
    f = np.full(m + 1, _NEG)
    f[m] = 0.0
    args = np.zeros((k_max, m + 1), dtype=np.int64)
    xp_full = np.vstack([xp, np.full((1, xp.shape[1]), m)])
    neg_full = np.vstack([neg, np.where(np.arange(band.d0, band.d0 + xp.shape[1]) == 0,
                                        0.0 if p.low <= 0 else _NEG, _NEG)[None, :]])
    for j in range(k_max - 1, -1, -1):
        if j < n:
            s0, e0 = int(p.bounds[j]), int(p.bounds[j + 1])
            lo = np.maximum(x[:, None], s0)
            hi = np.minimum(xp_full, e0)
            ov = np.where(hi > lo, p.sc[np.maximum(hi, lo)] - p.sc[lo], 0.0)
        else:
            ov = 0.0
        cand = ov + f[xp_full] + neg_full
        a = np.argmax(cand, axis=1)
        args[j] = a
        f = cand[np.arange(m + 1), a]
    best = float(f[0])
    cuts = [0]
    xx = 0
    for j in range(k_max):
        xx = int(xp_full[xx, args[j, xx]])
        cuts.append(xx)
    return best, np.asarray(cuts, dtype=np.int64)


def _relaxed(p: Problem, cuts: np.ndarray | None = None, slack: float = 0.0) -> Problem:
    """The instance with the least feasible bound ``L*`` (the minimum over partitionings of
    the maximum load) times ``1 + slack``, and no lower bound. Planning on it gives, when
    tau cannot be met, the cheapest migration among the plans whose maximum load is within
    ``(1 + slack) L*`` (``cuts``: the least-max-load layout when the caller has it).

    With ``slack = 0`` every cut is pinned near the least-max-load layout, which after a
    small drift can move nearly all state (99.7 % at n' = 10,000 in
    ``integration/benchmarks/bench_scale.py``); a few per cent of slack lets most cuts stay.
    """
    cuts = min_max_partition(p.wc, p.num_nodes) if cuts is None else cuts
    bound = float(np.max(p.wc[cuts[1:]] - p.wc[cuts[:-1]])) * (1.0 + slack)
    return dc_replace(p, cap=max(p.cap, bound * (1 + 1e-9) + 1e-12), low=0.0)


def ssm_gain(p: Problem) -> float:
    """Optimal gain of a validated problem (``-inf`` when no balanced plan exists)."""
    return _solve(p)[0]


class SSM:
    """Optimal single-step migration (Ding et al. Fig. 4), O(m^2 n') time.

    Parameters
    ----------
    tau : balance parameter (Definition 3.1): every new interval's work must be at most
        ``(1 + tau) * W / n'``. ``tau >= 0``.
    min_load : optional lower bound as a fraction of the mean ``W / n'`` (two-sided balance,
        every node gets work; an extension of ours). ``None`` = the paper's one-sided bound,
        empty intervals allowed.
    positional : when True, interval ``j`` stays with node ``j`` (for layouts where a
        partition's identity is its position, as in ``KeyGroupPartitioner``).
    fallback_slack : when no plan meets tau, the plan moves the least state among those
        whose maximum load is at most ``(1 + fallback_slack)`` times the least achievable
        maximum load ``L*``. ``0`` (the default) keeps the strict least-max-load fallback;
        the "keygroups" strategy uses a few per cent, since ``L* (1 + 0)`` can force nearly
        every cut to move after a small drift. ``>= 0``.

    Examples
    --------
    >>> plan = SSM(tau=0.4).plan([1] * 20, [1] * 20, [0, 13, 20], 3)   # Table 3, Ding et al.
    >>> plan.migration_cost, plan.feasible
    (4.0, True)
    """

    name = "SSM"

    def __init__(self, tau: float = 0.2, *, min_load: float | None = None,
                 positional: bool = False, fallback_slack: float = 0.0) -> None:
        self.tau = check_tau(tau)
        self.min_load = check_min_load(min_load) if min_load is not None else None
        self.positional = bool(positional)
        try:
            slack = float(fallback_slack)
        except (TypeError, ValueError):
            raise TypeError(f"fallback_slack={fallback_slack!r}; expected a real number "
                            ">= 0") from None
        if not np.isfinite(slack) or slack < 0:
            raise ValueError(f"fallback_slack={fallback_slack!r}; expected a finite "
                             "number >= 0")
        self.fallback_slack = slack

    def __repr__(self) -> str:
        return (f"SSM(tau={self.tau}, min_load={self.min_load}, positional={self.positional}, "
                f"fallback_slack={self.fallback_slack})")

    def problem(self, weights: Any, sizes: Any, bounds: Any, num_nodes: int) -> Problem:
        return make_problem(weights, sizes, bounds, num_nodes, self.tau, self.min_load)

    def plan(self, weights: Any, sizes: Any, bounds: Any, num_nodes: int) -> IntervalPlan:
        """Plan the migration of ``bounds`` (n+1 cut points) to ``num_nodes`` intervals.

        Returns the optimal :class:`IntervalPlan`; when no plan meets the balance bound,
        the cheapest plan among those of least maximum load, with ``feasible=False``.
        """
        t0 = time.perf_counter()
        p = self.problem(weights, sizes, bounds, num_nodes)
        return self.plan_problem(p, t0)

    def plan_problem(self, p: Problem, t0: float | None = None) -> IntervalPlan:
        t0 = time.perf_counter() if t0 is None else t0
        name = self.name + ("/positional" if self.positional else "")
        # The non-positional programme keeps 2 x 3 D choices per cell: its limit is lower.
        cells = exact_cells(p) * (1 if self.positional else 6)
        if cells > EXACT_CELL_LIMIT:
            return self._plan_banded(p, t0, cells)
        if self.positional:
            gain, cuts = _solve_positional(p)
            if gain == _NEG:
                gain, cuts = _solve_positional(_relaxed(p, slack=self.fallback_slack))
            if gain == _NEG:  # pragma: no cover - the relaxed bound is always feasible
                cuts = min_max_partition(p.wc, p.num_nodes)
            owners = np.arange(p.num_nodes, dtype=np.int64)
            return plan_from_partition(p, cuts, owners, algorithm=name,
                                       seconds=time.perf_counter() - t0)
        gain, intervals = _solve(p)
        if gain == _NEG:
            gain, intervals = _solve(_relaxed(p, slack=self.fallback_slack))
        if gain == _NEG:  # pragma: no cover - the relaxed bound is always feasible
            cuts = min_max_partition(p.wc, p.num_nodes)
            return plan_from_partition(p, cuts, algorithm=name,
                                       seconds=time.perf_counter() - t0)
        cuts = [0] + [ub for _, ub, _ in intervals]
        owners = [y for _, _, y in intervals]
        pad = p.num_nodes - len(intervals)       # unused intervals: empty, at the end
        cuts += [p.m] * pad
        owners += [-1] * pad
        own = fill_owners(np.asarray(owners, dtype=np.int64), p.n)
        return plan_from_partition(p, np.asarray(cuts, dtype=np.int64), own,
                                   algorithm=name, seconds=time.perf_counter() - t0)

    def _plan_banded(self, p: Problem, t0: float, cells: int) -> IntervalPlan:
        """The banded positional plan (:mod:`.banded`) when the exact one is too large.

        Interval ``j`` stays with node ``j`` also for the non-positional SSM: renumbering
        could only add gain, so the plan is valid, possibly costlier than the exact one.
        """
        width = band_width(p.num_nodes)
        s = 6 * width + 3
        if p.num_nodes * s * s > BANDED_CELL_LIMIT:
            warnings.warn(f"SSM with n'={p.num_nodes} partitions and m={p.m} groups "
                          f"({cells:.2e} exact cells) is beyond what plans within seconds "
                          "even banded; expect a slow plan", PlannerScaleWarning, stacklevel=3)
        q = min_max_partition(p.wc, p.num_nodes)   # shared: relaxed bound and band
        relaxed = _relaxed(p, q, self.fallback_slack)
        # infeasible bound (L* > cap): plan on the relaxed one at once (one banded pass)
        feasible = _relaxed(p, q).cap <= p.cap
        gain, cuts = banded_positional(p if feasible else relaxed, width, balanced_cuts=q)
        if gain == _NEG:
            gain, cuts = banded_positional(relaxed, width, balanced_cuts=q)
        if gain == _NEG:  # pragma: no cover - the balanced path lies in the band
            cuts = min_max_partition(p.wc, p.num_nodes)
        owners = np.arange(p.num_nodes, dtype=np.int64)
        return plan_from_partition(p, cuts, owners, algorithm=self.name + "/banded",
                                   seconds=time.perf_counter() - t0)
