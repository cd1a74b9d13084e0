"""Partial Key Grouping's baselines and variants (Nasir et al., ICDE 2015, §6.2 Q1–Q2).

Q1 compares PKG against key-grouping schemes that keep one partition per key:

* **PoTC** (static power of two choices): a new key goes to the less-loaded of its two
  PKG candidates and stays there (a routing table with one entry per key);
* **On-Greedy**: a new key goes to the least-loaded partition of all, and stays there;
* **Off-Greedy**: keys sorted by decreasing frequency (the whole distribution is known in
  advance), each to the least-loaded partition (LPT) — "an unfair comparison for online
  algorithms".

Q2 compares PKG's load estimate: global knowledge (G) against local estimation per source
(L, :class:`~sparkbalance.routing.pkg.PKGPartitioner`) and local estimation with periodic
probing (LP: every ``period`` records the local vector is set to the workers' actual load).
:class:`ProbingPKGPartitioner` covers G (period 1, probe = the true loads) and LP.

The online schemes see *global* load: one instance is the global oracle of the paper's
simulation (every record of the stream passes through it). In Spark each map task would
unpickle its own instance (loads and the per-key table reset, as for PKG), so these are
simulation baselines: the strategy registry does not offer them.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from .base import PartitionFunction
from .hash import home_partition
from .pkg import PKGPartitioner, pkg_candidates

__all__ = ["PoTCPartitioner", "OnGreedyPartitioner", "OffGreedyPartitioner",
           "ProbingPKGPartitioner", "off_greedy_routes"]


class _StickyGreedy(PartitionFunction):
    """Key grouping with a choice made once per key from the loads seen so far.

    The instance keeps the chosen partition of every key seen and a load vector (records
    per partition). ``assign`` replays a fresh instance (pure), as PKG's does.
    """

    def __init__(self, num_partitions: int) -> None:
        super().__init__(num_partitions)
        self._memo = None          # the choice table below is the memory; no memo
        self._table: dict[Any, int] = {}
        self._loads = [0.0] * self.num_partitions

    def _choose(self, key: Any, loads: list[float]) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def partition(self, key: Any) -> int:
        p = self._table.get(key)
        if p is None:
            p = self._table[key] = self._choose(key, self._loads)
        self._loads[p] += 1.0
        return p

    __call__ = partition

    def assign(self, keys: Iterable[Any] | np.ndarray) -> np.ndarray:
        g = self.fresh()
        items = keys.tolist() if isinstance(keys, np.ndarray) else list(keys)
        return np.fromiter(map(g.partition, items), dtype=np.int64, count=len(items))

    def fresh(self) -> "_StickyGreedy":
        g = type(self).__new__(type(self))
        g.__dict__.update(self.__dict__)
        g._table = {}
        g._loads = [0.0] * self.num_partitions
        return g

    @property
    def table_size(self) -> int:
        """Entries of the per-key choice table (the cost PKG's key splitting avoids)."""
        return len(self._table)

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_memo"], state["_table"] = None, {}
        state["_loads"] = [0.0] * self.num_partitions
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._memo = None


class PoTCPartitioner(_StickyGreedy):
    """Static PoTC: a new key takes the less-loaded of its two PKG candidates, for good.

    Examples
    --------
    >>> f = PoTCPartitioner(4)
    >>> out = f.assign(["a", "b", "a", "a"]).tolist()
    >>> out[0] == out[2] == out[3] and out[0] in pkg_candidates("a", 4)
    True
    """

    def _choose(self, key: Any, loads: list[float]) -> int:
        a, b = pkg_candidates(key, self.num_partitions)
        return a if loads[a] <= loads[b] else b


class OnGreedyPartitioner(_StickyGreedy):
    """On-Greedy: a new key goes to the least-loaded partition of all, for good.

    Examples
    --------
    >>> OnGreedyPartitioner(2).assign(["a", "a", "b", "c"]).tolist()
    [0, 0, 1, 1]
    """

    def _choose(self, key: Any, loads: list[float]) -> int:
        return int(np.argmin(loads))


def off_greedy_routes(frequencies: Mapping[Any, float], num_partitions: int) -> dict[Any, int]:
    """Off-Greedy's table: keys by decreasing frequency, each to the least-loaded partition.

    Ties in frequency keep the mapping's order (deterministic).

    Examples
    --------
    >>> off_greedy_routes({"a": 5, "b": 3, "c": 2, "d": 1}, 2)
    {'a': 0, 'b': 1, 'c': 1, 'd': 0}
    """
    keys = list(frequencies)
    f = np.asarray([float(frequencies[k]) for k in keys])
    order = np.argsort(-f, kind="stable")
    loads = np.zeros(int(num_partitions))
    out: dict[Any, int] = {}
    for i in order.tolist():
        d = int(np.argmin(loads))
        out[keys[i]] = d
        loads[d] += f[i]
    return out


class OffGreedyPartitioner(PartitionFunction):
    """Off-Greedy: a fixed key -> partition table from known frequencies (LPT order).

    Keys outside ``frequencies`` go to their hash home.

    Examples
    --------
    >>> f = OffGreedyPartitioner({"a": 5, "b": 3, "c": 2}, 2)
    >>> f.assign(["a", "b", "c"]).tolist()
    [0, 1, 1]
    """

    def __init__(self, frequencies: Mapping[Any, float], num_partitions: int) -> None:
        super().__init__(num_partitions)
        self.routes = off_greedy_routes(frequencies, self.num_partitions)

    def partition(self, key: Any) -> int:
        p = self.routes.get(key)
        return home_partition(key, self.num_partitions) if p is None else p


class ProbingPKGPartitioner(PKGPartitioner):
    """PKG whose local load vector is reset to the workers' actual loads every ``period``
    records (Nasir et al. §6.2 Q2, "LP"); ``period=1`` with the true loads is the global
    oracle "G".

    Parameters
    ----------
    num_partitions : n >= 1.
    probe : callable returning the actual load per partition (a sequence of n numbers).
    period : probe every this many records routed by this instance (>= 1).

    Examples
    --------
    >>> truth = [0.0, 0.0]
    >>> f = ProbingPKGPartitioner(2, probe=lambda: truth, period=1)
    >>> p = f("k"); truth[p] += 1; f.local_loads == truth
    True
    """

    def __init__(self, num_partitions: int, probe: Callable[[], Sequence[float]],
                 period: int = 1) -> None:
        super().__init__(num_partitions)
        if isinstance(period, bool) or not isinstance(period, (int, np.integer)) or period < 1:
            raise ValueError(f"period={period!r}; expected an int >= 1")
        if not callable(probe):
            raise TypeError(f"probe={probe!r}; expected a callable returning n loads")
        self.probe = probe
        self.period = int(period)
        self._since = 0

    def __call__(self, key: Any) -> int:
        if self._since % self.period == 0:
            loads = [float(x) for x in self.probe()]
            if len(loads) != self.num_partitions:
                raise ValueError(f"probe returned {len(loads)} loads; expected "
                                 f"{self.num_partitions}")
            self._loads = loads
        self._since += 1
        return super().__call__(key)

    def partition(self, key: Any) -> int:
        return self(key)

    def assign(self, keys: Iterable[Any] | np.ndarray) -> np.ndarray:
        """Route the sequence through this instance (probing is stateful by nature)."""
        items = keys.tolist() if isinstance(keys, np.ndarray) else list(keys)
        return np.fromiter(map(self, items), dtype=np.int64, count=len(items))
