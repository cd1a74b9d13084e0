"""The result of a planner: new routing table, its delta, the moves and their cost.

A :class:`Plan` is a value: it never touches data. The keyed-state layer applies
``plan.delta`` to the routing table and ships the state of ``plan.moves``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..routing.table import RoutingDelta, RoutingTable
from ..stats.workload import Workload, imbalance

__all__ = ["KeyMove", "Plan", "realise_plan"]


@dataclass(frozen=True)
class KeyMove:
    """One key whose destination changes: its state (``bytes`` = S(k)) goes ``src -> dst``.

    Examples
    --------
    >>> KeyMove("hot", 3, 1, 120.0)
    KeyMove(key='hot', src=3, dst=1, bytes=120.0)
    """

    key: Any
    src: int
    dst: int
    bytes: float


@dataclass(frozen=True, eq=False)  # holds numpy arrays: identity equality, no ambiguous ==
class Plan:
    """What a planner decided (Fang et al. §2.2: new F', its table R', moved keys Δ).

    Attributes
    ----------
    table : the new :class:`RoutingTable` (version = old + 1 when it changed, else the old one).
    delta : entries added / changed / removed relative to the old table.
    moves : keys whose destination changed, with their state size.
    migration_cost : M = Σ S(k) over ``moves`` (Fang et al. Eq. 2).
    loads_before, loads_after : L(d) under the current and the new assignment (exact costs).
    imbalance_before, imbalance_after : λ = max L(d) / L̄.
    min_load_ratio_before, min_load_ratio_after (properties) : min L(d) / L̄, the other side
        of Fang et al. Eq. 3 (θ(d) = |L(d) − L̄| / L̄); ``theta_two_sided`` is max_d θ(d).
    table_size : |R'|.
    seconds : wall time of ``plan()``.
    feasible : True when max L(d) <= (1 + θ_max)·L̄ and |R'| <= A_max (when A_max is set).
        One-sided on purpose: the planners act on overloaded partitions only (the makespan
        is what a Spark stage waits for); the two-sided figures are reported beside it.
    planner : name of the planner; ``params``: its parameters; ``info``: extra figures
        (trials, n_back, estimated loads of a compact run, ...).

    Examples
    --------
    >>> import numpy as np
    >>> from sparkbalance.planning import Mixed, Workload
    >>> w = Workload(keys=np.arange(4), cost=[5., 2., 1., 2.], memory=[1., 1., 1., 1.],
    ...              home=[0, 0, 1, 1], current=[0, 0, 1, 1], num_partitions=2)
    >>> p = Mixed(theta=0.0).plan(w)
    >>> p.loads_after.tolist(), p.feasible
    ([5.0, 5.0], True)
    """

    table: RoutingTable
    delta: RoutingDelta
    moves: tuple[KeyMove, ...]
    migration_cost: float
    loads_before: np.ndarray
    loads_after: np.ndarray
    imbalance_before: float
    imbalance_after: float
    table_size: int
    seconds: float
    feasible: bool
    planner: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    info: Mapping[str, Any] = field(default_factory=dict, repr=False)
    assignment: np.ndarray | None = field(default=None, repr=False)
    _workload: Workload | None = field(default=None, repr=False, compare=False)
    _reasons: Mapping[int, str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def min_load_ratio_before(self) -> float:
        """min L(d) / L̄ before the plan (1.0 without load)."""
        return _min_ratio(self.loads_before)

    @property
    def min_load_ratio_after(self) -> float:
        """min L(d) / L̄ after the plan (1.0 without load).

        Examples
        --------
        >>> import numpy as np
        >>> from sparkbalance.planning import LLFD, Workload
        >>> w = Workload(keys=np.arange(3), cost=[4., 1., 1.], memory=np.ones(3),
        ...              home=[0, 0, 1], current=[0, 0, 1], num_partitions=2)
        >>> p = LLFD(theta=0.0).plan(w)
        >>> [round(x, 3) for x in (p.imbalance_after, p.min_load_ratio_after,
        ...                        p.theta_two_sided)]
        [1.333, 0.667, 0.333]
        """
        return _min_ratio(self.loads_after)

    @property
    def theta_two_sided(self) -> float:
        """max_d |L(d) − L̄| / L̄ after the plan (Fang et al. Eq. 3 read on both sides)."""
        return max(self.imbalance_after - 1.0, 1.0 - self.min_load_ratio_after)

    @property
    def moved_keys(self) -> frozenset:
        """Δ: the keys whose state must move (pause these, keep the others running)."""
        return frozenset(m.key for m in self.moves)

    @property
    def num_moves(self) -> int:
        return len(self.moves)

    def summary(self) -> str:
        """One line with the figures that matter."""
        return (f"{self.planner}: λ {self.imbalance_before:.3f} -> {self.imbalance_after:.3f} "
                f"(min/L̄ {self.min_load_ratio_before:.3f} -> {self.min_load_ratio_after:.3f}), "
                f"{len(self.moves)} moves, M={self.migration_cost:.4g}, |R'|={self.table_size}, "
                f"{'feasible' if self.feasible else 'INFEASIBLE'}, {self.seconds * 1e3:.1f} ms")

    def explain(self, key: Any) -> str:
        """Why ``key`` ends where it does (replayable story of the decision).

        Examples
        --------
        >>> import numpy as np
        >>> from sparkbalance.planning import MinTable, Workload
        >>> w = Workload(keys=np.arange(3), cost=[4., 1., 1.], memory=[1., 1., 1.],
        ...              home=[0, 0, 0], current=[0, 0, 0], num_partitions=2)
        >>> MinTable(theta=0.0).plan(w).explain(0).startswith("key 0: moved 0 -> 1")
        True
        """
        w = self._workload
        if w is None or self.assignment is None:
            return f"key {key!r}: no workload attached to this plan"
        idx = _index_of(w.keys, key)
        if idx is None:
            if key in self.table:
                return (f"key {key!r}: not in the statistics window; keeps its entry "
                        f"-> {self.table[key]} (no known cost or state)")
            if key in self.delta.removed:
                return (f"key {key!r}: not in the statistics window; its stale entry was "
                        "dropped (Phase I cleaning), it returns to its hash home")
            return f"key {key!r}: not in the statistics window; routed by hash"
        src, dst = int(w.current[idx]), int(self.assignment[idx])
        home = int(w.home[idx])
        c, s = float(w.cost[idx]), float(w.memory[idx])
        where = "its hash home" if dst == home else f"a table entry (home {home})"
        reason = self._reasons.get(idx, "")
        if src == dst:
            head = f"key {key!r}: stays on {dst} via {where} (c={c:.4g}, S={s:.4g})"
            return head + (f"; {reason}" if reason else "; not selected by the planner")
        head = (f"key {key!r}: moved {src} -> {dst} via {where} (c={c:.4g}, S={s:.4g} moved)")
        return head + (f"; {reason}" if reason else "")


def _min_ratio(loads: np.ndarray) -> float:
    mean = float(loads.mean()) if loads.size else 0.0
    return float(loads.min()) / mean if mean > 0 else 1.0


def _index_of(keys: np.ndarray, key: Any) -> int | None:
    """Position of ``key`` in ``keys`` (linear scan; explain() is not a hot path)."""
    try:
        hits = np.flatnonzero(keys == key) if keys.dtype != object else None
    except (TypeError, ValueError):
        hits = None
    if hits is None:
        for i, k in enumerate(keys.tolist()):
            if k == key and type(k) is type(key):
                return i
        return None
    return int(hits[0]) if hits.size else None


def realise_plan(workload: Workload, table: RoutingTable, assignment: np.ndarray,
                 kept_stale: Mapping[Any, int], *, theta: float, max_table: int | None,
                 seconds: float, planner: str, params: Mapping[str, Any],
                 info: Mapping[str, Any] | None = None,
                 reasons: Mapping[int, str] | None = None) -> Plan:
    """Turn a per-key assignment F' into a :class:`Plan` (table, delta, moves, figures).

    ``kept_stale``: entries of the old table for keys absent from the workload (or redundant
    entries pointing at the home) that the planner keeps. Entries of present keys are exactly
    the keys with F'(k) != h(k), so R' stays minimal for the chosen F'.
    """
    w = workload
    a = np.asarray(assignment, dtype=np.int64)
    moved = np.flatnonzero(a != w.current)
    keys_moved = w.keys[moved].tolist()
    src = w.current[moved].tolist()
    dst = a[moved].tolist()
    size = w.memory[moved].tolist()
    moves = tuple(KeyMove(k, s, d, b) for k, s, d, b in zip(keys_moved, src, dst, size))
    routed = np.flatnonzero(a != w.home)
    routes = dict(kept_stale)
    routes.update(zip(w.keys[routed].tolist(), a[routed].tolist()))
    delta = table.diff(routes)
    new_table = table if delta.is_empty else table.apply(delta)
    loads_before = w.loads()
    loads_after = w.loads(a)
    imb_after = imbalance(loads_after)
    mean = loads_after.mean() if loads_after.size else 0.0
    tol = 1e-9 * max(mean, 1e-300)
    balanced = bool(loads_after.max() <= (1.0 + theta) * mean + tol) if mean > 0 else True
    fits = max_table is None or len(routes) <= max_table
    return Plan(table=new_table, delta=delta, moves=moves,
                migration_cost=float(w.memory[moved].sum()),
                loads_before=loads_before, loads_after=loads_after,
                imbalance_before=imbalance(loads_before), imbalance_after=imb_after,
                table_size=len(routes), seconds=seconds, feasible=balanced and fits,
                planner=planner, params=dict(params), info=dict(info or {}),
                assignment=a, _workload=w, _reasons=dict(reasons or {}))
