"""Readj baseline (Gedik, VLDB J. 2014, as compared against in Fang et al. §5).

Readj keeps an explicit map only for *tracked* keys — those whose cost is at least
σ·L̄ — and hashes the rest. Each round it

1. moves back to their hash home the table keys that are no longer tracked (Gedik's
   "restore": untracked keys follow the hash), then
2. repeatedly applies, on the most loaded partition, the single move of a tracked key to
   another partition, or the pairwise swap of two tracked keys, that most reduces the
   pair's maximum load per unit of moved state; it stops when every L(d) <= (1+θ)·L̄ or no
   action helps. Each step scores |tracked on d_max| × (n + |tracked|) actions: quadratic,
   hence the paper's "much slower to plan".

σ is Readj's knob (smaller σ tracks more keys, plans better and slower); Fang et al. reports
the best σ of several attempts, and the benchmark does the same.
"""
from __future__ import annotations

import numpy as np

from .base import DEFAULT_BETA, DEFAULT_MAX_TABLE, DEFAULT_THETA, Planner, PlanningContext, Trial
from .checks import check_real
from .units import Units

__all__ = ["Readj", "DEFAULT_SIGMA", "DEFAULT_MAX_STEPS"]

#: Track keys with c(k) >= σ·L̄. Our default; Fang et al. tunes σ per experiment.
DEFAULT_SIGMA: float = 0.01
#: Safety bound on improvement steps per plan (each step strictly lowers a pair's max).
DEFAULT_MAX_STEPS: int = 100_000


class Readj(Planner):
    """Gedik's Readj: move/swap tracked heavy keys off the hottest partition.

    Parameters
    ----------
    theta, max_table : as every planner (``beta`` is accepted and unused).
    sigma : tracking threshold, keys with c(k) >= sigma·L̄ are movable (> 0).
    max_steps : bound on improvement steps.

    Examples
    --------
    >>> from sparkbalance.planning.synthetic import fig4_workload
    >>> w = fig4_workload(routed=False)
    >>> p = Readj(theta=0.0, sigma=0.1).plan(w)
    >>> p.loads_after.tolist()
    [10.0, 10.0]
    """

    name = "Readj"
    criterion = "c"

    def __init__(self, theta: float = DEFAULT_THETA, max_table=DEFAULT_MAX_TABLE,
                 beta: float = DEFAULT_BETA, *,
                 sigma: float = DEFAULT_SIGMA, max_steps: int = DEFAULT_MAX_STEPS,
                 **kwargs) -> None:
        super().__init__(theta, max_table, beta, **kwargs)
        check_real(sigma, "sigma", strict=True)
        if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) \
                or max_steps < 0:
            raise ValueError(f"max_steps={max_steps!r}; expected an int >= 0")
        self.sigma = float(sigma)
        self.max_steps = int(max_steps)

    @property
    def params(self):
        return {**super().params, "sigma": self.sigma, "max_steps": self.max_steps}

    def _solve(self, ctx: PlanningContext) -> Trial:
        c0, S0, cnt0, home0, cur0 = ctx.base
        u = Units(c0, S0, cnt0, home0, cur0, ctx.in_table, ctx.crit, ctx.n)
        n = ctx.n
        thresh = self.sigma * ctx.mean
        # tracked units hold one key each (compact records of heavy keys are split)
        heavy = np.flatnonzero(u.view("c") >= thresh).tolist()
        tracked: list[int] = []
        for v in heavy:
            while u.cnt[v] > 1:
                tracked.append(u.split(v, 1))
            tracked.append(v)
        T = np.asarray(sorted(tracked), dtype=np.int64)
        is_tracked = np.zeros(u.N, dtype=bool)
        is_tracked[T] = True
        # 1. restore: untracked keys with an entry go back to their hash home
        back = np.flatnonzero(u.view("in_table") & ~is_tracked)
        u.asg[back] = u.home[back]
        for v in back.tolist():
            u.reason[v] = f"Readj restore: cost below σ·L̄ = {thresh:.4g}, back to hash home"
        stale_dropped = len(ctx.stale)  # untracked by definition
        table = int((u.view("asg") != u.view("home")).astype(np.int64)
                    @ u.view("cnt"))
        L = u.loads()
        cap = ctx.cap_theta + ctx.tol
        c, S = u.c, u.S
        s0 = max(float(np.median(S[T])) * 1e-6 if T.size else 0.0, 1e-12)
        steps = 0
        a_max = self.max_table
        while T.size and steps < self.max_steps:
            dmax = int(np.argmax(L))
            if L[dmax] <= cap:
                break
            asg = u.asg
            onmax = T[asg[T] == dmax]
            if onmax.size == 0:
                break
            best = (0.0, None)
            # single moves: k on d_max -> d
            ck = c[onmax][:, None]
            newpair = np.maximum(L[dmax] - ck, L[None, :] + ck)
            gain = L[dmax] - newpair
            gain[:, dmax] = 0.0
            dmig = np.where(asg[onmax] == u.cur[onmax], S[onmax], 0.0)[:, None] \
                - np.where(np.arange(n)[None, :] == u.cur[onmax][:, None], S[onmax][:, None],
                           0.0)
            dtab = (np.arange(n)[None, :] != u.home[onmax][:, None]).astype(np.int64) \
                - (dmax != u.home[onmax]).astype(np.int64)[:, None]
            score = gain / (np.maximum(dmig, 0.0) + s0)
            score[gain <= ctx.tol] = -np.inf
            if a_max is not None:
                score[table + dtab > a_max] = -np.inf
            i, d = np.unravel_index(int(np.argmax(score)), score.shape)
            if np.isfinite(score[i, d]):
                best = (float(score[i, d]), ("move", int(onmax[i]), int(d)))
            # pairwise swaps: k on d_max with j elsewhere, c(j) < c(k)
            others = T[asg[T] != dmax]
            if others.size:
                dj = asg[others]
                delta = c[onmax][:, None] - c[others][None, :]
                newpair = np.maximum(L[dmax] - delta, L[dj][None, :] + delta)
                gain = np.where(delta > 0, L[dmax] - newpair, 0.0)
                mig_k = np.where(asg[onmax] == u.cur[onmax], S[onmax], 0.0)[:, None] \
                    - np.where(dj[None, :] == u.cur[onmax][:, None], S[onmax][:, None], 0.0)
                mig_j = (np.where(asg[others] == u.cur[others], S[others], 0.0)
                         - np.where(u.cur[others] == dmax, S[others], 0.0))[None, :]
                tab_k = (dj[None, :] != u.home[onmax][:, None]).astype(np.int64) \
                    - (dmax != u.home[onmax]).astype(np.int64)[:, None]
                tab_j = ((dmax != u.home[others]).astype(np.int64)
                         - (dj != u.home[others]).astype(np.int64))[None, :]
                score = gain / (np.maximum(mig_k + mig_j, 0.0) + s0)
                score[gain <= ctx.tol] = -np.inf
                if a_max is not None:
                    score[table + tab_k + tab_j > a_max] = -np.inf
                i, j = np.unravel_index(int(np.argmax(score)), score.shape)
                if np.isfinite(score[i, j]) and score[i, j] > best[0]:
                    best = (float(score[i, j]), ("swap", int(onmax[i]), int(others[j])))
            if best[1] is None:
                break
            kind, k, x = best[1]
            if kind == "move":
                table += int(x != u.home[k]) - int(dmax != u.home[k])
                self._move(u, L, k, x, f"Readj: best single move off hottest partition {dmax}")
            else:
                dj = int(u.asg[x])
                table += int(dj != u.home[k]) - int(dmax != u.home[k])
                table += int(dmax != u.home[x]) - int(dj != u.home[x])
                self._move(u, L, k, dj, f"Readj: swapped with key unit {x} off hottest "
                                        f"partition {dmax}")
                self._move(u, L, x, dmax, f"Readj: swapped onto partition {dmax}")
            steps += 1
        loads = u.loads()
        t = Trial(units=u, n_back=int(back.size), table_size=u.table_size(0),
                  stale_dropped=stale_dropped, est_loads=loads, est_migration=u.migration(),
                  counters={"steps": steps, "tracked": int(T.size)},
                  balanced=bool(loads.max() <= cap), criterion="c")
        ctx.trials.append(t)
        return t

    @staticmethod
    def _move(u: Units, L: np.ndarray, k: int, d: int, why: str) -> None:
        src = int(u.asg[k])
        w = u.c[k] * u.cnt[k]
        L[src] -= w
        L[d] += w
        u.asg[k] = d
        prev = u.reason.get(k)
        u.reason[k] = why if prev is None else f"{prev}; then {why}"
