"""Global correlation-based operator distribution, COR-GLB (Xing et al. §3.4).

1. From n empty nodes (nodes holding their non-movable units only), the least loaded node
   repeatedly takes the unplaced unit with the highest global score
   S(o, N_i) = (1/n)·Σ_j ρ(o, N_j) − ρ(o, N_i) (:func:`~.layout.greedy_fill`).
2. One round of pairwise one-way balancing (COR-BAL, with the ε test of §3.3).
3. Correlation improvement: while the mean pairwise node ρ is below θ, at most n(n−1)/2
   times, the least correlated node pair not on the tabu list is put on it and
   redistributed two-way (COR-RE); the result is kept only if the pair's ρ rises, and then
   every tabu entry naming either node is cleared.

When the current ``assignment`` is given and every unit is movable, the nodes of the plan
are renamed to keep the most load (or ``sizes``) in place (:mod:`.relabel`, our extension;
quality figures are unchanged by a renaming). Plan time is O(m²k) for step 1 with numpy
(only the receiver's column of ρ changes per step) and O(n²·(nk + m_pair²k)) for step 3.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from .layout import Layout, greedy_fill, one_way
from .pairwise import check_theta, pairwise_round, redistribute, resolve_capacity
from .params import (DEFAULT_EPSILON, DEFAULT_THETA, check_assignment, check_capacity,
                     check_movable, check_nonneg, check_num_nodes, check_series, check_sizes)
from .placement import Placement, make_placement
from .relabel import relabel
from .stats import correlation, correlation_matrix

__all__ = ["GlobalCorrelation", "improve_correlation", "global_layout", "finish_global",
           "check_global_inputs"]


def improve_correlation(lay: Layout, theta: float, label: str = "COR-GLB") -> dict[str, Any]:
    """Step 3: tabu-guided two-way redistribution of the least correlated pairs.

    Returns the number of ``iterations``, of ``accepted`` pairs and the accepted
    ``improvements`` as (i, j, ρ before, ρ after) in planned node names.

    Examples
    --------
    >>> import numpy as np
    >>> s = np.array([[2., 0.], [2., 0.], [0., 2.], [0., 2.]])
    >>> lay = Layout(s, np.array([0, 0, 1, 1]), None, 2)
    >>> info = improve_correlation(lay, 0.8)
    >>> info["iterations"], info["accepted"], lay.a.tolist()
    (1, 1, [0, 1, 0, 1])
    """
    n = lay.n
    if n < 2:
        return {"iterations": 0, "accepted": 0, "improvements": []}
    r = correlation_matrix(lay.x)
    iu = np.triu_indices(n, 1)
    tabu = np.zeros((n, n), dtype=bool)
    off = ~np.triu(np.ones((n, n), dtype=bool), 1)    # only i < j are candidates
    iterations = 0
    accepted: list[tuple[int, int, float, float]] = []
    while iterations < n * (n - 1) // 2 and r[iu].mean() < theta:
        masked = np.where(tabu | off, np.inf, r)
        flat = int(np.argmin(masked))
        if not np.isfinite(masked.flat[flat]):
            break                                      # every pair is tabu
        i, j = divmod(flat, n)
        tabu[i, j] = True
        iterations += 1
        old = float(r[i, j])
        snap = lay.snapshot((i, j))
        redistribute(lay, i, j, label + " improvement")
        new = lay.pair_rho(i, j)
        if new > old:
            accepted.append((i, j, old, new))
            for u in np.flatnonzero(np.isin(lay.a, [i, j])).tolist():
                if lay.a[u] != snap[0][u]:
                    lay.note(u, f"{label}: pair ({i}, {j}) ρ {old:.3f} -> {new:.3f} accepted "
                                f"(mean pair ρ below θ={theta:g})")
            for v in (i, j):
                row = np.atleast_1d(correlation(lay.x[v][None, :], lay.x))
                row[v] = r[v, v]
                r[v, :] = row
                r[:, v] = row
                tabu[v, :] = False
                tabu[:, v] = False
        else:
            lay.restore(snap)
    return {"iterations": iterations, "accepted": len(accepted), "improvements": accepted}


def check_global_inputs(series: Any, num_nodes: Any, assignment: Any, movable: Any,
                        sizes: Any) -> tuple[np.ndarray, int, np.ndarray | None, np.ndarray,
                                             np.ndarray | None]:
    """Validated (series, n, assignment, movable, sizes) of a global plan.

    The current assignment may name nodes >= ``num_nodes`` (a plan that shrinks the node
    count: their units must move); pinned units must be on nodes that stay.
    """
    s = check_series(series)
    m = s.shape[0]
    n = check_num_nodes(num_nodes)
    a0 = None if assignment is None else check_assignment(assignment, m, None)
    mv = check_movable(movable, m)
    if a0 is None and not mv.all():
        raise ValueError("movable pins units but assignment is None; pinned units need "
                         "their current node")
    if a0 is not None and np.any(~mv & (a0 >= n)):
        bad = int(a0[~mv & (a0 >= n)].max())
        raise ValueError(f"a pinned unit is on node {bad}; expected pinned units on nodes "
                         f"< num_nodes={n}")
    return s, n, a0, mv, check_sizes(sizes, m)


def global_layout(s: np.ndarray, n: int, a0: np.ndarray | None, movable: np.ndarray,
                  policy: str, label: str, rng: np.random.Generator | None = None) -> Layout:
    """Step 1 of every global planner: pinned units stay, the rest are placed greedily."""
    start = None
    if a0 is not None:
        start = np.where(movable, -1, a0)
    lay = Layout(s, start, movable, n, policy=policy, rng=rng)
    greedy_fill(lay, np.flatnonzero(lay.a < 0), range(n), label)
    return lay


def finish_global(lay: Layout, a0: np.ndarray | None, movable: np.ndarray,
                  sizes: np.ndarray | None, do_relabel: bool) -> tuple[np.ndarray, bool]:
    """Rename nodes to keep the most in place (when allowed); returns (assignment, done)."""
    n = lay.n
    if a0 is not None:           # idle units (all-zero series) go back where they were
        idle = (lay.load <= 0) & (a0 < n)
        lay.a[idle] = a0[idle]
    if a0 is None or not do_relabel or not movable.all() or n < 2:
        return lay.a, False
    weight = sizes if sizes is not None else lay.load
    stay = a0 < n                # units on removed nodes move whatever the names
    perm = relabel(lay.a[stay], a0[stay], weight[stay], n)
    if np.array_equal(perm, np.arange(n)):
        return lay.a, False
    what = "state" if sizes is not None else "load"
    for u in range(lay.a.size):
        p = int(lay.a[u])
        if perm[p] != p:
            lay.note(u, f"planned node {p} renamed to {int(perm[p])} (keeps the most {what} "
                        "in place; node names are arbitrary in a global plan)")
    out = perm[lay.a]
    idle = (lay.load <= 0) & stay
    out[idle] = a0[idle]
    return out, True


class GlobalCorrelation:
    """COR-GLB: global correlation-based placement (Xing et al. §3.4).

    Parameters
    ----------
    theta : θ, the improvement step runs while the mean pairwise node ρ is below it.
    epsilon : ε of the one-way round (pairs act when loads differ by more than ε·capacity).
    capacity : node capacity in load units (the paper's normalised 1); None = the mean
        node load of the window.
    relabel : rename the planned nodes to keep the most in place when ``assignment`` is
        given (our extension).

    Examples
    --------
    >>> import numpy as np
    >>> t = np.arange(10)
    >>> up, down = 1.0 + (t % 10 < 5), 1.0 + (t % 10 >= 5)   # square waves in antiphase
    >>> s = np.array([up, up, down, down])
    >>> p = GlobalCorrelation().plan(s, 2)
    >>> sorted(p.assignment.tolist()), p.node_std_mean
    ([0, 0, 1, 1], 0.0)
    """

    name = "COR-GLB"

    def __init__(self, theta: float = DEFAULT_THETA, epsilon: float = DEFAULT_EPSILON,
                 capacity: float | None = 1.0, relabel: bool = True) -> None:
        self.theta = check_theta(theta)
        self.epsilon = check_nonneg("epsilon", epsilon)
        self.capacity = None if capacity is None else check_capacity(capacity)
        self.relabel = bool(relabel)

    def params(self) -> dict[str, Any]:
        return {"theta": self.theta, "epsilon": self.epsilon, "capacity": self.capacity,
                "relabel": self.relabel}

    def plan(self, series: Any, num_nodes: int, assignment: Any = None, movable: Any = None,
             *, sizes: Any = None) -> Placement:
        """Place all units on ``num_nodes`` nodes from scratch.

        Parameters
        ----------
        series : (m, k) loads of every unit over the last k samples.
        num_nodes : n.
        assignment : optional current node of every unit: needed when some unit is not
            movable; used to rename nodes and to report what moves. It may name nodes
            >= ``num_nodes`` when the node count shrinks (their units move).
        movable : optional length-m bool; False pins a unit on its current node.
        sizes : optional length-m state sizes (renaming weight; ``state_moved``).
        """
        t0 = time.perf_counter()
        s, n, a0, mv, sz = check_global_inputs(series, num_nodes, assignment, movable, sizes)
        lay = global_layout(s, n, a0, mv, "correlation", self.name)
        cap = resolve_capacity(self.capacity, lay)
        pairs = pairwise_round(lay, lambda hi, lo: one_way(lay, hi, lo, self.name + " one-way"),
                               self.epsilon * cap)
        stats = improve_correlation(lay, self.theta, self.name)
        final, renamed = finish_global(lay, a0, mv, sz, self.relabel)
        return make_placement(s, final, a0, n, seconds=time.perf_counter() - t0,
                              planner=self.name, params=self.params(), sizes=sz,
                              info={"one_way_pairs": pairs, "relabelled": renamed,
                                    "capacity": cap, **stats},
                              story=lay.story)
