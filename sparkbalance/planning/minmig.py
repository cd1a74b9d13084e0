"""MinMig (Fang et al. §3.2, Algorithm 3): least state moved, table size uncontrolled.

No cleaning; Phases II–III take keys by highest γ(k) = c(k)^β / S(k) first, i.e. the most
computation per byte of state that would have to move.
"""
from __future__ import annotations

from .base import Planner, PlanningContext, Trial

__all__ = ["MinMig"]


class MinMig(Planner):
    """Keep every entry, move the keys with the highest γ = c^β / S first.

    ``max_table`` is only checked (``Plan.feasible``), never enforced: MinMig cannot
    control the table (Fang et al. §5 leaves it out of the experiments for that reason).

    Examples
    --------
    >>> import numpy as np
    >>> from sparkbalance.planning import Workload
    >>> w = Workload(keys=np.arange(4), cost=[4., 4., 1., 1.], memory=[9., 1., 1., 1.],
    ...              home=[0, 0, 1, 1], current=[0, 0, 1, 1], num_partitions=2)
    >>> p = MinMig(theta=0.0).plan(w)
    >>> [(m.key, m.src, m.dst) for m in p.moves], p.migration_cost
    ([(1, 0, 1), (2, 1, 0)], 2.0)
    """

    name = "MinMig"
    criterion = "gamma"
    default_max_table = None

    def _solve(self, ctx: PlanningContext) -> Trial:
        return ctx.trial(n_back=0)
