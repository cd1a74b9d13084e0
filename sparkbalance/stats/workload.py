"""The planners' input: keys with cost, state size, hash home and current destination."""
from __future__ import annotations

import numbers
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


def _table_routes(keys: np.ndarray, home: np.ndarray, current: Any) -> np.ndarray | None:
    """F(k) of integer keys under a routing table: the hash homes already computed, with
    the table's entries written over them; None when this shortcut does not apply.

    ``RoutingTablePartitioner.assign`` hashes every key again and indexes all of them in a
    Python dict (at 10^7 keys a third of a plan's time and about 1 GB); only the table's
    few entries need a lookup. An entry matches an integer key when it equals it under
    Python equality (``1.0``, ``True`` and ``Decimal(1)`` match ``1``, as in a dict).
    """
    from ..routing.table import RoutingTablePartitioner
    if type(current) is not RoutingTablePartitioner or keys.dtype.kind not in "iu":
        return None
    routes = current.table.routes
    cur = home.copy()
    if not len(routes) or not len(keys):
        return cur
    ent_k, ent_p = [], []
    info = np.iinfo(keys.dtype)
    lo, hi = int(info.min), int(info.max)
    for k, p in routes.items():
        if type(k) is int:   # the common entry: no float or Decimal to compare
            if lo <= k <= hi:
                ent_k.append(k)
                ent_p.append(int(p))
            continue
        if isinstance(k, numbers.Number) and not isinstance(k, complex):
            try:
                ik = int(k)
            except (ValueError, OverflowError, TypeError):   # NaN, inf
                continue
            if ik == k and lo <= ik <= hi:
                ent_k.append(ik)
                ent_p.append(int(p))
    if not ent_k:
        return cur
    ek = np.asarray(ent_k, dtype=keys.dtype)
    ep = np.asarray(ent_p, dtype=np.int64)
    if keys.shape[0] > 1 and bool(np.all(keys[1:] > keys[:-1])):
        # sorted distinct keys (as listed statistics usually are): look the few entries up
        # among the keys, not every key among the entries (10^7 binary searches)
        pos = np.minimum(np.searchsorted(keys, ek), keys.shape[0] - 1)
        hit = keys[pos] == ek
        cur[pos[hit]] = ep[hit]    # entries are distinct: dict keys equal as ints are one
        return cur
    o = np.argsort(ek, kind="stable")
    ek, ep = ek[o], ep[o]
    pos = np.minimum(np.searchsorted(ek, keys), ek.shape[0] - 1)
    hit = ek[pos] == keys
    cur[hit] = ep[pos[hit]]
    return cur


@dataclass(frozen=True)
class Workload:
    """Keys of one statistics window as parallel numpy arrays (Fang et al. notation).

    ``cost`` = c(k), ``memory`` = S(k), ``home`` = h(k), ``current`` = F(k) today.
    Planners take this and never hash.

    ``tail_load`` is the cost of the keys the statistics do not list (bounded statistics:
    the heaviest keys exactly, the rest as one total). Those many light keys stay on their
    hash homes, so each partition carries about ``tail_load / n`` of them: :meth:`loads`
    and :attr:`mean_load` include that share. Without it L̄ came from the listed keys
    only and, with a large tail, the planners aimed at a bound far below the real one.

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
    tail_load: float = 0.0

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
        tail = float(self.tail_load)
        if not (np.isfinite(tail) and tail >= 0):
            raise ValueError(f"tail_load={self.tail_load!r}; expected a finite number >= 0")
        object.__setattr__(self, "tail_load", tail)

    @classmethod
    def from_stats(cls, stats: KeyStats, current: "PartitionFunction | None",
                   num_partitions: int) -> "Workload":
        """Workload of ``stats`` routed today by ``current`` (None: plain hash).

        The unlisted tail's cost is ``tail_count`` times the listed keys' mean cost per
        record (their cost per record when cost = counts: exact)."""
        num_partitions = check_num_partitions(num_partitions)
        home = home_partitions(stats.keys, num_partitions)
        if current is None:
            cur = home
        else:
            if current.num_partitions != num_partitions:
                raise ValueError(f"current partitioner has {current.num_partitions} partitions; "
                                 f"expected num_partitions={num_partitions}")
            cur = _table_routes(stats.keys, home, current)
            if cur is None:
                cur = current.assign(stats.keys)
        tail = 0.0
        if stats.tail_count > 0:
            per_record = stats.total_cost / stats.total_count if stats.total_count > 0 else 1.0
            tail = stats.tail_count * per_record
        return cls(stats.keys, stats.cost, stats.memory, home, cur, num_partitions, tail)

    def __len__(self) -> int:
        return int(self.keys.shape[0])

    @property
    def total_cost(self) -> float:
        """Σ c(k) over the listed keys (the tail is :attr:`tail_load`)."""
        return float(self.cost.sum())

    @property
    def tail_share(self) -> float:
        """The unlisted tail's load on each partition, ``tail_load / n``."""
        return self.tail_load / self.num_partitions

    @property
    def mean_load(self) -> float:
        """L̄ = (Σ c(k) + tail) / n."""
        return (self.total_cost + self.tail_load) / self.num_partitions

    def loads(self, assignment: np.ndarray | None = None) -> np.ndarray:
        """L(d) for every partition under ``assignment`` (default: ``current``), the
        tail's even share included."""
        a = self.current if assignment is None else np.asarray(assignment, dtype=np.int64)
        out = np.bincount(a, weights=self.cost, minlength=self.num_partitions).astype(np.float64)
        if self.tail_load > 0:
            out += self.tail_share
        return out

    def imbalance(self, assignment: np.ndarray | None = None) -> float:
        """λ = max L(d) / L̄ under ``assignment`` (default: ``current``)."""
        return imbalance(self.loads(assignment))

    @property
    def imbalance_lower_bound(self) -> float:
        """max(1, (max c(k) + tail share) / L̄)."""
        if self.tail_load <= 0 or len(self) == 0:
            return imbalance_lower_bound(self.cost, self.num_partitions)
        return max(1.0, (float(self.cost.max()) + self.tail_share) / self.mean_load)

    def migration_cost(self, assignment: np.ndarray) -> float:
        """M = Σ S(k) over keys whose destination differs from ``current``."""
        moved = np.asarray(assignment, dtype=np.int64) != self.current
        return float(self.memory[moved].sum())
