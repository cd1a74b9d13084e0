"""Heavy hitters: the keys whose relative frequency reaches a threshold (pure).

D-/W-Choices (Nasir et al. 2016) and time-aware grouping (Yang et al. §3.3.2) give such
keys more candidate partitions; this module finds them, from exact counts or through a
SpaceSaving summary, and hands the routing layer plain ``{key: p_k}`` values.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .keystats import KeyStats

__all__ = ["heavy_hitters", "HEAVY_METHODS"]

#: How :func:`heavy_hitters` finds the keys.
HEAVY_METHODS = ("exact", "spacesaving")


def heavy_hitters(stats: KeyStats, threshold: float, *, method: str = "exact"
                  ) -> dict[Any, float]:
    """Keys of ``stats`` with relative frequency ``>= threshold``, as ``{key: p_k}``.

    ``method="exact"`` reads the counts; ``"spacesaving"`` runs them through a
    ``SpaceSaving.for_epsilon(threshold)`` summary (what a streaming source would keep) and
    returns its candidates (a superset of the true heavy keys, frequencies overestimated).

    Examples
    --------
    >>> heavy_hitters(KeyStats.from_counts({"a": 8, "b": 1, "c": 1}), 0.2)
    {'a': 0.8}
    """
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold={threshold!r}; expected 0 < threshold <= 1")
    total = float(np.sum(stats.counts))
    if total <= 0:
        return {}
    if method == "exact":
        p = np.asarray(stats.counts, dtype=np.float64) / total
        idx = np.flatnonzero(p >= threshold)
        idx = idx[np.argsort(-p[idx], kind="stable")]
        keys = stats.keys[idx].tolist()
        return dict(zip(keys, p[idx].tolist()))
    if method == "spacesaving":
        from .spacesaving import SpaceSaving
        ss = SpaceSaving.for_epsilon(threshold)
        for k, c in zip(stats.keys.tolist(), np.asarray(stats.counts).tolist()):
            if c > 0:
                ss.update(k, c)
        return {k: c / total for k, c, _ in ss.heavy_hitters(threshold)}
    raise ValueError(f"method={method!r}; expected one of {', '.join(HEAVY_METHODS)}")
