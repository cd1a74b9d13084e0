"""Hot-key split planner for skewed joins: which keys to cut, into how many pieces, where.

Pure numpy (never imports pyspark); the DataFrame join (:mod:`sparkbalance.spark.sql.join`)
turns a :class:`SplitPlan` into SQL. With ``n`` partitions and the mean load
``L̄ = sum(c) / n`` (c = cost per key):

* a key is **heavy** when ``c > threshold * L̄``; it is cut into
  ``s = min(n, ceil(c / (threshold * L̄)))`` equal pieces on ``s`` distinct partitions
  (rows of the split side go to one piece each, rows of the other side to every piece);
* keys above ``placed_fraction * L̄`` (at most ``max_placed`` of them, the costliest) are
  **placed whole**, like a routing-table entry (Fang et al.), so the medium keys that
  hashing would pile up are spread too;
* every other key stays at its **hash home** ``stable_hash(k) mod n``.

Heavy and placed keys go, in decreasing order of cost, to the least loaded partitions given
the hashed load (LPT, Graham 1969). Why not AQE's skew join: it splits a partition only
when it is both > 5x the median and > 256 MB (defaults), by map-output ranges, and leaves
moderately skewed partitions (say 1.6x the mean) alone; planning per key from statistics
balances the work after the join whatever the thresholds.

Examples
--------
>>> from sparkbalance.stats.keystats import KeyStats
>>> p = plan_split(KeyStats.from_counts({"hot": 90, "a": 5, "b": 5}), 4)
>>> p.pieces["hot"]
(0, 1, 2, 3)
>>> p.explain("hot").split(":")[1].split(";")[0].strip()
'heavy, cost 90 = 3.6 L̄ > threshold 0.5 L̄ (L̄ = 25)'
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..routing.base import check_num_partitions
from ..routing.hash import HashPartitioner, home_partitions
from ..stats.keystats import KeyStats, as_key_array

__all__ = ["SplitPlan", "plan_split", "DEFAULT_SPLIT_THRESHOLD", "DEFAULT_PLACED_FRACTION",
           "DEFAULT_MAX_PLACED"]

#: A key is heavy when its cost exceeds this fraction of the mean partition load L̄; it is
#: cut into pieces of at most this fraction of L̄ (half a partition: a piece never
#: dominates the partition it lands on).
DEFAULT_SPLIT_THRESHOLD = 0.5
#: Keys above this fraction of L̄ are placed whole by the greedy (a table entry) ...
DEFAULT_PLACED_FRACTION = 0.02
#: ... at most this many of them (the SQL map literal of the join stays small).
DEFAULT_MAX_PLACED = 2000


def _py(k: Any) -> Any:
    return k.item() if isinstance(k, np.generic) else k


@dataclass(frozen=True)
class SplitPlan:
    """Hot-key split: heavy key -> the partitions its pieces go to; other keys -> ``base``.

    Attributes
    ----------
    base : the hash partition function of the keys not in ``pieces``.
    pieces : key -> sorted partitions (one for a key placed whole, several for a split key).
    split_side : "left" or "right", the join side whose heavy keys are cut.
    loads : planned cost per partition.
    mean : L̄, the mean partition load the thresholds are relative to.
    threshold, placed_fraction, max_placed : the parameters of :func:`plan_split`.
    keys, cost : the statistics planned from (for :meth:`explain`).
    """

    base: HashPartitioner
    pieces: Mapping[Any, tuple[int, ...]]
    split_side: str
    loads: np.ndarray
    mean: float = 0.0
    threshold: float = DEFAULT_SPLIT_THRESHOLD
    placed_fraction: float = DEFAULT_PLACED_FRACTION
    max_placed: int = DEFAULT_MAX_PLACED
    keys: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=object), repr=False)
    cost: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)

    def summary(self) -> str:
        """One line: how many keys were split or placed, and the planned max/avg load."""
        mean = self.loads.mean() if self.loads.size else 0.0
        ratio = float(self.loads.max() / mean) if mean > 0 else 1.0
        split = [p for p in self.pieces.values() if len(p) > 1]
        return (f"{len(split)} heavy keys of the {self.split_side} side split into "
                f"{sum(map(len, split))} pieces, {len(self.pieces) - len(split)} keys placed "
                f"whole; planned max/avg load {ratio:.3f}")

    def explain(self, key: Any = None) -> str:
        """Why ``key`` was split, placed whole or left at its hash home, with the numbers.

        Without a key: :meth:`summary`.

        Examples
        --------
        >>> p = plan_split(KeyStats.from_counts({"hot": 90, "a": 5, "b": 5}), 4)
        >>> p.explain("a").split(";")[0]
        "key 'a': medium, cost 5 = 0.2 L̄ > placed fraction 0.02 L̄ and rank 2 <= max_placed 2000"
        """
        if key is None:
            return self.summary()
        key = _py(key)
        index = {_py(k): i for i, k in enumerate(self.keys)}
        L = self.mean
        if key not in index:
            return (f"key {key!r}: not in the statistics; stays at its hash home partition "
                    f"{self.base(key)}")
        c = float(self.cost[index[key]])
        rel = c / L if L > 0 else 0.0
        head = f"key {key!r}: "
        where = self.pieces.get(key)
        if L <= 0:
            return head + f"every cost is 0 (L̄ = 0): nothing to balance; hash home {self.base(key)}"
        if c > self.threshold * L:
            s = min(self.base.num_partitions, max(1, math.ceil(c / (self.threshold * L))))
            return (head + f"heavy, cost {c:g} = {rel:.3g} L̄ > threshold {self.threshold:g} L̄ "
                    f"(L̄ = {L:g}); cut into s = min(n, ceil(c / ({self.threshold:g} L̄))) = {s} "
                    f"pieces of {c / s:g} on the least loaded partitions {list(where)}")
        # rank among all keys by cost (1 = costliest), ties by position as in the planner
        rank = 1 + int(np.sum(self.cost > c)) + int(np.sum(self.cost[:index[key]] == c))
        if where is not None:
            return (head + f"medium, cost {c:g} = {rel:.3g} L̄ > placed fraction "
                    f"{self.placed_fraction:g} L̄ and rank {rank} <= max_placed "
                    f"{self.max_placed}; placed whole on the least loaded partition "
                    f"{where[0]} (hash home {self.base(key)})")
        if c > self.placed_fraction * L:
            return (head + f"cost {c:g} = {rel:.3g} L̄ > placed fraction "
                    f"{self.placed_fraction:g} L̄ but rank {rank} > max_placed "
                    f"{self.max_placed}; stays at its hash home {self.base(key)}")
        return (head + f"light, cost {c:g} = {rel:.3g} L̄ <= placed fraction "
                f"{self.placed_fraction:g} L̄ (L̄ = {L:g}); stays at its hash home "
                f"{self.base(key)}")


def plan_split(stats: KeyStats | tuple[Sequence[Any], Sequence[float]], num_partitions: int,
               *, split_side: str = "left", threshold: float = DEFAULT_SPLIT_THRESHOLD,
               placed_fraction: float = DEFAULT_PLACED_FRACTION,
               max_placed: int = DEFAULT_MAX_PLACED) -> SplitPlan:
    """Choose the heavy keys, their pieces, and where every piece goes (greedy LPT).

    Parameters
    ----------
    stats : KeyStats, or a pair ``(keys, cost)`` of equal-length arrays.
    num_partitions : n >= 1.
    split_side : "left" or "right", recorded for the join.
    threshold : heavy keys cost more than ``threshold * L̄``; pieces at most that (> 0).
    placed_fraction : keys above ``placed_fraction * L̄`` are placed whole
        (0 <= fraction <= threshold).
    max_placed : at most this many keys placed whole or split (the costliest).

    Returns
    -------
    SplitPlan

    Examples
    --------
    >>> p = plan_split((["hot", "a", "b"], [90.0, 5.0, 5.0]), 4)
    >>> len(p.pieces["hot"]), float(p.loads.sum())
    (4, 100.0)
    """
    n = check_num_partitions(num_partitions)
    if split_side not in ("left", "right"):
        raise ValueError(f"split_side={split_side!r}; expected 'left' or 'right'")
    if not threshold > 0:
        raise ValueError(f"threshold={threshold!r}; expected > 0")
    if not 0 <= placed_fraction <= threshold:
        raise ValueError(f"placed_fraction={placed_fraction!r}; expected 0 <= fraction <= "
                         f"threshold={threshold}")
    if isinstance(stats, KeyStats):
        keys, cost = stats.keys, stats.cost
    else:
        keys, cost = stats
        keys = as_key_array(keys)
        cost = np.asarray(cost, dtype=np.float64)
        if cost.shape != (len(keys),):
            raise ValueError(f"cost has shape {cost.shape}; expected ({len(keys)},), one cost "
                             "per key")
    mean = float(cost.sum()) / n
    order = np.argsort(-cost, kind="stable")
    placed = np.zeros(len(cost), dtype=bool)
    if mean > 0:
        top = order[:max(0, int(max_placed))]
        placed[top[cost[top] > placed_fraction * mean]] = True
        placed[cost > threshold * mean] = True  # heavy keys are always split
    home = home_partitions(keys, n)
    loads = np.bincount(home[~placed], weights=cost[~placed], minlength=n).astype(np.float64)
    pieces: dict[Any, tuple[int, ...]] = {}
    for i in order:
        if not placed[i]:
            continue
        # c / L̄ first: threshold·L̄ underflows to 0 for subnormal costs (hypothesis found it)
        r = cost[i] / mean / threshold     # inf when mean is subnormal: then split fully
        s = n if not math.isfinite(r) or r >= n else int(max(1, math.ceil(r)))
        chosen = np.argsort(loads, kind="stable")[:s]
        loads[chosen] += cost[i] / s
        pieces[_py(keys[i])] = tuple(sorted(int(c) for c in chosen))
    return SplitPlan(HashPartitioner(n), pieces, split_side, loads, mean, float(threshold),
                     float(placed_fraction), int(max_placed), keys, cost)
