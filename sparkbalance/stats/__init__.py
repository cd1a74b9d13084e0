"""Statistics: per-key counts/costs/sizes, sketches, and the planners' Workload (pure)."""
from __future__ import annotations

from .._lazy import lazy_getattr

from .keystats import KeyStats
from .workload import Workload, imbalance, imbalance_lower_bound

__all__ = ["KeyStats", "Workload", "imbalance", "imbalance_lower_bound", "SpaceSaving",
           "heavy_hitters"]

# Modules written alongside (SpaceSaving, time weights...) are exposed lazily by name.
_LAZY = {
    "SpaceSaving": "sparkbalance.stats.spacesaving",
    "heavy_hitters": "sparkbalance.stats.heavy",
}


__getattr__ = lazy_getattr(__name__, _LAZY)