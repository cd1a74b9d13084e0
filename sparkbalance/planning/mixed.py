"""Mixed and MixedBF (Fang et al. §3.3, Algorithm 4): MinTable's cleaning, MinMig's choices.

Phase I moves back the ``n_back`` entries of smallest S(k) (cheap to move home); Phases
II–III follow MinMig (highest γ = c^β / S first). Algorithm 4 starts at n_back = 0 and,
while the trial's table overflows, grows n_back by the overflow |R'| − A_max; it stops at
the first trial that fits (n_back = |R| is MinTable's cleaning with MinMig's criterion).
MixedBF tries every n_back and keeps the cheapest feasible trial.
"""
from __future__ import annotations

import numpy as np

from .base import Planner, PlanningContext, Trial

__all__ = ["Mixed", "MixedBF", "DEFAULT_BF_TRIALS"]

#: MixedBF tries every n_back when |R| + 1 <= this many trials, else this many values of
#: n_back spread evenly over [0, |R|] plus every value Algorithm 4 would visit — each trial
#: is a full LLFD run, and |R| = 3000 exact trials would take minutes.
DEFAULT_BF_TRIALS: int = 129


class Mixed(Planner):
    """Fang et al. Algorithm 4.

    Parameters
    ----------
    theta, max_table, beta, criterion, compact : see :class:`~sparkbalance.planning.base.Planner`.

    Examples
    --------
    >>> import numpy as np
    >>> from sparkbalance.planning import Workload
    >>> w = Workload(keys=np.arange(6), cost=[7., 4., 5., 2., 1., 1.], memory=np.ones(6),
    ...              home=[0, 1, 1, 1, 1, 1], current=[0, 0, 0, 1, 1, 1], num_partitions=2)
    >>> p = Mixed(theta=0.0, max_table=2).plan(w)
    >>> p.loads_after.tolist(), p.table_size <= 2, p.feasible
    ([10.0, 10.0], True, True)
    """

    name = "Mixed"
    criterion = "gamma"

    def _solve(self, ctx: PlanningContext) -> Trial:
        a_max = self.max_table
        n_back = 0
        while True:
            t = ctx.trial(n_back)
            if t.fits(a_max) or n_back >= ctx.table_entries:
                return self._no_worse_than_llfd(ctx, t)
            n_back = min(ctx.table_entries, n_back + max(1, t.table_size - a_max))


class MixedBF(Planner):
    """"Mixed brute force": every n_back (or ``max_trials`` of them), cheapest feasible.

    Choice: the feasible trial of least migration (ties: smaller table); without a
    feasible trial, the best-balanced trial that fits the table, else the smallest table.

    Examples
    --------
    >>> import numpy as np
    >>> from sparkbalance.planning import Workload
    >>> w = Workload(keys=np.arange(6), cost=[7., 4., 5., 2., 1., 1.], memory=np.ones(6),
    ...              home=[0, 1, 1, 1, 1, 1], current=[0, 0, 0, 1, 1, 1], num_partitions=2)
    >>> p = MixedBF(theta=0.0, max_table=2).plan(w)
    >>> p.loads_after.tolist(), p.feasible
    ([10.0, 10.0], True)
    """

    name = "MixedBF"
    criterion = "gamma"

    def __init__(self, *args, max_trials: int | None = DEFAULT_BF_TRIALS, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if max_trials is not None and (isinstance(max_trials, bool) or not isinstance(
                max_trials, (int, np.integer)) or max_trials < 2):
            raise ValueError(f"max_trials={max_trials!r}; expected an int >= 2 or None (all)")
        self.max_trials = max_trials

    @property
    def params(self):
        return {**super().params, "max_trials": self.max_trials}

    def _solve(self, ctx: PlanningContext) -> Trial:
        R = ctx.table_entries
        if self.max_trials is None or R + 1 <= self.max_trials:
            grid = set(range(R + 1))
        else:
            grid = set(np.unique(np.linspace(0, R, self.max_trials).round().astype(int))
                       .tolist())
            # include the values Algorithm 4 visits, so MixedBF is never worse than Mixed
            n_back = 0
            while True:
                grid.add(n_back)
                t = ctx.trial(n_back)
                if t.fits(self.max_table) or n_back >= R:
                    break
                n_back = min(R, n_back + max(1, t.table_size - self.max_table))
        done = {t.n_back for t in ctx.trials}
        for nb in sorted(grid - done):
            ctx.trial(nb)
        trials = ctx.trials
        feas = [t for t in trials if t.feasible(self.max_table)]
        if feas:
            return min(feas, key=lambda t: (t.est_migration, t.table_size, t.n_back))
        fit = [t for t in trials if t.fits(self.max_table)]
        if fit:
            best = min(fit, key=lambda t: (float(t.est_loads.max()), t.est_migration))
        else:
            best = min(trials, key=lambda t: (t.table_size, float(t.est_loads.max())))
        return self._no_worse_than_llfd(ctx, best)
