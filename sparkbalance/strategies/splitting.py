"""Fitters of the splitting strategies: key statistics -> a key-splitting partition function.

"pkg" (Nasir et al. 2015) needs no statistics; "dchoices"/"wchoices" (Nasir et al. 2016) and
"tag" (Yang et al.) find the heavy hitters in the statistics
(:func:`sparkbalance.stats.heavy.heavy_hitters`) and hand them to the routing layer as plain
``{key: p_k}`` values. Shape (see :mod:`sparkbalance.strategies`)::

    fit(stats, num_partitions, *, current=None, **params) -> SplittingPartitioner
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..routing.base import check_num_partitions
from ..routing.choices import DCHOICES_HEADROOM, HEAVY_THRESHOLD_FACTOR, ChoicesPartitioner
from ..routing.pkg import PKGPartitioner
from ..routing.tag import TimeAwarePartitioner
from ..stats.heavy import heavy_hitters
from ..stats.keystats import KeyStats

__all__ = ["fit_pkg", "fit_dchoices", "fit_wchoices", "fit_tag"]


def fit_pkg(stats: KeyStats | None, num_partitions: int, *, current: Any = None
            ) -> PKGPartitioner:
    """Strategy "pkg": PKG needs no statistics (``stats`` and ``current`` are ignored).

    Examples
    --------
    >>> fit_pkg(None, 8).num_partitions
    8
    """
    return PKGPartitioner(check_num_partitions(num_partitions))


def _fit_choices(mode: str, stats: KeyStats | None, num_partitions: int,
                 threshold: float | None, method: str, headroom: float) -> ChoicesPartitioner:
    n = check_num_partitions(num_partitions)
    if stats is None:
        raise ValueError(f"strategy '{mode}choices' needs key statistics; got stats=None")
    theta = HEAVY_THRESHOLD_FACTOR / n if threshold is None else float(threshold)
    heavy = heavy_hitters(stats, min(theta, 1.0), method=method)
    return ChoicesPartitioner(n, heavy, mode=mode, headroom=headroom)


def fit_dchoices(stats: KeyStats | None, num_partitions: int, *, current: Any = None,
                 threshold: float | None = None, method: str = "exact",
                 headroom: float = DCHOICES_HEADROOM) -> ChoicesPartitioner:
    """Strategy "dchoices": heavy keys (p_k >= θ, default 1/(5n)) get ``d_k`` choices.

    Examples
    --------
    >>> f = fit_dchoices(KeyStats.from_counts({"a": 90, **{i: 1 for i in range(10)}}), 4)
    >>> f.num_choices("a")
    4
    """
    return _fit_choices("d", stats, num_partitions, threshold, method, headroom)


def fit_wchoices(stats: KeyStats | None, num_partitions: int, *, current: Any = None,
                 threshold: float | None = None, method: str = "exact") -> ChoicesPartitioner:
    """Strategy "wchoices": heavy keys (p_k >= θ, default 1/(5n)) may go anywhere.

    Examples
    --------
    >>> fit_wchoices(KeyStats.from_counts({"a": 90, "b": 10}), 3).num_choices("a")
    3
    """
    return _fit_choices("w", stats, num_partitions, threshold, method, DCHOICES_HEADROOM)


def fit_tag(stats: KeyStats | None, num_partitions: int, *, current: Any = None,
            completion_times: Sequence[float] | np.ndarray | None = None,
            epsilon: float | None = None, method: str = "spacesaving",
            segment_size: float | None = None, seed: int = 0,
            placement: str = "systematic") -> TimeAwarePartitioner:
    """Strategy "tag": heavy keys (frequency >= ε, default 1/(5n)) found with SpaceSaving.

    ``completion_times`` (t_i per partition, e.g.
    :func:`sparkbalance.stats.timeweights.completion_times`) default to equal times, where
    TAG balances record counts.

    Examples
    --------
    >>> f = fit_tag(KeyStats.from_counts({"a": 90, "b": 5, "c": 5}), 4, completion_times=[1, 1, 1, 2])
    >>> "a" in f.routes
    True
    """
    n = check_num_partitions(num_partitions)
    if stats is None:
        raise ValueError("strategy 'tag' needs key statistics; got stats=None")
    eps = HEAVY_THRESHOLD_FACTOR / n if epsilon is None else float(epsilon)
    heavy = heavy_hitters(stats, min(eps, 1.0), method=method)
    heavy = {k: min(1.0, p) for k, p in heavy.items()}
    return TimeAwarePartitioner(n, completion_times, heavy, segment_size=segment_size, seed=seed,
                                placement=placement)
