"""The working state every correlation planner mutates, and its two basic moves.

:class:`Layout` holds the unit series, the current node of every unit (−1 = not placed
yet) and the node series X_j = Σ S_o, kept up to date on every move so that a score never
re-sums a node. On it:

* :func:`greedy_fill` — the score-based greedy of Xing et al. §3.3.2 / §3.4: the least
  loaded node repeatedly takes the unplaced unit with the highest score
  S(o, N_i) = (1/n)·Σ_j ρ(o, N_j) − ρ(o, N_i) (n = the nodes being filled; n = 2 gives the
  pairwise score). Unplaced units are on no node, so ρ(o, N_j) needs no exclusion and
  only the receiver's column changes per step: O(|units|·k) per step.
* :func:`one_way` — one-way balancing of a node pair (Xing et al. §3.3.1): the more loaded
  N₁ gives units in decreasing S(o) = (ρ(o, N₁) − ρ(o, N₂))/2 (scores recomputed after every
  move, as the paper's O(m²k) count implies) while the moved load stays below (L₁ − L₂)/2.

The same two functions run the baselines with ``policy="largest"`` (largest load first,
LLF) or ``"random"`` (RAND). Ties between equal scores go to the larger load, then the
lower unit index, so every planner but RAND is deterministic.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .stats import ZERO_STD_RTOL, correlation

__all__ = ["Layout", "greedy_fill", "one_way"]

_TIE = 1e-12   # scores within this of the best count as equal (ρ is in [-1, 1])


def _rho_cols(sc: np.ndarray, inv_std: np.ndarray, y: np.ndarray, k: int) -> np.ndarray:
    """ρ of centred unit rows ``sc`` (1/σ in ``inv_std``) with one series ``y`` >= 0.

    The hot path of every planner: plain ufuncs only (loads are >= 0, so max|y| = max y;
    |ρ| <= 1 holds up to rounding, no clipping needed for ranking scores)."""
    yc = y - y.sum() / k
    v = yc.dot(yc)
    top = y.max() if y.size else 0.0
    if v <= k * (ZERO_STD_RTOL * top) ** 2:
        return np.zeros(sc.shape[0])
    return sc.dot(yc) * inv_std * (1.0 / np.sqrt(v * k))


class Layout:
    """Mutable placement of m units on n nodes, with the node series kept current.

    Examples
    --------
    >>> import numpy as np
    >>> lay = Layout(np.array([[1., 3.], [2., 2.]]), np.array([0, 0]), None, 2)
    >>> lay.move(1, 1); lay.node_loads().tolist()
    [2.0, 2.0]
    """

    def __init__(self, series: np.ndarray, assignment: np.ndarray | None,
                 movable: np.ndarray | None, num_nodes: int, policy: str = "correlation",
                 rng: np.random.Generator | None = None) -> None:
        self.s = series
        m, self.k = series.shape
        self.n = num_nodes
        self.load = series.mean(axis=1)
        self.sc = series - self.load[:, None]
        self.sstd = np.sqrt(np.einsum("ij,ij->i", self.sc, self.sc) / self.k)
        scale = np.abs(series).max(axis=1) if m else np.zeros(0)
        self.sflat = self.sstd <= ZERO_STD_RTOL * scale
        # 1/σ_o, 0 for a constant unit: its ρ with anything is then 0 with no masking
        self.inv_std = np.where(self.sflat, 0.0, 1.0 / np.where(self.sflat, 1.0, self.sstd))
        self.a = (np.full(m, -1, dtype=np.int64) if assignment is None
                  else np.array(assignment, dtype=np.int64))
        self.movable = np.ones(m, dtype=bool) if movable is None else movable
        self.x = np.zeros((num_nodes, self.k))
        placed = self.a >= 0
        np.add.at(self.x, self.a[placed], series[placed])
        self.policy = policy
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.story: dict[int, list[str]] = {}

    # --- state ---------------------------------------------------------------------------
    def node_loads(self) -> np.ndarray:
        return self.x.mean(axis=1)

    def members(self, j: int) -> np.ndarray:
        return np.flatnonzero(self.a == j)

    def movers(self, j: int) -> np.ndarray:
        """Units on j that may move: movable ones with a positive mean load (moving an
        all-zero series changes no load and no variance; it would only cost state)."""
        return self.by_load(np.flatnonzero((self.a == j) & self.movable & (self.load > 0)))

    def by_load(self, units: np.ndarray) -> np.ndarray:
        """``units`` by decreasing load, then increasing index: the tie order of :meth:`pick`."""
        return units[np.argsort(-self.load[units], kind="stable")]

    def move(self, o: int, dst: int) -> None:
        src = self.a[o]
        if src >= 0:
            self.x[src] -= self.s[o]
        self.x[dst] += self.s[o]
        self.a[o] = dst

    def unplace(self, units: np.ndarray, nodes: Sequence[int]) -> None:
        """Take ``units`` off their nodes; re-sum ``nodes`` from who stays (no drift)."""
        self.a[units] = -1
        for j in nodes:
            self.x[j] = self.s[self.a == j].sum(axis=0)

    def note(self, o: int, text: str) -> None:
        self.story.setdefault(int(o), []).append(text)

    def snapshot(self, nodes: Sequence[int]) -> tuple:
        """What a tentative two-way step on ``nodes`` may change (for :meth:`restore`)."""
        who = np.flatnonzero(np.isin(self.a, list(nodes)))
        return (self.a.copy(), self.x.copy(),
                {int(u): list(self.story[int(u)]) for u in who if int(u) in self.story},
                who)

    def restore(self, snap: tuple) -> None:
        a, x, story, who = snap
        self.a[:] = a
        self.x[:] = x
        for u in who.tolist():
            if u in story:
                self.story[u] = story[u]
            else:
                self.story.pop(u, None)

    # --- correlations --------------------------------------------------------------------
    def rho_with(self, units: np.ndarray, y: np.ndarray) -> np.ndarray:
        """ρ(S_o, y) for every o in ``units`` (o must not be part of y)."""
        return _rho_cols(self.sc[units], self.inv_std[units], y, self.k)

    def rho_in(self, units: np.ndarray, j: int) -> np.ndarray:
        """ρ(o, N_j) for units on node j: against X_j − S_o (o excluded, §3.3.1)."""
        if len(units) == 0:
            return np.zeros(0)
        others = self.x[j][None, :] - self.s[units]
        oc = others - others.mean(axis=1, keepdims=True)
        ostd = np.sqrt(np.einsum("ij,ij->i", oc, oc) / self.k)
        flat = ostd <= ZERO_STD_RTOL * np.abs(others).max(axis=1)
        cov = np.einsum("ij,ij->i", self.sc[units], oc) / self.k
        rho = cov * self.inv_std[units] / np.where(flat, np.inf, ostd)
        return np.clip(rho, -1.0, 1.0, out=rho)

    def pair_rho(self, i: int, j: int) -> float:
        return float(correlation(self.x[i], self.x[j]))

    # --- selection -----------------------------------------------------------------------
    def pick(self, cand: np.ndarray, score: np.ndarray | None) -> int:
        """Index into ``cand`` (ordered by :meth:`by_load`) of the unit the policy takes:
        the best score, ties to the first (larger load, then lower index)."""
        if self.policy == "random":
            return int(self.rng.integers(len(cand)))
        if self.policy == "largest" or score is None:
            return 0
        return int(np.argmax(score >= score.max() - _TIE))


def greedy_fill(lay: Layout, units: np.ndarray, nodes: Sequence[int], label: str) -> None:
    """Place every unit of ``units`` (unplaced) on ``nodes``, least-loaded node first.

    Examples
    --------
    >>> import numpy as np
    >>> s = np.array([[2., 0.], [0., 2.], [2., 0.], [0., 2.]])
    >>> lay = Layout(s, None, None, 2)
    >>> greedy_fill(lay, np.arange(4), [0, 1], "COR-GLB"); lay.a.tolist()
    [0, 0, 1, 1]
    """
    units = lay.by_load(np.asarray(units, dtype=np.int64))
    nodes = [int(j) for j in nodes]
    if units.size == 0:
        return
    nn = len(nodes)
    loads = lay.x[nodes].mean(axis=1)
    ulen = lay.load[units]
    use_rho = lay.policy == "correlation"
    if use_rho:
        sc, inv, k = lay.sc[units], lay.inv_std[units], lay.k
        rho = np.column_stack([_rho_cols(sc, inv, lay.x[j], k) for j in nodes])
        rowsum = rho.sum(axis=1)
        dead = np.zeros(units.size)      # -inf once placed: never chosen again
    else:
        left = np.ones(units.size, dtype=bool)
    for step in range(units.size):
        r = int(loads.argmin())
        if use_rho:
            score = rowsum * (1.0 / nn) - rho[:, r] + dead
            i = int((score >= score.max() - _TIE).argmax())
            dead[i] = -np.inf
            why = (f"{label}: least-loaded node {nodes[r]} took it, score S(o,N)="
                   f"{score[i]:.3f} best of {units.size - step} unplaced")
        else:
            idx = np.flatnonzero(left)
            i = int(idx[lay.pick(idx, None)])
            left[i] = False
            why = f"{label}: least-loaded node {nodes[r]} took it ({lay.policy} policy)"
        u = int(units[i])
        lay.move(u, nodes[r])
        lay.note(u, why)
        loads[r] += ulen[i]
        if use_rho and step + 1 < units.size:
            col = _rho_cols(sc, inv, lay.x[nodes[r]], k)
            rowsum += col - rho[:, r]
            rho[:, r] = col


def one_way(lay: Layout, hi: int, lo: int, label: str) -> float:
    """Move units ``hi -> lo`` while the moved load stays < (L_hi − L_lo)/2; return it.

    Examples
    --------
    >>> import numpy as np
    >>> s = np.array([[1., 1.], [1., 1.], [1., 1.]])
    >>> lay = Layout(s, np.array([0, 0, 0]), None, 2)
    >>> one_way(lay, 0, 1, "COR-BAL"), lay.a.tolist()
    (1.0, [1, 0, 0])
    """
    loads = lay.node_loads()
    budget = (loads[hi] - loads[lo]) / 2.0
    moved = 0.0
    cand = lay.movers(hi)
    while cand.size:
        fit = cand[lay.load[cand] + moved < budget]
        if fit.size == 0:
            break
        if lay.policy == "correlation":
            score = (lay.rho_in(fit, hi) - lay.rho_with(fit, lay.x[lo])) / 2.0
            i = lay.pick(fit, score)
            why = f"S(o)={score[i]:.3f} best of {fit.size} fitting"
        else:
            i = lay.pick(fit, None)
            why = f"{lay.policy} policy, {fit.size} fitting"
        u = int(fit[i])
        lay.move(u, lo)
        moved += float(lay.load[u])
        lay.note(u, f"{label}: one-way {hi} -> {lo}, {why}, moved load {moved:.4g} < "
                    f"(L1-L2)/2 = {budget:.4g}")
        cand = cand[cand != u]
    return moved
