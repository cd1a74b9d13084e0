"""LLFD as a planner (Fang et al. §3.1 and Fig. 4, left): no cleaning, keys taken off the
overloaded partitions by highest cost first, then LLFD (:func:`.llfd.run_llfd`).

It balances, but cannot control the table size; it is the baseline the other planners of
Fang et al. are measured against and Theorem 2's reference (``Planner._no_worse_than_llfd``).
"""
from __future__ import annotations

from .base import Planner, PlanningContext, Trial

__all__ = ["LLFD"]


class LLFD(Planner):
    """Planner: no cleaning, keys taken off overloaded partitions by highest c first, LLFD.

    This is Fang et al. Fig. 4 (left): it balances, but cannot control the table size.

    Examples
    --------
    >>> from sparkbalance.planning.synthetic import fig4_workload
    >>> w = fig4_workload()
    >>> p = LLFD(theta=0.0).plan(w)
    >>> p.loads_after.tolist(), p.table_size
    ([10.0, 10.0], 4)
    """

    name = "LLFD"
    criterion = "c"
    default_max_table = None

    def _solve(self, ctx: PlanningContext) -> Trial:
        return ctx.trial(n_back=0)
