"""Defaults of Xing et al. (Table 2) and the argument checks shared by the planners.

Loads are in units of node capacity (the paper normalises CPU utilisation to 1 per node);
planners take ``capacity`` to rescale other units (e.g. seconds of work per batch).
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["DEFAULT_EPSILON", "DEFAULT_DELTA", "DEFAULT_THETA", "DEFAULT_WINDOW",
           "POLICIES", "check_series", "check_num_nodes", "check_assignment",
           "check_movable", "check_sizes", "check_nonneg", "check_capacity"]

#: ε, load balancing threshold: a node pair acts only when its mean loads differ by more
#: than ε (Xing et al., Table 2: 0.1 of a node's capacity).
DEFAULT_EPSILON: float = 0.1
#: δ, score threshold for selective operator exchange (Xing et al., Table 2 and §3.3.3).
DEFAULT_DELTA: float = 0.2
#: θ, correlation improvement threshold (Xing et al., Table 2, §3.3.4 and §3.4).
DEFAULT_THETA: float = 0.8
#: k, number of samples in the statistics window (Xing et al., Table 2 and §2.3).
DEFAULT_WINDOW: int = 10

#: Unit selection policies: "correlation" (the paper's scores), "largest" (largest load
#: first, the LLF baseline) and "random" (the RAND baseline).
POLICIES = ("correlation", "largest", "random")


def check_series(series: Any) -> np.ndarray:
    """An (m, k) float array of non-negative, finite loads (unit × sample).

    Examples
    --------
    >>> check_series([[1, 2], [3, 4]]).shape
    (2, 2)
    """
    s = np.asarray(series, dtype=np.float64)
    if s.ndim != 2 or s.shape[1] < 1:
        raise ValueError(f"series has shape {s.shape}; expected (m units, k >= 1 samples)")
    if not np.all(np.isfinite(s)):
        raise ValueError("series has non-finite values; expected finite loads >= 0")
    if s.size and s.min() < 0:
        raise ValueError(f"series has a load {s.min()!r}; expected loads >= 0")
    return s


def check_num_nodes(num_nodes: Any) -> int:
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, (int, np.integer)):
        raise TypeError(f"num_nodes={num_nodes!r}; expected an int >= 1")
    if num_nodes < 1:
        raise ValueError(f"num_nodes={num_nodes!r}; expected >= 1")
    return int(num_nodes)


def check_assignment(assignment: Any, m: int, n: int | None) -> np.ndarray:
    """The node of each of the m units, each in [0, n) (any node >= 0 when n is None)."""
    a = np.asarray(assignment)
    if a.shape != (m,):
        raise ValueError(f"assignment has shape {a.shape}; expected ({m},), one node per unit")
    if m and not np.issubdtype(a.dtype, np.integer):
        if not np.all(np.equal(np.mod(a, 1), 0)):
            raise ValueError(f"assignment has dtype {a.dtype}; expected integer node indices")
    a = a.astype(np.int64)
    if m and n is None and a.min() < 0:
        raise ValueError(f"assignment names node {int(a.min())}; expected nodes >= 0")
    if m and n is not None and (a.min() < 0 or a.max() >= n):
        raise ValueError(f"assignment names nodes {int(a.min())}..{int(a.max())}; "
                         f"expected 0 <= node < num_nodes={n}")
    return a


def check_movable(movable: Any, m: int) -> np.ndarray:
    if movable is None:
        return np.ones(m, dtype=bool)
    mv = np.asarray(movable, dtype=bool)
    if mv.shape != (m,):
        raise ValueError(f"movable has shape {mv.shape}; expected ({m},), one flag per unit")
    return mv


def check_sizes(sizes: Any, m: int) -> np.ndarray | None:
    if sizes is None:
        return None
    s = np.asarray(sizes, dtype=np.float64)
    if s.shape != (m,) or not np.all(np.isfinite(s)) or (m and s.min() < 0):
        raise ValueError(f"sizes has shape {s.shape}; expected ({m},) finite values >= 0")
    return s


def check_nonneg(name: str, value: Any, upper: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}={value!r}; expected a number >= 0")
    hi = np.inf if upper is None else upper
    if not (0 <= value <= hi) or np.isnan(value):
        rng = ">= 0" if upper is None else f"in [0, {upper:g}]"
        raise ValueError(f"{name}={value!r}; expected a number {rng}")
    return float(value)


def check_capacity(capacity: Any) -> float:
    if isinstance(capacity, bool) or not isinstance(capacity,
                                                    (int, float, np.integer, np.floating)):
        raise TypeError(f"capacity={capacity!r}; expected a number > 0")
    if not (np.isfinite(capacity) and capacity > 0):
        raise ValueError(f"capacity={capacity!r}; expected a finite number > 0")
    return float(capacity)
