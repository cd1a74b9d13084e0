"""MinTable (Fang et al. §3.2, Algorithm 2): smallest routing table, migration be damned.

Phase I moves back *every* entry of R; Phases II–III use the highest-cost-first criterion,
so few (heavy) keys get entries. Fig. 4 (right): exact balance with two entries.
"""
from __future__ import annotations

from .base import Planner, PlanningContext, Trial

__all__ = ["MinTable"]


class MinTable(Planner):
    """Clean the whole table, then take keys by highest c(k) first and run LLFD.

    Examples
    --------
    >>> import numpy as np
    >>> from sparkbalance.planning import Workload
    >>> w = Workload(keys=np.arange(6), cost=[7., 4., 5., 2., 1., 1.], memory=np.ones(6),
    ...              home=[0, 1, 1, 1, 1, 1], current=[0, 0, 0, 1, 1, 1], num_partitions=2)
    >>> p = MinTable(theta=0.0).plan(w)
    >>> p.loads_after.tolist(), p.table_size
    ([10.0, 10.0], 2)
    """

    name = "MinTable"
    criterion = "c"
    controls_table = True

    def _solve(self, ctx: PlanningContext) -> Trial:
        return ctx.trial(n_back=ctx.table_entries)
