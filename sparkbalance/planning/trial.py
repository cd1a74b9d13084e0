"""One trial of a routing-table planner: Phases I–III of Fang et al. §3 run for one n_back.

The planners (:mod:`sparkbalance.planning.base`) make trials and choose among them; the
A_max rule (:mod:`sparkbalance.planning.limit`) compares and cuts them. Both import this
module, and neither imports the other's module for it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from .units import Units

__all__ = ["Trial"]


@dataclass
class Trial:
    """One run of Phases I–III for a given n_back."""

    units: Units
    n_back: int
    table_size: int
    stale_dropped: int
    est_loads: np.ndarray
    est_migration: float
    counters: Mapping[str, int]
    balanced: bool
    criterion: str = "gamma"

    def fits(self, max_table: int | None) -> bool:
        return max_table is None or self.table_size <= max_table

    def feasible(self, max_table: int | None) -> bool:
        return self.balanced and self.fits(max_table)
