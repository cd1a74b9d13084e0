"""Mixed and MixedBF (Fang et al. §3.3, Algorithm 4): MinTable's cleaning, MinMig's choices.

Phase I moves back the ``n_back`` entries of smallest S(k) (cheap to move home); Phases
II–III follow MinMig (highest γ = c^β / S first). Algorithm 4 starts at n_back = 0 and,
while the trial's table overflows, grows n_back by the overflow |R'| − A_max; it stops at
the first trial that fits. At n_back = |R| Mixed *is* MinTable — the paper: Mixed
"degenerates to MinTable" when A_max is small — so that last trial takes keys by highest
c(k) first, as MinTable does (keeping γ there returned tables over A_max where MinTable
fits: 24 of 199 random instances). When even MinTable overflows, the base class returns
the best plan within A_max (``Planner.allow_overflow``).
MixedBF tries every n_back and keeps the cheapest feasible trial.
"""
from __future__ import annotations

import numpy as np

from .base import Planner, PlanningContext, Trial

__all__ = ["Mixed", "MixedBF", "DEFAULT_BF_TRIALS", "algorithm4"]

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
    >>> from sparkbalance.planning.synthetic import fig4_workload
    >>> w = fig4_workload()
    >>> p = Mixed(theta=0.0, max_table=2).plan(w)
    >>> p.loads_after.tolist(), p.table_size <= 2, p.feasible
    ([10.0, 10.0], True, True)
    """

    name = "Mixed"
    criterion = "gamma"

    controls_table = True

    def _solve(self, ctx: PlanningContext) -> Trial:
        return self._no_worse_than_llfd(ctx, algorithm4(ctx, self.max_table))


def algorithm4(ctx: PlanningContext, a_max: int | None) -> Trial:
    """Fang et al. Algorithm 4's trial sequence; returns the first trial that fits A_max.

    n_back grows by the overflow; the trial at n_back = |R| is MinTable's (highest c
    first). Returns that last trial when none fits.
    """
    R = ctx.table_entries
    n_back = 0
    while True:
        t = ctx.trial(R, criterion="c") if n_back >= R else ctx.trial(n_back)
        if t.fits(a_max) or n_back >= R:
            return t
        n_back = min(R, n_back + max(1, t.table_size - a_max))


class MixedBF(Planner):
    """"Mixed brute force": every n_back (or ``max_trials`` of them), cheapest feasible.

    Choice: the feasible trial of least migration (ties: smaller table); without a
    feasible trial, the best-balanced trial that fits the table, else the smallest table.

    Examples
    --------
    >>> from sparkbalance.planning.synthetic import fig4_workload
    >>> w = fig4_workload()
    >>> p = MixedBF(theta=0.0, max_table=2).plan(w)
    >>> p.loads_after.tolist(), p.feasible
    ([10.0, 10.0], True)
    """

    name = "MixedBF"
    criterion = "gamma"
    controls_table = True

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
        # Mixed's own choice (Algorithm 4 and the Theorem 2 guard) is among the trials,
        # so MixedBF is never worse than Mixed
        t4 = algorithm4(ctx, self.max_table)
        self._no_worse_than_llfd(ctx, t4)
        if self.max_trials is None or R + 1 <= self.max_trials:
            grid = set(range(R + 1))
        else:
            grid = set(np.unique(np.linspace(0, R, self.max_trials).round().astype(int))
                       .tolist())
        done = {t.n_back for t in ctx.trials if t.criterion == self.criterion}
        for nb in sorted(grid - done):
            ctx.trial(nb)
        trials = list(ctx.trials)
        feas = [t for t in trials if t.feasible(self.max_table)]
        if feas:
            return min(feas, key=lambda t: (t.est_migration, t.table_size, t.n_back))
        fit = [t for t in trials if t.fits(self.max_table)]
        if fit:
            return min(fit, key=lambda t: (float(t.est_loads.max()), t.est_migration))
        # nothing fits: the best-balanced trial; the base class enforces A_max
        return min(trials, key=lambda t: (float(t.est_loads.max()), t.table_size))
