"""The planners' input: keys with cost, state size, hash home and current destination."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..routing.base import check_num_partitions
from ..routing.hash import home_partitions
from .keystats import KeyStats, as_key_array, as_weight_array

if TYPE_CHECKING:
    from ..routing.base import PartitionFunction

__all__ = ["Workload", "imbalance", "imbalance_lower_bound"]


def imbalance(loads: np.ndarray) -> float:
    """λ = max_d L(d) / L̄ (1.0 is perfect; 1.0 for an idle system).

    Examples
    --------
    >>> imbalance(np.array([3.0, 1.0]))
    1.5
    """
    loads = np.asarray(loads, dtype=np.float64)
    mean = loads.mean() if loads.size else 0.0
    return float(loads.max() / mean) if mean > 0 else 1.0


def imbalance_lower_bound(cost: np.ndarray, num_partitions: int) -> float:
    """LB = max(1, max_k c(k) / L̄): no key-grouping can do better (ALGORITHMS.md notation)."""
    cost = np.asarray(cost, dtype=np.float64)
    total = cost.sum()
    if total <= 0 or cost.size == 0:
        return 1.0
    return max(1.0, float(cost.max()) / (total / num_partitions))


def _as_partition_array(a: Any, n: int, num_partitions: int, name: str) -> np.ndarray:
    arr = np.asarray(a)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} has shape {arr.shape}; expected ({n},), one partition per key")
    if n and arr.dtype.kind not in "iu":
        raise TypeError(f"{name} has dtype {arr.dtype}; expected integer partition indices")
    arr = arr.astype(np.int64, copy=False)
    if n and (arr.min() < 0 or arr.max() >= num_partitions):
        raise ValueError(f"{name} holds partition {int(arr.min())}..{int(arr.max())}; expected "
                         f"0 <= p < num_partitions={num_partitions}")
    return arr


@dataclass(frozen=True)
class Workload:
    """Keys of one statistics window as parallel numpy arrays (Fang et al. notation).

    ``cost`` = c(k), ``memory`` = S(k), ``home`` = h(k), ``current`` = F(k) today.
    Planners take this and never hash.

    Examples
    --------
    >>> w = Workload(keys=np.array([1, 2]), cost=[3.0, 1.0], memory=[1.0, 1.0],
    ...              home=[0, 0], current=[0, 0], num_partitions=2)
    >>> w.loads().tolist(), w.imbalance()
    ([4.0, 0.0], 2.0)
    """

    keys: np.ndarray
    cost: np.ndarray
    memory: np.ndarray
    home: np.ndarray
    current: np.ndarray
    num_partitions: int

    def __post_init__(self) -> None:
        n_parts = check_num_partitions(self.num_partitions)
        keys = as_key_array(self.keys)
        n = keys.shape[0]
        object.__setattr__(self, "num_partitions", n_parts)
        object.__setattr__(self, "keys", keys)
        object.__setattr__(self, "cost", as_weight_array(self.cost, n, "cost"))
        object.__setattr__(self, "memory", as_weight_array(self.memory, n, "memory"))
        object.__setattr__(self, "home", _as_partition_array(self.home, n, n_parts, "home"))
        object.__setattr__(self, "current",
                           _as_partition_array(self.current, n, n_parts, "current"))

    @classmethod
    def from_stats(cls, stats: KeyStats, current: "PartitionFunction | None",
                   num_partitions: int) -> "Workload":
        """Workload of ``stats`` routed today by ``current`` (None: plain hash)."""
        num_partitions = check_num_partitions(num_partitions)
        home = home_partitions(stats.keys, num_partitions)
        if current is None:
            cur = home
        else:
            if current.num_partitions != num_partitions:
                raise ValueError(f"current partitioner has {current.num_partitions} partitions; "
                                 f"expected num_partitions={num_partitions}")
            cur = current.assign(stats.keys)
        return cls(stats.keys, stats.cost, stats.memory, home, cur, num_partitions)

    def __len__(self) -> int:
        return int(self.keys.shape[0])

    @property
    def total_cost(self) -> float:
        return float(self.cost.sum())

    @property
    def mean_load(self) -> float:
        """L̄ = Σ c(k) / n."""
        return self.total_cost / self.num_partitions

    def loads(self, assignment: np.ndarray | None = None) -> np.ndarray:
        """L(d) for every partition under ``assignment`` (default: ``current``)."""
        a = self.current if assignment is None else np.asarray(assignment, dtype=np.int64)
        return np.bincount(a, weights=self.cost, minlength=self.num_partitions).astype(np.float64)

    def imbalance(self, assignment: np.ndarray | None = None) -> float:
        """λ = max L(d) / L̄ under ``assignment`` (default: ``current``)."""
        return imbalance(self.loads(assignment))

    @property
    def imbalance_lower_bound(self) -> float:
        """max(1, max c(k) / L̄)."""
        return imbalance_lower_bound(self.cost, self.num_partitions)

    def migration_cost(self, assignment: np.ndarray) -> float:
        """M = Σ S(k) over keys whose destination differs from ``current``."""
        moved = np.asarray(assignment, dtype=np.int64) != self.current
        return float(self.memory[moved].sum())
