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
    >>> from sparkbalance.planning.synthetic import fig4_workload
    >>> w = fig4_workload()
    >>> p = MinTable(theta=0.0).plan(w)
    >>> p.loads_after.tolist(), p.table_size
    ([10.0, 10.0], 2)
    """

    name = "MinTable"
    criterion = "c"
    controls_table = True

    def _solve(self, ctx: PlanningContext) -> Trial:
        return ctx.trial(n_back=ctx.table_entries)
