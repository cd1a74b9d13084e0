"""A_max as a hard limit (Fang et al. §2.2: |R'| <= A_max is a constraint, not a wish).

A plan within any A_max always exists — every key at its hash home, the empty table — so a
planner that controls the table (MinTable, Mixed, MixedBF) never returns |R'| > A_max
unless the caller opts in (``Planner(allow_overflow=True)``). When none of its trials fits,
:func:`enforce_limit` returns the best-balanced plan within the limit and says so.

Functions over a :class:`~sparkbalance.planning.base.PlanningContext` and its trials; the
planners' base class calls them (this module imports no planner: the two protocols below
name what it reads of them).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol

from .trial import Trial


class _Context(Protocol):
    """What the limit reads of a planner's context
    (:class:`sparkbalance.planning.base.PlanningContext`, which imports this module)."""

    stale: Any
    table_entries: int
    cap_theta: float
    tol: float
    trials: list[Trial]

    def trial(self, n_back: int, criterion: str | None = None) -> Trial: ...


class _Planner(Protocol):
    """What the limit reads of a planner (:class:`sparkbalance.planning.base.Planner`)."""

    max_table: int | None
    controls_table: bool
    allow_overflow: bool

__all__ = ["better", "within_limit", "enforce_limit"]


def better(a: Trial, b: Trial, max_table: int | None, tol: float) -> bool:
    """Trial ``a`` beats ``b``: it fits A_max when ``b`` does not, else (same fit) it has a
    lower maximum load by more than ``tol``.

    Examples
    --------
    >>> from types import SimpleNamespace as T
    >>> import numpy as np
    >>> a = T(fits=lambda m: True, est_loads=np.array([5., 5.]))
    >>> b = T(fits=lambda m: False, est_loads=np.array([4., 4.]))
    >>> better(a, b, 3, 1e-9), better(b, a, 3, 1e-9)
    (True, False)
    """
    fa, fb = a.fits(max_table), b.fits(max_table)
    if fa != fb:
        return fa
    return float(a.est_loads.max()) < float(b.est_loads.max()) - tol


def _retally(ctx: _Context, t: Trial, note: str) -> Trial:
    """A new trial over ``t.units`` after they were changed in place."""
    u = t.units
    loads = u.loads()
    out = replace(t, table_size=u.table_size(len(ctx.stale) - t.stale_dropped),
                  est_loads=loads, est_migration=u.migration(),
                  counters={**t.counters, "limited": 1, "limit_note": note},
                  balanced=bool(loads.max() <= ctx.cap_theta + ctx.tol))
    u.pack()
    ctx.trials.append(out)
    return out


def within_limit(ctx: _Context, max_table: int) -> Trial:
    """Best-balanced plan with |R'| <= ``max_table`` built from MinTable's trial.

    MinTable's trial (full cleaning, highest c first: the smallest table the heuristics
    know) keeps only its ``max_table`` heaviest entries, the rest go home; the empty table
    (every key home) is the other candidate; the one of lower maximum load wins. Balance
    is then usually missed (``Plan.feasible`` is False).
    """
    R = ctx.table_entries
    cut = ctx.trial(R, criterion="c")
    cut.units.truncate_table(max_table)
    cut = _retally(ctx, cut, f"MinTable's plan cut to its {max_table} heaviest entries")
    empty = ctx.trial(R, criterion="c")
    empty.units.truncate_table(0)
    empty = _retally(ctx, empty, "every key at its hash home")
    return min((cut, empty), key=lambda t: float(t.est_loads.max()))


def enforce_limit(planner: _Planner, ctx: _Context, t: Trial
                  ) -> tuple[Trial, str]:
    """The trial to realise and a status for ``Plan.info["max_table_status"]``.

    "within" when ``t`` fits; for planners that do not control the table (LLFD, MinMig)
    an overflow is only reported; otherwise the best-balanced fitting trial (or
    :func:`within_limit`) replaces ``t``, unless ``planner.allow_overflow`` and ``t`` is
    better balanced.
    """
    a_max = planner.max_table
    if a_max is None or t.fits(a_max):
        return t, "within"
    if not planner.controls_table:
        return t, "exceeded (this planner does not control the table)"
    fit = [x for x in ctx.trials if x.fits(a_max)]
    best = min(fit, key=lambda x: (float(x.est_loads.max()), x.est_migration), default=None)
    cut = within_limit(ctx, a_max)
    if best is None or float(cut.est_loads.max()) < float(best.est_loads.max()):
        best = cut
    if planner.allow_overflow and float(t.est_loads.max()) < float(
            best.est_loads.max()) - ctx.tol:
        return t, (f"exceeded: |R'| = {t.table_size} > A_max = {a_max} "
                   "(allow_overflow=True; no balanced plan within the limit found)")
    return best, (f"no balanced plan within A_max = {a_max} found; best plan within the "
                  f"limit returned (|R'| = {best.table_size})")
