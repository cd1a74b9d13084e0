"""Baselines of Ding et al. §6: Storm's default scheduler and consistent hashing (CH).

Both report the paper's cost metric (state of tasks whose node changes) so they compare
directly with SSM / MTM-aware.

* :class:`StormDefault` — "allocates the same number of consecutive tasks to each node":
  node ``j`` owns the ``j``-th of ``n'`` equal-count intervals, whatever it owned before
  (node ``j`` keeps its identity; nodes ``>= n'`` are removed, ``>= n`` are new).
* :class:`ConsistentHashing` — Karger et al. (Ding et al. ref. [14]): nodes and tasks on a
  hash ring, a task goes to the first node clockwise; each node has ``replicas`` virtual
  points so counts even out. Adding a node moves only the tasks of its arcs; removing one
  moves only its tasks. Random positions (seeded), so the paper averages 100 runs.
  Tasks are not kept contiguous: it returns a :class:`TaskPlan`, not an interval plan.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .model import IntervalPlan, check_count, check_tau, make_problem, plan_from_partition

__all__ = ["StormDefault", "ConsistentHashing", "TaskPlan", "DEFAULT_CH_REPLICAS"]

#: Virtual points per node on the CH ring; more points even out task counts (Karger et al.
#: suggest O(log n); 32 keeps the count spread within about +-20 % for n <= 16).
DEFAULT_CH_REPLICAS: int = 32


def equal_count_bounds(m: int, k: int) -> np.ndarray:
    """Cut points of ``k`` intervals of equal task counts (+-1, larger first)."""
    base, extra = divmod(m, k)
    sizes = np.full(k, base, dtype=np.int64)
    sizes[:extra] += 1
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


class StormDefault:
    """Equal counts of consecutive tasks per node (Storm's default scheduler).

    Examples
    --------
    >>> StormDefault(0.4).plan([1] * 20, [1] * 20, [0, 13, 20], 3).migration_cost
    12.0
    """

    name = "Storm default"

    def __init__(self, tau: float = 0.2) -> None:
        self.tau = check_tau(tau)

    def plan(self, weights: Any, sizes: Any, bounds: Any, num_nodes: int) -> IntervalPlan:
        t0 = time.perf_counter()
        p = make_problem(weights, sizes, bounds, num_nodes, self.tau)
        cuts = equal_count_bounds(p.m, p.num_nodes)
        return plan_from_partition(p, cuts, np.arange(p.num_nodes, dtype=np.int64),
                                   algorithm=self.name, seconds=time.perf_counter() - t0)


@dataclass(frozen=True)
class TaskPlan:
    """A task-to-node assignment (not necessarily in intervals) and its migration cost."""

    node_of_task: np.ndarray   # node id of every task after the migration
    migration_cost: float
    loads: np.ndarray          # work per node (in the order of ``nodes``)
    nodes: tuple[int, ...]     # node ids alive after the migration
    feasible: bool             # every load within (1+tau) W / n'
    seconds: float = 0.0


class ConsistentHashing:
    """Consistent hashing of tasks to nodes (stateful across calls).

    Parameters
    ----------
    num_tasks : m.
    replicas : virtual points per node.
    tau : only to report ``feasible`` with the same bound as the other planners.
    seed : ring positions are random; the paper reports the mean over 100 seeds.

    Examples
    --------
    >>> ch = ConsistentHashing(20, seed=1)
    >>> first = ch.plan([1] * 20, [1] * 20, 2)      # the initial placement costs nothing
    >>> first.migration_cost, len(first.nodes)
    (0.0, 2)
    >>> ch.plan([1] * 20, [1] * 20, 3).migration_cost <= 20
    True
    """

    name = "consistent hashing"

    def __init__(self, num_tasks: int, replicas: int = DEFAULT_CH_REPLICAS, tau: float = 0.2,
                 seed: int | None = 0) -> None:
        self.num_tasks = check_count(num_tasks, "num_tasks")
        self.replicas = check_count(replicas, "replicas")
        self.tau = check_tau(tau)
        self._rng = np.random.default_rng(seed)
        self.task_pos = self._rng.random(self.num_tasks)
        self._points: dict[int, np.ndarray] = {}
        self._next_id = 0
        self._assign: np.ndarray | None = None

    @property
    def nodes(self) -> tuple[int, ...]:
        return tuple(self._points)

    def _add(self) -> None:
        self._points[self._next_id] = self._rng.random(self.replicas)
        self._next_id += 1

    def assignment(self) -> np.ndarray:
        """Node id of each task: the owner of the first ring point clockwise."""
        ids = np.concatenate([np.full(self.replicas, i) for i in self._points])
        pos = np.concatenate(list(self._points.values()))
        order = np.argsort(pos)
        ids, pos = ids[order], pos[order]
        j = np.searchsorted(pos, self.task_pos, side="left") % pos.shape[0]
        return ids[j].astype(np.int64)

    def plan(self, weights: Any, sizes: Any, num_nodes: int) -> TaskPlan:
        """Resize the ring to ``num_nodes`` (adding new or removing random nodes)."""
        t0 = time.perf_counter()
        p = make_problem(weights, sizes, [0, self.num_tasks], num_nodes, self.tau)
        while len(self._points) < p.num_nodes:
            self._add()
        while len(self._points) > p.num_nodes:
            victim = int(self._rng.choice(list(self._points)))
            del self._points[victim]
        new = self.assignment()
        moved = np.zeros(self.num_tasks, dtype=bool) if self._assign is None else new != self._assign
        self._assign = new
        nodes = self.nodes
        index = {nid: i for i, nid in enumerate(nodes)}
        loads = np.bincount([index[int(t)] for t in new], weights=p.weights,
                            minlength=len(nodes))
        return TaskPlan(new, float(p.sizes[moved].sum()), loads, nodes,
                        bool(np.all(loads <= p.cap)), time.perf_counter() - t0)

