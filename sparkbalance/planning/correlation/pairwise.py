"""Pairwise correlation-based load distribution (Xing et al. §3.3): COR-BAL, COR-RE,
COR-SE and their improved (-IMP) variants.

Every period the nodes are sorted by mean load and the i-th is paired with the
(n−i+1)-th; a pair acts only when its mean loads differ by more than ε (§3.3). Then:

* ``mode="one-way"`` (COR-BAL, §3.3.1): :func:`~.layout.one_way`.
* ``mode="redistribute"`` (COR-RE, §3.3.2): both nodes are emptied of their movable units,
  the less loaded node repeatedly takes the unplaced unit with the highest pairwise score,
  then one-way.
* ``mode="exchange"`` (COR-SE, §3.3.3): one-way; then up to |units of the pair| times the
  currently more loaded node gives its best-scoring unit if that score exceeds δ; then
  one-way again.
* ``improved=True`` (-IMP, §3.3.4), two-way modes only: after the balancing round, every
  node whose divergent load level E X + √var X exceeds the capacity (in decreasing level,
  re-checked when its turn comes because earlier steps change the nodes) finds its least
  correlated node; if that ρ < θ the pair is redistributed or exchanged tentatively and the
  result kept only if the pair's ρ rises.

Readings: scores are recomputed after every move (the paper's O(m²k) count); a unit with
an all-zero series is never moved (it changes nothing but costs state); ``moved_units`` of
the result is net (a unit that leaves and comes back within one plan did not move).
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from .layout import Layout, greedy_fill, one_way
from .params import (DEFAULT_DELTA, DEFAULT_EPSILON, DEFAULT_THETA, check_assignment,
                     check_capacity, check_movable, check_nonneg, check_num_nodes,
                     check_series, check_sizes)
from .placement import Placement, make_placement
from .stats import correlation

__all__ = ["PairwiseCorrelation", "MODES", "pairwise_round", "redistribute", "exchange",
           "improve", "check_theta", "resolve_capacity"]

#: Pairwise modes and the paper's names for them.
MODES = {"one-way": "COR-BAL", "redistribute": "COR-RE", "exchange": "COR-SE"}


def check_theta(theta: Any) -> float:
    if isinstance(theta, bool) or not isinstance(theta, (int, float, np.integer, np.floating)):
        raise TypeError(f"theta={theta!r}; expected a correlation in [-1, 1]")
    if not -1.0 <= theta <= 1.0:
        raise ValueError(f"theta={theta!r}; expected a correlation in [-1, 1]")
    return float(theta)


def resolve_capacity(capacity: float | None, lay: Layout) -> float:
    """The node capacity in load units; None = the mean node load (load level 1)."""
    if capacity is not None:
        return capacity
    mean = float(lay.node_loads().mean()) if lay.n else 0.0
    return mean if mean > 0 else 1.0


def _ordered(lay: Layout, i: int, j: int) -> tuple[int, int]:
    """(more loaded, less loaded) of a pair; ties keep the given order."""
    li, lj = lay.x[i].mean(), lay.x[j].mean()
    return (j, i) if lj > li else (i, j)


def redistribute(lay: Layout, i: int, j: int, label: str = "COR-RE") -> None:
    """Two-way redistribution of a pair (§3.3.2): empty, greedy refill, one-way.

    Examples
    --------
    >>> import numpy as np
    >>> s = np.array([[2., 0.], [2., 0.], [0., 2.], [0., 2.]])
    >>> lay = Layout(s, np.array([0, 0, 1, 1]), None, 2)
    >>> redistribute(lay, 0, 1); lay.pair_rho(0, 1)
    0.0
    """
    pool = np.flatnonzero(np.isin(lay.a, [i, j]) & lay.movable & (lay.load > 0))
    lay.unplace(pool, (i, j))
    greedy_fill(lay, pool, (i, j), label)
    hi, lo = _ordered(lay, i, j)
    one_way(lay, hi, lo, label)


def exchange(lay: Layout, i: int, j: int, delta: float, label: str = "COR-SE") -> None:
    """Selective exchange of a pair (§3.3.3): one-way, moves with score > δ, one-way.

    Examples
    --------
    >>> import numpy as np
    >>> s = np.array([[2., 0.], [2., 0.], [0., 2.], [0., 2.]])
    >>> lay = Layout(s, np.array([0, 0, 1, 1]), None, 2)
    >>> exchange(lay, 0, 1, 0.2); lay.a.tolist()
    [1, 0, 0, 1]
    """
    hi, lo = _ordered(lay, i, j)
    one_way(lay, hi, lo, label)
    limit = int(np.isin(lay.a, [i, j]).sum())
    for _ in range(limit):
        hi, lo = _ordered(lay, i, j)
        cand = lay.movers(hi)
        if cand.size == 0:
            break
        score = (lay.rho_in(cand, hi) - lay.rho_with(cand, lay.x[lo])) / 2.0
        b = lay.pick(cand, score)
        if score[b] <= delta:
            break
        u = int(cand[b])
        lay.move(u, lo)
        lay.note(u, f"{label}: exchange {hi} -> {lo}, S(o)={score[b]:.3f} > δ={delta:g}")
    hi, lo = _ordered(lay, i, j)
    one_way(lay, hi, lo, label)


def pairwise_round(lay: Layout, act, epsilon: float) -> list[tuple[int, int]]:
    """Pair nodes by mean load (i-th with (n−i+1)-th) and ``act(hi, lo)`` on each pair whose
    loads differ by more than ``epsilon``; return the pairs that acted."""
    loads = lay.node_loads()
    order = np.argsort(loads, kind="stable")
    acted = []
    for t in range(lay.n // 2):
        lo, hi = int(order[t]), int(order[lay.n - 1 - t])
        if loads[hi] - loads[lo] > epsilon:
            act(hi, lo)
            acted.append((hi, lo))
    return acted


def improve(lay: Layout, two_way, theta: float, capacity: float, label: str
            ) -> list[tuple[int, int, float, float]]:
    """The -IMP correlation improvement step (§3.3.4); returns the accepted pairs as
    (i, j, ρ before, ρ after)."""
    x = lay.x
    level = x.mean(axis=1) + x.std(axis=1)
    accepted: list[tuple[int, int, float, float]] = []
    for i in np.argsort(-level, kind="stable").tolist():
        if level[i] <= capacity:
            break
        if lay.x[i].mean() + lay.x[i].std() <= capacity:
            continue  # an earlier step already flattened it
        rho = np.atleast_1d(correlation(lay.x[i][None, :], lay.x))
        rho[i] = np.inf
        j = int(np.argmin(rho))
        old = float(rho[j])
        if old >= theta:
            continue
        snap = lay.snapshot((i, j))
        two_way(i, j)
        new = lay.pair_rho(i, j)
        if new > old:
            accepted.append((i, j, old, new))
            for u in np.flatnonzero(np.isin(lay.a, [i, j])).tolist():
                if lay.a[u] != snap[0][u]:
                    lay.note(u, f"{label}: pair ({i}, {j}) ρ {old:.3f} -> {new:.3f} accepted "
                                f"(node {i} divergent load level > capacity)")
        else:
            lay.restore(snap)
    return accepted


class PairwiseCorrelation:
    """Pairwise correlation-based load distribution (Xing et al. §3.3).

    Parameters
    ----------
    mode : "one-way" (COR-BAL), "redistribute" (COR-RE) or "exchange" (COR-SE).
    improved : add the correlation improvement step (COR-RE-IMP, COR-SE-IMP); two-way
        modes only.
    epsilon : ε, a pair acts when its mean loads differ by more than ε·capacity.
    delta : δ, score threshold of the selective exchange.
    theta : θ, the -IMP step acts on a pair whose ρ is below it.
    capacity : node capacity in load units (the paper's normalised 1); None = the mean
        node load of the window.

    Examples
    --------
    >>> import numpy as np
    >>> s = np.array([[2., 0.], [2., 0.], [0., 2.], [0., 2.]])
    >>> p = PairwiseCorrelation("redistribute", improved=True).plan(s, [0, 0, 1, 1], 2)
    >>> p.assignment.tolist(), p.node_std_mean
    ([0, 1, 0, 1], 0.0)
    """

    def __init__(self, mode: str = "one-way", improved: bool = False,
                 epsilon: float = DEFAULT_EPSILON, delta: float = DEFAULT_DELTA,
                 theta: float = DEFAULT_THETA, capacity: float | None = 1.0) -> None:
        if mode not in MODES:
            raise ValueError(f"mode={mode!r}; expected one of {tuple(MODES)}")
        if improved and mode == "one-way":
            raise ValueError("improved=True with mode='one-way'; the -IMP step is defined "
                             "for the two-way modes 'redistribute' and 'exchange' only")
        self.mode = mode
        self.improved = bool(improved)
        self.epsilon = check_nonneg("epsilon", epsilon)
        self.delta = check_nonneg("delta", delta)
        self.theta = check_theta(theta)
        self.capacity = None if capacity is None else check_capacity(capacity)

    @property
    def name(self) -> str:
        return MODES[self.mode] + ("-IMP" if self.improved else "")

    def params(self) -> dict[str, Any]:
        return {"mode": self.mode, "improved": self.improved, "epsilon": self.epsilon,
                "delta": self.delta, "theta": self.theta, "capacity": self.capacity}

    def plan(self, series: Any, assignment: Any, num_nodes: int, movable: Any = None, *,
             sizes: Any = None) -> Placement:
        """One period of pairwise balancing from ``assignment``.

        Parameters
        ----------
        series : (m, k) loads of every unit over the last k samples.
        assignment : length-m current node of every unit.
        num_nodes : n.
        movable : optional length-m bool; False pins a unit on its node.
        sizes : optional length-m state sizes, only reported (``state_moved``).
        """
        t0 = time.perf_counter()
        s = check_series(series)
        n = check_num_nodes(num_nodes)
        a0 = check_assignment(assignment, s.shape[0], n)
        lay = Layout(s, a0, check_movable(movable, s.shape[0]), n)
        cap = resolve_capacity(self.capacity, lay)
        label = self.name
        if self.mode == "one-way":
            def act(hi: int, lo: int) -> None:
                one_way(lay, hi, lo, label)
        elif self.mode == "redistribute":
            def act(hi: int, lo: int) -> None:
                redistribute(lay, hi, lo, label)
        else:
            def act(hi: int, lo: int) -> None:
                exchange(lay, hi, lo, self.delta, label)
        pairs = pairwise_round(lay, act, self.epsilon * cap)
        accepted = improve(lay, act, self.theta, cap, label) if self.improved else []
        return make_placement(s, lay.a, a0, n, seconds=time.perf_counter() - t0,
                              planner=label, params=self.params(),
                              sizes=check_sizes(sizes, s.shape[0]),
                              info={"pairs": pairs, "improved_pairs": len(accepted),
                                    "improvements": accepted, "capacity": cap},
                              story=lay.story)
