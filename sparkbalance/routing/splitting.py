"""Splitting partition functions: deterministic candidates + a stateful least-load selector.

The shape of Storm's ``PartialKeyGrouping`` (STYLE.md): one function makes a key's candidate
partitions *deterministically* (the same set on every process), one selector picks among
them with a *local* load estimate. PKG (Nasir et al.), D/W-Choices (Nasir et al. ICDE 2016) and
TAG (Yang et al.) differ only in the candidates and in how much one record weighs on a
partition (1 record, or ``t_i`` seconds for TAG's ``l_i = t_i * m_i``).

Per-map-task state
------------------
PySpark pickles ``partitionFunc`` into every map task's closure and unpickles it separately
in each task. The load vector therefore lives on the instance and is reset on pickling
(``__getstate__`` ships zeros, ``__setstate__`` resets): every map task is one independent
"source" with its own estimate, exactly Nasir et al.'s local load estimation (§3.2). Calling an
instance on the driver mutates its vector; :meth:`SplittingPartitioner.reset` clears it.

``assign(keys)`` is defined as *what a fresh map task would choose for this sequence of
records*: it replays the selector from zero loads and never reads or changes the instance,
so it is deterministic and ``f.assign(keys) == [g(k) for k in keys]`` with ``g = f.fresh()``.
"""
from __future__ import annotations

import copy
from abc import abstractmethod
from typing import Any, Iterable, Sequence

import numpy as np

from .base import PartitionFunction

__all__ = ["SplittingPartitioner", "greedy_select", "distinct_inverse"]


def distinct_inverse(keys: Iterable[Any] | np.ndarray) -> tuple[list[Any], np.ndarray]:
    """Distinct keys in first-seen order and, per record, the index of its distinct key."""
    items = keys.tolist() if isinstance(keys, np.ndarray) else list(keys)
    index: dict[Any, int] = {}
    distinct: list[Any] = []
    inverse = np.empty(len(items), dtype=np.int64)
    for j, k in enumerate(items):
        u = index.get(k)
        if u is None:
            u = index[k] = len(distinct)
            distinct.append(k)
        inverse[j] = u
    return distinct, inverse


def greedy_select(candidates: Sequence[Sequence[int]], inverse: np.ndarray, num_partitions: int,
                  weights: Sequence[float] | None = None) -> np.ndarray:
    """Replay the least-loaded-candidate selector over a record sequence from zero loads.

    ``candidates[u]`` are the candidates of distinct key ``u``; ``inverse[j]`` the distinct
    key of record ``j``. Choosing partition ``i`` adds ``weights[i]`` (default 1) to its
    load. Ties go to the earliest candidate. Returns the partition of every record.

    Examples
    --------
    >>> greedy_select([(0, 1)], np.zeros(4, dtype=np.int64), 2).tolist()
    [0, 1, 0, 1]
    """
    loads = [0.0] * num_partitions
    w = [1.0] * num_partitions if weights is None else [float(x) for x in weights]
    rows = [tuple(int(c) for c in row) for row in candidates]
    out = np.empty(len(inverse), dtype=np.int64)
    for j, u in enumerate(inverse.tolist()):
        cand = rows[u]
        best = cand[0]
        bl = loads[best]
        for c in cand[1:]:
            if loads[c] < bl:
                best, bl = c, loads[c]
        loads[best] = bl + w[best]
        out[j] = best
    return out


class SplittingPartitioner(PartitionFunction):
    """Base of the key-splitting routers: ``candidates(key)`` + least local load selector.

    Subclasses implement :meth:`candidates` (deterministic, non-empty tuple of partitions)
    and may set ``self._weights`` (load added per record on each partition; default 1).
    """

    splits_keys = True

    def __init__(self, num_partitions: int) -> None:
        super().__init__(num_partitions)
        self._weights: list[float] | None = None
        self._loads: list[float] = [0.0] * self.num_partitions

    @abstractmethod
    def candidates(self, key: Any) -> tuple[int, ...]:
        """The partitions ``key`` may be routed to (deterministic; raises on bad keys)."""

    def candidates_of(self, keys: Iterable[Any] | np.ndarray) -> list[tuple[int, ...]]:
        """:meth:`candidates` of every key (a list of tuples; lengths may differ)."""
        items = keys.tolist() if isinstance(keys, np.ndarray) else list(keys)
        return [self.candidates(k) for k in items]

    def __call__(self, key: Any) -> int:
        memo = self._memo  # key -> candidates: deterministic, so safe to cache per process
        cand = None
        if memo is not None:
            try:
                cand = memo.get(key)
            except TypeError:  # unhashable: candidates() raises the clear hashing error
                pass
        if cand is None:
            cand = self.candidates(key)
            self._remember(key, cand)
        else:
            self._hits += 1
        loads = self._loads
        best = cand[0]
        bl = loads[best]
        for c in cand[1:]:
            if loads[c] < bl:
                best, bl = c, loads[c]
        w = self._weights
        loads[best] = bl + (1.0 if w is None else w[best])
        return best

    def partition(self, key: Any) -> int:
        """Route one record (same as calling the instance: updates the local loads)."""
        return self(key)

    def assign(self, keys: Iterable[Any] | np.ndarray) -> np.ndarray:
        """Partitions a *fresh* map task would choose for this record sequence (pure)."""
        distinct, inverse = distinct_inverse(keys)
        if not distinct:
            return np.empty(0, dtype=np.int64)
        return greedy_select(self.candidates_of(distinct), inverse, self.num_partitions,
                             self._weights)

    @property
    def local_loads(self) -> list[float]:
        """This instance's local load estimate per partition (records, or seconds for TAG)."""
        return list(self._loads)

    def reset(self) -> None:
        """Zero the local load vector (as in a new map task)."""
        self._loads = [0.0] * self.num_partitions

    def fresh(self) -> "SplittingPartitioner":
        """A copy with zero local loads (what each map task unpickles)."""
        g = copy.copy(self)
        g._memo = {}
        g._hits = 0
        g._loads = [0.0] * self.num_partitions
        return g

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_loads"] = [0.0] * self.num_partitions
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._loads = [0.0] * self.num_partitions
