"""Statistics: per-key counts/costs/sizes, sketches, and the planners' Workload (pure)."""
from __future__ import annotations

import importlib
from typing import Any

from .keystats import KeyStats
from .workload import Workload, imbalance, imbalance_lower_bound

__all__ = ["KeyStats", "Workload", "imbalance", "imbalance_lower_bound", "SpaceSaving"]

# Modules written alongside (SpaceSaving, time weights...) are exposed lazily by name.
_LAZY = {
    "SpaceSaving": "sparkbalance.stats.spacesaving",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'sparkbalance.stats' has no attribute {name!r}")
