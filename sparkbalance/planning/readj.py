"""Readj baseline (placeholder until the full baseline lands)."""
from __future__ import annotations

from .base import Planner, PlanningContext, Trial

__all__ = ["Readj"]


class Readj(Planner):
    name = "Readj"
    criterion = "c"

    def _solve(self, ctx: PlanningContext) -> Trial:
        return ctx.trial(0)
