"""The single-objective planners Mixed is measured against (Fang et al. §3.1–§3.2, Fig. 4).

- :class:`LLFD` (§3.1, Fig. 4 left): no cleaning, keys taken off the overloaded partitions
  by highest cost first, then LLFD (:func:`.llfd.run_llfd`). It balances but cannot control
  the table size; it is Theorem 2's reference (``Planner._no_worse_than_llfd``).
- :class:`MinTable` (§3.2, Algorithm 2): the smallest routing table, migration be damned.
  Phase I moves back *every* entry of R; Phases II–III take the heaviest keys first, so few
  keys get entries. Fig. 4 (right): exact balance with two entries.
- :class:`MinMig` (§3.2, Algorithm 3): the least state moved, table size uncontrolled. No
  cleaning; Phases II–III take keys by highest γ(k) = c(k)^β / S(k) first, i.e. the most
  computation per byte of state that would have to move.
"""
from __future__ import annotations

from .base import Planner, PlanningContext, Trial

__all__ = ["LLFD", "MinMig", "MinTable"]


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
