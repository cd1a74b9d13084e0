"""Synthetic workloads of Fang et al. §5: Zipf key frequencies and interval fluctuation.

Used by tests, benchmarks and demos (pure numpy).

* :func:`zipf_counts` — per-key tuple counts of one interval, frequency ∝ rank^-z.
* :func:`fluctuate` — the §5 generator: "keeps swapping frequencies between keys from
  different task instances until the change on workload is significant enough". The
  threshold formula was lost in extraction; our reading: swap the costs of random key pairs
  (drawn proportionally to frequency, the keys on different partitions) until
  Σ_d |L_t(d) − L_{t−1}(d)| >= f · θ_ref · Σ_d L(d), with θ_ref = 0.08 (the default
  tolerance): f = 1 shifts as much load as the balance tolerance allows, so every interval
  needs a rebalance.
"""
from __future__ import annotations

import numpy as np

from ..stats.workload import Workload
from .base import DEFAULT_THETA

__all__ = ["zipf_counts", "zipf_workload", "fluctuate", "fig4_workload", "FLUCTUATION_REF"]

#: θ_ref of the fluctuation threshold above (Fang et al. default θ_max).
FLUCTUATION_REF: float = DEFAULT_THETA


def zipf_counts(num_keys: int, z: float = 0.85, tuples_per_key: float = 20.0,
                rng: np.random.Generator | int | None = 0) -> np.ndarray:
    """Tuple counts of ``num_keys`` keys, frequency ∝ rank^-z, ≈ tuples_per_key·K tuples.

    Examples
    --------
    >>> c = zipf_counts(1000, 0.85, rng=1)
    >>> bool(c[0] > c[10] > c[500]), c.shape
    (True, (1000,))
    """
    rng = np.random.default_rng(rng)
    if num_keys < 1:
        raise ValueError(f"num_keys={num_keys}; expected >= 1")
    p = np.arange(1, num_keys + 1, dtype=np.float64) ** (-float(z))
    p /= p.sum()
    total = int(tuples_per_key * num_keys)
    return rng.multinomial(total, p).astype(np.float64)


def zipf_workload(num_keys: int, num_partitions: int, z: float = 0.85,
                  rng: np.random.Generator | int | None = 0, tuples_per_key: float = 20.0,
                  memory_factor: float = 1.0) -> Workload:
    """A Zipf workload routed by a (simulated) hash: home = current = random partition.

    Keys are ``0..K-1``; cost = counts, memory = ``memory_factor`` · counts (window w = 1).

    Examples
    --------
    >>> w = zipf_workload(1000, 4, rng=2)
    >>> len(w), w.num_partitions
    (1000, 4)
    """
    rng = np.random.default_rng(rng)
    cost = zipf_counts(num_keys, z, tuples_per_key, rng)
    home = rng.integers(0, num_partitions, num_keys)
    keys = np.arange(num_keys, dtype=np.int64)
    return Workload(keys, cost, memory_factor * cost, home, home.copy(), num_partitions)


def fluctuate(cost: np.ndarray, assignment: np.ndarray, num_partitions: int, f: float = 1.0,
              rng: np.random.Generator | int | None = 0, ref: float = FLUCTUATION_REF,
              max_swaps: int = 1_000_000) -> np.ndarray:
    """Next interval's costs: swap costs of random key pairs until the load shift >= f·ref.

    Examples
    --------
    >>> c = np.array([5., 4., 1., 1.]); a = np.array([0, 1, 0, 1])
    >>> new = fluctuate(c, a, 2, f=1.0, rng=0)
    >>> sorted(new.tolist()) == sorted(c.tolist())
    True
    """
    rng = np.random.default_rng(rng)
    c = np.asarray(cost, dtype=np.float64).copy()
    a = np.asarray(assignment, dtype=np.int64)
    total = c.sum()
    if f <= 0 or total <= 0 or num_partitions < 2:
        return c
    L0 = np.bincount(a, weights=c, minlength=num_partitions)
    L = L0.copy()
    target = f * ref * total
    p = c / total
    swaps = 0
    while np.abs(L - L0).sum() < target and swaps < max_swaps:
        batch = rng.choice(c.shape[0], size=(64, 2), p=p)
        for i, j in batch.tolist():
            if a[i] == a[j] or c[i] == c[j]:
                continue
            di = c[j] - c[i]
            L[a[i]] += di
            L[a[j]] -= di
            c[i], c[j] = c[j], c[i]
            swaps += 1
            if np.abs(L - L0).sum() >= target:
                break
    return c


def fig4_workload(routed: bool = True) -> Workload:
    """The six keys of Fang et al. Fig. 4 on two partitions: costs 7, 4, 5, 2, 1, 1 (total
    20), keys 0-2 on partition 0 (load 16 against 4). ``routed``: keys 1 and 2 are there by
    the routing table, their hash home is partition 1 (Fig. 4's table); else by hash.

    Examples
    --------
    >>> w = fig4_workload()
    >>> w.home.tolist(), w.current.tolist(), float(w.cost.sum())
    ([0, 1, 1, 1, 1, 1], [0, 0, 0, 1, 1, 1], 20.0)
    """
    current = [0, 0, 0, 1, 1, 1]
    return Workload(keys=np.arange(6), cost=[7., 4., 5., 2., 1., 1.], memory=np.ones(6),
                    home=[0, 1, 1, 1, 1, 1] if routed else current, current=current,
                    num_partitions=2)

