"""Simple_SSM: the exhaustive dynamic programme of Ding et al. §3.2 (Fig. 2, Lemma 3.1).

Kept as a reference oracle for :class:`~.ssm.SSM`: it enumerates every sub-problem
``P = <[alpha, beta), [gamma, delta), n_p>`` (tasks, old nodes, interval count) and every
split ``x, y, n_l`` into ``P_1 = <[alpha, x), [gamma, y), n_l>`` and
``P_2 = <[x, beta), [y, delta), n_p - n_l>``. Lemma 3.1 as printed writes ``[gamma, gamma+1]``
for the nodes of P_1; its proof needs ``[gamma, y]``, which is what is enumerated here.
Base case n_p = 1: all of ``[alpha, beta)`` goes to the best node of ``[gamma, delta)`` (or
to none, gain 0), or ``-inf`` when its work breaks the balance bound. Empty ranges are
allowed (empty intervals, Lemma 3.4) unless ``min_load`` is set. O(m^3 n^3 n'^2) time:
use it for m <= 10 or so.
"""
from __future__ import annotations

import sys
import time
from functools import lru_cache
from typing import Any

from .model import (IntervalPlan, Problem, check_min_load, check_tau, fill_owners,
                    make_problem, min_max_partition, plan_from_partition)

__all__ = ["SimpleSSM"]

_NEG = float("-inf")


def _simple(p: Problem) -> tuple[float, list[tuple[int, int, int]]]:
    m, n = p.m, p.n
    wc = p.wc.tolist()
    sc = p.sc.tolist()
    b = p.bounds.tolist()
    cap, low = p.cap, p.low

    def base(a: int, bb: int, c: int, d: int) -> tuple[float, int]:
        load = wc[bb] - wc[a]
        if load > cap or (low > 0 and load < low):
            return _NEG, -1
        best, who = 0.0, -1
        for y in range(c, d):
            lo, hi = max(a, b[y]), min(bb, b[y + 1])
            if hi > lo and sc[hi] - sc[lo] > best:
                best, who = sc[hi] - sc[lo], y
        return best, who

    @lru_cache(maxsize=None)
    def solve(a: int, bb: int, c: int, d: int, k: int) -> tuple[float, Any]:
        if k == 1:
            g, who = base(a, bb, c, d)
            return g, ("leaf", who)
        best: tuple[float, Any] = (_NEG, None)
        for x in range(a, bb + 1):
            for y in range(c, d + 1):
                for nl in range(1, k):
                    g1 = solve(a, x, c, y, nl)[0]
                    if g1 == _NEG:
                        continue
                    g2 = solve(x, bb, y, d, k - nl)[0]
                    if g2 != _NEG and g1 + g2 > best[0]:
                        best = (g1 + g2, (x, y, nl))
        return best

    def walk(a: int, bb: int, c: int, d: int, k: int, out: list) -> None:
        g, how = solve(a, bb, c, d, k)
        if how[0] == "leaf":
            out.append((a, bb, how[1]))
            return
        x, y, nl = how
        walk(a, x, c, y, nl, out)
        walk(x, bb, y, d, k - nl, out)

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 10000))
    try:
        g, _ = solve(0, m, 0, n, p.num_nodes)
        out: list[tuple[int, int, int]] = []
        if g != _NEG:
            walk(0, m, 0, n, p.num_nodes, out)
    finally:
        sys.setrecursionlimit(old)
    return g, out


class SimpleSSM:
    """Exhaustive DP of Ding et al. Fig. 2 — exact, slow; the test oracle for :class:`SSM`.

    Examples
    --------
    >>> SimpleSSM(tau=0.4).plan([1] * 8, [1] * 8, [0, 5, 8], 3).migration_cost
    2.0
    """

    name = "Simple_SSM"

    def __init__(self, tau: float = 0.2, *, min_load: float | None = None) -> None:
        self.tau = check_tau(tau)
        self.min_load = check_min_load(min_load) if min_load is not None else None

    def plan(self, weights: Any, sizes: Any, bounds: Any, num_nodes: int) -> IntervalPlan:
        t0 = time.perf_counter()
        p = make_problem(weights, sizes, bounds, num_nodes, self.tau, self.min_load)
        g, intervals = _simple(p)
        if g == _NEG:
            return plan_from_partition(p, min_max_partition(p.wc, p.num_nodes),
                                       algorithm=self.name, seconds=time.perf_counter() - t0)
        import numpy as np
        cuts = np.asarray([0] + [ub for _, ub, _ in intervals], dtype=np.int64)
        owners = fill_owners(np.asarray([y for _, _, y in intervals], dtype=np.int64), p.n)
        return plan_from_partition(p, cuts, owners, algorithm=self.name,
                                   seconds=time.perf_counter() - t0)
