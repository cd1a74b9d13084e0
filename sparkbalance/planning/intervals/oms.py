"""OMS: optimal migration sequence for a known sequence of node counts (Ding et al. §4.1, Fig. 5).

Fig. 5 recurses over every balanced partitioning of the first step and calls SSM for the
last. By Lemma 4.1 the future cost depends only on the partitioning reached, so the
recursion is evaluated as a shortest path over layers of partitionings (memoising Fig. 5
on the partitioning): layer t holds every balanced partitioning into ``n_t`` intervals,
``best[t][Q] = min_P best[t-1][P] + c(P, Q)``, and the last step is solved by SSM from each
partitioning of layer p-1 (Fig. 5 line 1). Exponential in the number of tasks like the
paper's algorithm — for small m or offline use.
"""
from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from .model import IntervalPlan, as_sequence, check_count, check_tau, make_problem, \
    plan_from_partition
from .partitionings import DEFAULT_MAX_PARTITIONINGS, enumerate_partitionings, pairwise_costs
from .ssm import SSM

__all__ = ["OMS"]


class OMS:
    """Optimal plans for a known sequence of node counts (Ding et al. Fig. 5).

    Parameters
    ----------
    taus : balance parameter per migration (a scalar applies to all).
    max_partitionings : enumeration limit per step (``TooManyPartitionings`` beyond it).

    Examples
    --------
    >>> plans = OMS(0.4).plan([1] * 20, [1] * 20, [0, 13, 20], [3, 4])   # Table 3, Ding et al.
    >>> [p.migration_cost for p in plans], sum(p.migration_cost for p in plans)
    ([4.0, 2.0], 6.0)
    """

    name = "OMS"

    def __init__(self, taus: float | Sequence[float] = 0.2, *,
                 max_partitionings: int = DEFAULT_MAX_PARTITIONINGS) -> None:
        if isinstance(taus, (list, tuple, np.ndarray)):
            self.taus: float | list[float] = [check_tau(t) for t in taus]
        else:
            self.taus = check_tau(taus)
        self.max_partitionings = check_count(max_partitionings, "max_partitionings")

    def plan(self, weights: Any, sizes: Any, bounds: Any,
             node_counts: Sequence[int]) -> list[IntervalPlan]:
        """One plan per migration; plan ``t`` starts from plan ``t-1``'s intervals.

        Owners of plan ``t`` refer to the intervals of plan ``t-1`` (node ``i`` = the node
        that owned interval ``i``), new nodes are numbered from ``n_{t-1}``.
        """
        t0 = time.perf_counter()
        counts = [check_count(c, "node_counts[i]") for c in node_counts]
        if not counts:
            raise ValueError("node_counts is empty; expected at least one migration")
        taus = as_sequence(self.taus, len(counts), "taus")
        first = make_problem(weights, sizes, bounds, counts[0], taus[0])
        w, s, sc = first.weights, first.sizes, first.sc
        probs = [make_problem(w, s, bounds, c, t) for c, t in zip(counts, taus)]
        layers = [first.bounds[None, :]]
        best = [np.zeros(1)]
        back: list[np.ndarray] = []
        for t in range(len(counts) - 1):
            layer = enumerate_partitionings(probs[t], limit=self.max_partitionings)
            if layer.shape[0] == 0:
                return self._single_steps(w, s, bounds, counts, taus, t0)
            c = pairwise_costs(sc, layers[-1], layer) + best[-1][:, None]
            back.append(np.argmin(c, axis=0))
            best.append(c.min(axis=0))
            layers.append(layer)
        last_tau = taus[-1]
        finals = []
        for i, cuts in enumerate(layers[-1]):
            pl = SSM(last_tau).plan(w, s, cuts, counts[-1])
            finals.append((best[-1][i] + pl.migration_cost, pl.feasible, i, pl))
        feasible = [f for f in finals if f[1]]
        if not feasible:
            return self._single_steps(w, s, bounds, counts, taus, t0)
        _, _, i, last = min(feasible, key=lambda f: f[0])
        path = [i]
        for t in range(len(back) - 1, -1, -1):
            path.append(int(back[t][path[-1]]))
        path.reverse()          # path[t] = index in layers[t]; path[0] = 0 (the start)
        plans: list[IntervalPlan] = []
        prev = first.bounds
        for t in range(len(counts) - 1):
            cuts = layers[t + 1][path[t + 1]]
            p = make_problem(w, s, prev, counts[t], taus[t])
            plans.append(plan_from_partition(p, cuts, algorithm=self.name))
            prev = cuts
        p = make_problem(w, s, prev, counts[-1], last_tau)
        plans.append(plan_from_partition(p, last.bounds, last.owners, algorithm=self.name))
        return _stamp(plans, time.perf_counter() - t0)

    def _single_steps(self, w: np.ndarray, s: np.ndarray, bounds: Any, counts: list[int],
                      taus: list[float], t0: float) -> list[IntervalPlan]:
        """Some step has no balanced partitioning: report SSM's chain (flags feasible=False)."""
        plans, prev = [], bounds
        for c, t in zip(counts, taus):
            pl = SSM(t).plan(w, s, prev, c)
            plans.append(pl)
            prev = pl.bounds
        return _stamp(plans, time.perf_counter() - t0)


def _stamp(plans: list[IntervalPlan], seconds: float) -> list[IntervalPlan]:
    from dataclasses import replace
    return [replace(p, seconds=seconds, algorithm="OMS") for p in plans]
