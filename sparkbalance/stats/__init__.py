"""Statistics: per-key counts/costs/sizes, sketches, and the planners' Workload (pure).

:class:`KeyStats` (per-key counts, costs and state sizes) is what a strategy is fitted on;
:class:`Workload` is a planner's input; :class:`SpaceSaving` and :func:`heavy_hitters` find
the hot keys in bounded memory; :func:`time_weighted_stats` turns measured task seconds
into key costs.

Examples
--------
>>> from sparkbalance.stats import KeyStats
>>> s = KeyStats.from_counts({"hot": 30, "cold": 1})
>>> s.total_cost, len(s)
(31.0, 2)
"""
from __future__ import annotations

from .._lazy import lazy_getattr

from .keystats import KeyStats
from .workload import Workload, imbalance, imbalance_lower_bound

__all__ = ["KeyStats", "Workload", "imbalance", "imbalance_lower_bound", "SpaceSaving",
           "heavy_hitters", "time_weighted_stats"]

# Modules written alongside (SpaceSaving, time weights...) are exposed lazily by name.
_LAZY = {
    "SpaceSaving": "sparkbalance.stats.spacesaving",
    "heavy_hitters": "sparkbalance.stats.heavy",
    "time_weighted_stats": "sparkbalance.stats.timeweights",
}


__getattr__ = lazy_getattr(__name__, _LAZY)