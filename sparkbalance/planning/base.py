"""Common frame of the routing-table planners (Fang et al. §3: cleaning, preparing, assigning).

A planner is configured in ``__init__`` (validated parameters only) and does its work in
``plan(workload, table=None) -> Plan``. Subclasses choose the selection criterion and how
many table entries Phase I moves back (``_solve`` calls ``ctx.trial(n_back)`` as often as
it likes; each trial works on a fresh copy of the units).
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Mapping

import numpy as np

from ..routing.table import RoutingTable
from ..stats.workload import Workload
from .checks import check_real
from .compact import DEFAULT_DEGREE, Records, compact as make_records, realise_records
from .limit import better, enforce_limit
from .llfd import run_llfd
from .plan import Plan, realise_plan
from .trial import Trial
from .units import Units

__all__ = ["Planner", "Trial", "PlanningContext", "DEFAULT_THETA", "DEFAULT_MAX_TABLE",
           "DEFAULT_BETA", "CRITERIA", "selection_criterion"]

#: θ_max, Fang et al. Table 2 default tolerance (0.08).
DEFAULT_THETA: float = 0.08
#: A_max, Fang et al. Table 2 default routing-table size (3·10^3).
DEFAULT_MAX_TABLE: int = 3000
#: β, Fang et al. §3.2 / Appendix C: migration selection factor default 1.5.
DEFAULT_BETA: float = 1.5

#: Selection criteria (higher first): "c" = highest computation cost first (MinTable),
#: "gamma" = highest γ(k) = c(k)^β / S(k) first (MinMig, Mixed), "density" = c / S.
CRITERIA = ("c", "gamma", "density")
#: Phase II stopping rules: the paper's prefix, or the prefix of keys that fit (see Planner).
PHASE2_VARIANTS = ("paper", "fit")


def selection_criterion(c: np.ndarray, S: np.ndarray, criterion: str, beta: float
                        ) -> np.ndarray:
    """Per-key priority for Phase II and exchangeable sets (higher is taken first).

    γ = c^β / S (Fang et al. §3.2); S = 0 gives +inf (free to move), c = 0 gives 0.

    Examples
    --------
    >>> selection_criterion(np.array([4., 1.]), np.array([8., 0.]), "gamma", 1.5).tolist()
    [1.0, inf]
    """
    c = np.asarray(c, dtype=np.float64)
    if criterion == "c":
        return c.copy()
    out = c ** beta if criterion == "gamma" else c.copy()
    pos = np.asarray(S) > 0
    # in place: one new array, not five (each 80 MB of fresh pages at 10^7 keys)
    np.divide(out, S, out=out, where=pos)
    out[~pos] = np.inf
    out[c <= 0] = 0.0
    return out


class PlanningContext:
    """Everything a trial needs: the base units, the cap, the table, the cleaning order."""

    def __init__(self, planner: "Planner", workload: Workload, table: RoutingTable,
                 records: Records | None) -> None:
        w = workload
        self.workload = w
        self.table = table
        self.records = records
        self.n = w.num_partitions
        self.theta = planner.theta
        # The planners move listed keys only; the unlisted tail adds the same share t to
        # every partition, so L(d) + t <= (1 + θ)(L̄_listed + t) is a bound on listed
        # loads of (1 + θ) L̄_listed + θ t: with bounded statistics a looser bound than
        # (1 + θ) L̄_listed, which planned harder (more moves) than the data needs.
        tail = w.tail_share
        self.mean = w.mean_load - tail
        self.cap = (1.0 + planner.theta) * self.mean + planner.theta * tail
        self.tol = 1e-9 * max(self.mean, 1e-300)
        self.criterion = planner.criterion
        self.beta = planner.beta
        self.phase2 = planner.phase2
        if records is None:
            c, S = w.cost, w.memory
            # one key per unit: a read-only view of a single 1 (units of single keys never
            # write cnt) instead of 80 MB of ones at 10^7 keys
            cnt = np.broadcast_to(np.ones(1, dtype=np.int64), (len(w),))
            home, cur = w.home, w.current
        else:
            c, S, cnt, home, cur = (records.c, records.S, records.count, records.home,
                                    records.current)
        self.base = (c, S, cnt, home, cur)
        # θ is out of reach when a key is heavier than the cap; the best any key-grouping
        # can do is max c(k) (the lower bound LB·L̄), so LLFD balances to that level
        # instead of scattering the rest (extension; feasible stays False).
        self.cap_theta = self.cap
        if len(c):
            self.cap = max(self.cap, float(np.max(c)))
        self._crit: dict[str, np.ndarray] = {}
        self.crit = self._criterion(self.criterion)
        in_table = cur != home
        self.in_table = in_table
        # Entries of the old table that no present key with F(k) != h(k) accounts for:
        # keys absent from the statistics (S unknown: 0) or redundant entries (route ==
        # home). Moving them back changes no load and no state: Phase I drops them first.
        routed = set(w.keys[w.current != w.home].tolist()) if len(table) else set()
        self.stale = [(k, p) for k, p in table.items() if k not in routed]
        # Cleaning order for Mixed (Fang et al. Algorithm 4 line 1): smallest S(k) first.
        tab = np.flatnonzero(in_table)
        self.clean_order = tab[np.argsort(S[tab], kind="stable")]
        self.table_entries = len(self.stale) + int(cnt[tab].sum())
        self.trials: list[Trial] = []
        # (n_back, criterion) -> (that trial, a snapshot of its units): Phases I-III are
        # deterministic, and the planners ask for the same trial again (MinTable's trial
        # by the Theorem 2 guard, then twice by A_max's limit).
        self._done: dict[tuple[int, str | None], tuple[Trial, Any]] = {}

    def _criterion(self, key: str) -> np.ndarray:
        """The selection criterion ``key`` of the base units, computed once per plan."""
        if key not in self._crit:
            c, S = self.base[:2]
            # "c" ranks by c itself (never written): no 80 MB copy at 10^7 keys
            self._crit[key] = (c if key == "c" and c.dtype == np.float64 else
                               selection_criterion(c, S, key, self.beta))
        return self._crit[key]

    @property
    def criterion_name(self) -> str:
        return {"c": "highest cost first", "gamma": f"highest γ=c^{self.beta:g}/S first",
                "density": "highest c/S first"}[self.criterion]

    def trial(self, n_back: int, criterion: str | None = None) -> Trial:
        """Phases I–III with ``n_back`` table entries moved back (smallest S first).

        ``criterion`` overrides the planner's selection criterion for this trial.
        """
        n_back = int(max(0, min(n_back, self.table_entries)))
        done = self._done.get((n_back, criterion))
        if done is not None:
            t = replace(done[0], units=done[0].units.restore(done[1]))
            self.trials.append(t)
            return t
        c, S, cnt, home, cur = self.base
        key = criterion or self.criterion
        u = Units(c, S, cnt, home, cur, self.in_table, self._criterion(key), self.n,
                  single=self.records is None)
        stale_dropped = min(n_back, len(self.stale))
        u.move_back(n_back - stale_dropped, self.clean_order)
        name = self.criterion_name if criterion is None else criterion
        floor = self.mean if self.phase2 == "fit" else None
        C = u.prepare(self.cap, self.tol, name, floor)
        counters = run_llfd(u, C, self.cap, self.tol, self.criterion)
        loads = u.loads()
        est_mig = u.migration()
        t = Trial(units=u, n_back=n_back,
                  table_size=u.table_size(len(self.stale) - stale_dropped),
                  stale_dropped=stale_dropped, est_loads=loads, est_migration=est_mig,
                  counters=counters, balanced=bool(loads.max() <= self.cap_theta + self.tol),
                  criterion=criterion or self.criterion)
        self.trials.append(t)
        self._done[(n_back, criterion)] = (t, u.snapshot())   # packs u (see Units.pack)
        return t


class Planner:
    """Base class: parameters in ``__init__``, the work in :meth:`plan`.

    Parameters
    ----------
    theta : θ_max >= 0, tolerated relative overload: every L(d) <= (1 + θ_max)·L̄.
    max_table : A_max >= 0 or None (unbounded), the routing-table size limit.
    beta : β >= 0 in γ(k) = c(k)^β / S(k) (Fang et al. §3.2).
    criterion : override the selection criterion ("c", "gamma", "density").
    compact : False (exact keys), True (records with the default HLHE degree) or a degree
        ε >= 1 (Fang et al. §4).
    phase2 : "paper" (default): Phase II takes the criterion-order prefix until the
        partition is no longer overloaded; "fit": same, skipping keys whose removal alone
        would take the partition below L̄ (less state moved when S ∝ c; extension).
    allow_overflow : planners that control the table (``controls_table``: MinTable,
        Mixed, MixedBF) never return |R'| > A_max by default: when none of their trials
        fits, they return the best-balanced plan within the limit and say so in
        ``Plan.info["max_table_status"]``. True keeps the best-balanced trial even when
        it exceeds A_max (the table limit becomes advisory).
    """

    name = "planner"
    criterion = "gamma"
    default_max_table: int | None = DEFAULT_MAX_TABLE
    #: True when the planner enforces A_max (Fang et al.: MinTable, Mixed); LLFD and
    #: MinMig cannot control the table, they only report it (``Plan.feasible``).
    controls_table: bool = False

    def __init__(self, theta: float = DEFAULT_THETA, max_table: int | None | str = "default",
                 beta: float = DEFAULT_BETA, *, criterion: str | None = None,
                 compact: bool | float = False, phase2: str = "paper",
                 allow_overflow: bool = False) -> None:
        theta = check_real(theta, "theta")
        if isinstance(max_table, str):
            if max_table != "default":
                raise ValueError(f"max_table={max_table!r}; expected an int >= 0 or None")
            max_table = self.default_max_table
        if max_table is not None:
            if isinstance(max_table, bool) or not isinstance(max_table, (int, np.integer)):
                raise TypeError(f"max_table={max_table!r}; expected an int >= 0 or None")
            if max_table < 0:
                raise ValueError(f"max_table={max_table}; expected >= 0 or None")
            max_table = int(max_table)
        beta = check_real(beta, "beta")
        if criterion is not None:
            if criterion not in CRITERIA:
                raise ValueError(f"criterion={criterion!r}; expected one of {CRITERIA}")
            self.criterion = criterion
        if compact is True:
            degree: float | None = float(DEFAULT_DEGREE)
        elif compact is False or compact is None:
            degree = None
        elif isinstance(compact, (int, float, np.integer, np.floating)) and compact >= 1:
            degree = float(compact)
        else:
            raise ValueError(f"compact={compact!r}; expected False, True or a degree >= 1")
        if phase2 not in PHASE2_VARIANTS:
            raise ValueError(f"phase2={phase2!r}; expected one of {PHASE2_VARIANTS}")
        if not isinstance(allow_overflow, (bool, np.bool_)):
            raise TypeError(f"allow_overflow={allow_overflow!r}; expected True or False")
        self.allow_overflow = bool(allow_overflow)
        self.phase2 = phase2
        self.theta = float(theta)
        self.max_table = max_table
        self.beta = float(beta)
        self.degree = degree

    @property
    def params(self) -> dict[str, Any]:
        return {"theta": self.theta, "max_table": self.max_table, "beta": self.beta,
                "criterion": self.criterion, "compact": self.degree or False,
                "phase2": self.phase2, "allow_overflow": self.allow_overflow}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({args})"

    def plan(self, workload: Workload, table: RoutingTable | Mapping[Any, int] | None = None
             ) -> Plan:
        """Plan the next routing table for ``workload`` (current table ``table``).

        ``table`` = None derives the entries from the workload (keys with current != home).
        """
        t0 = time.perf_counter()
        if not isinstance(workload, Workload):
            raise TypeError(f"workload is {type(workload).__name__}; expected a Workload")
        if table is None:
            w = workload
            idx = np.flatnonzero(w.current != w.home)
            table = RoutingTable(zip(w.keys[idx].tolist(), w.current[idx].tolist()))
        elif not isinstance(table, RoutingTable):
            table = RoutingTable(table)
        if len(table) and table.max_partition() >= workload.num_partitions:
            raise ValueError(f"table routes to partition {table.max_partition()}; expected < "
                             f"num_partitions={workload.num_partitions}")
        records = make_records(workload, self.degree) if self.degree is not None else None
        ctx = PlanningContext(self, workload, table, records)
        if len(workload) == 0 or ctx.mean <= 0:
            best = ctx.trial(0)
        else:
            best = self._solve(ctx)
        return self._finish(ctx, best, t0)

    def _solve(self, ctx: PlanningContext) -> Trial:  # pragma: no cover - abstract
        raise NotImplementedError

    def _no_worse_than_llfd(self, ctx: PlanningContext, t: Trial) -> Trial:
        """Theorem 2 guard: when trial ``t`` misses θ or A_max, also try LLFD's highest-cost-first
        criterion (with t's cleaning, with none — LLFD itself — and with all — MinTable)
        and keep the best-balanced trial, preferring trials that fit the table. The paper
        states Theorem 2 for Mixed; its heuristics alone do not always honour it (our
        property test found counter-examples), so we enforce it.
        """
        if (t.balanced and t.fits(self.max_table)) or ctx.criterion == "c":
            return t
        best = t
        for nb in sorted({t.n_back, 0, ctx.table_entries}):
            alt = ctx.trial(nb, criterion="c")
            if better(alt, best, self.max_table, ctx.tol):
                best = alt
        return best

    def _repair_exact(self, ctx: PlanningContext, assignment: np.ndarray, stale: int,
                      reasons: dict) -> tuple[np.ndarray, int]:
        """Exact touch-up of a compact plan (extension of §4.1).

        Records plan on discretised costs, so a realised partition can exceed the cap by
        the discretisation error. Re-run Phases II–III on exact keys, but only over the
        keys of the still-overloaded partitions; every other partition is one fixed
        pseudo-unit carrying its load (never selected, never ejected). Kept only when it
        lowers the maximum load without breaking the table limit.
        """
        w = ctx.workload
        n = ctx.n
        L = np.bincount(assignment, weights=w.cost, minlength=n)
        cap = max(ctx.cap_theta, float(w.cost.max()) if len(w) else 0.0)
        over = L > cap + ctx.tol
        if not over.any():
            return assignment, 0
        idx = np.flatnonzero(over[assignment])
        rest = np.bincount(assignment[idx], weights=w.cost[idx], minlength=n)
        fixed = np.flatnonzero(~over)
        k = idx.shape[0]
        c = np.concatenate([w.cost[idx], L[fixed] - rest[fixed]])
        S = np.concatenate([w.memory[idx], np.zeros(fixed.shape[0])])
        home = np.concatenate([w.home[idx], fixed])
        cur = np.concatenate([assignment[idx], fixed])
        crit = selection_criterion(c, S, ctx.criterion, ctx.beta)
        crit[k:] = -np.inf
        u = Units(c, S, np.ones(c.shape[0], dtype=np.int64), home, cur,
                  np.zeros(c.shape[0], dtype=bool), crit, n)
        C = u.prepare(cap, ctx.tol, "exact touch-up, " + ctx.criterion_name,
                      ctx.mean if self.phase2 == "fit" else None)
        run_llfd(u, C, cap, ctx.tol, ctx.criterion)
        new = assignment.copy()
        new[idx] = u.asg[:k]
        L2 = np.bincount(new, weights=w.cost, minlength=n)
        size = stale + int(np.count_nonzero(new != w.home))
        old_size = stale + int(np.count_nonzero(assignment != w.home))
        fits = self.max_table is None or size <= max(self.max_table, old_size)
        if L2.max() < L.max() - ctx.tol and fits:
            changed = idx[u.asg[:k] != assignment[idx]]
            for i in changed.tolist():
                j = int(np.searchsorted(idx, i))
                reasons[i] = u.reason.get(j, "exact touch-up of the compact plan")
            return new, int(changed.shape[0])
        return assignment, 0

    def _finish(self, ctx: PlanningContext, best: Trial, t0: float) -> Plan:
        best, status = enforce_limit(self, ctx, best)
        u = best.units
        w = ctx.workload
        reasons_units = u.reason
        if ctx.records is None:
            assignment = u.view("asg").copy()
            reasons = reasons_units
        else:
            assignment, reasons = realise_records(ctx.records, u.view("origin"),
                                                  u.view("asg"), u.view("cnt"), None,
                                                  reasons_units)
        kept = dict(ctx.stale[best.stale_dropped:])
        records_assignment = assignment
        repaired = 0
        if ctx.records is not None:
            assignment, repaired = self._repair_exact(ctx, assignment, len(kept), reasons)
        info = {"n_back": best.n_back, "trials": len(ctx.trials),
                "trial_n_back": [t.n_back for t in ctx.trials],
                "estimated_loads_after": best.est_loads,
                "estimated_migration": best.est_migration,
                "units": u.N, "lower_bound": w.imbalance_lower_bound,
                "max_table_status": status, **best.counters}
        if ctx.records is not None:
            info["records"] = len(ctx.records)
            info["degree"] = ctx.records.degree
            info["records_assignment"] = records_assignment
            info["repair_moves"] = repaired
        plan = realise_plan(w, ctx.table, assignment, kept, theta=self.theta,
                            max_table=self.max_table, seconds=0.0, planner=self.name,
                            params=self.params, info=info, reasons=reasons)
        return replace(plan, seconds=time.perf_counter() - t0)


