"""SpaceSaving heavy-hitter summary (Metwally et al. 2005), mergeable (Berinde et al. 2010).

Used by PKG §4.2 (Nasir et al.), by D/W-Choices and by TAG (Yang et al.) to find the heavy keys of a
large key space in bounded memory. The summary keeps at most ``capacity`` counters
``item -> (count, error)`` with, for every kept item of true frequency ``f``::

    count - error <= f <= count                                         (1)

and for every item *not* kept ``f <= floor`` where ``floor <= m / capacity`` (m = total weight
seen). Hence every item with ``f > m / capacity`` is kept; :meth:`SpaceSaving.for_epsilon`
sizes the summary as ``ceil(1/eps) + 1`` counters so that every item with ``f >= eps * m``
is kept (the ``+ 1`` turns the paper's ``>`` into the ``>=`` of ALGORITHMS.md §2).

Weighted updates (``update(item, count)``) keep (1): a new item replaces the minimum counter
and inherits ``floor`` (the bound on any unseen item) as its error.

Merging two summaries follows the mergeable-summaries construction of Agarwal et al. (PODS
2012) for the Misra-Gries / SpaceSaving isomorphism, with Berinde et al.'s error accounting:
add the counts (an item absent from one side counts as that side's ``floor``, which is also
its error), keep the ``capacity`` largest, and raise ``floor`` to the largest count dropped.
Bounds (1) hold after any tree of merges; the floor stays below ``m / capacity``.

Examples
--------
>>> s = SpaceSaving(2)
>>> s.update_many("aababc")
>>> [item for item, _, _ in s.top(1)]
['a']
>>> s.count("a"), s.total
(3, 6)
"""
from __future__ import annotations

import heapq
import itertools
import math
from typing import Any, Hashable, Iterable, Iterator, Mapping

__all__ = ["SpaceSaving"]

# The lazy min-heap is rebuilt when stale entries exceed this factor of the live counters.
_HEAP_SLACK = 4


class SpaceSaving:
    """Bounded-memory frequency summary with one-sided, per-item error bounds.

    Parameters
    ----------
    capacity : int
        Number of counters (>= 1). ``ceil(1/eps) + 1`` guarantees every item of frequency
        ``>= eps * m`` is kept (:meth:`for_epsilon`).

    Examples
    --------
    >>> s = SpaceSaving.for_epsilon(0.25)
    >>> s.update_many([1] * 30 + list(range(2, 12)))
    >>> 1 in s and s.bounds(1) == (30, 30)
    True
    """

    __slots__ = ("capacity", "total", "_counts", "_errors", "_floor", "_heap", "_seq")

    def __init__(self, capacity: int) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"capacity={capacity!r}; expected an int >= 1")
        self.capacity = capacity
        self.total: float = 0          # m: total weight summarised
        self._counts: dict[Any, float] = {}
        self._errors: dict[Any, float] = {}
        self._floor: float = 0         # upper bound on the frequency of any item not kept
        self._heap: list[tuple[float, int, Any]] = []   # lazy (count, seq, item) min-heap
        self._seq = itertools.count()

    @classmethod
    def for_epsilon(cls, epsilon: float) -> "SpaceSaving":
        """Summary keeping every item with frequency ``>= epsilon * m`` (0 < epsilon <= 1)."""
        if not (isinstance(epsilon, (int, float)) and 0 < epsilon <= 1):
            raise ValueError(f"epsilon={epsilon!r}; expected 0 < epsilon <= 1")
        return cls(math.ceil(1.0 / epsilon) + 1)

    # -- updates ------------------------------------------------------------------------
    def update(self, item: Hashable, count: float = 1) -> None:
        """Add ``count`` (> 0) occurrences of ``item``."""
        if not count > 0:
            raise ValueError(f"count={count!r}; expected > 0")
        counts = self._counts
        self.total += count
        c = counts.get(item)
        if c is not None:
            c += count
            counts[item] = c
            self._push(c, item)
            return
        if len(counts) >= self.capacity:
            victim, vcount = self._pop_min()
            del counts[victim]
            del self._errors[victim]
            if vcount > self._floor:
                self._floor = vcount
        floor = self._floor
        counts[item] = floor + count
        self._errors[item] = floor
        self._push(floor + count, item)

    def update_many(self, items: Iterable[Hashable] | Mapping[Hashable, float]) -> None:
        """Add every item of an iterable once, or every ``item: count`` of a mapping."""
        if isinstance(items, Mapping):
            for item, c in items.items():
                self.update(item, c)
        else:
            for item in items:
                self.update(item)

    def merge(self, other: "SpaceSaving") -> "SpaceSaving":
        """A new summary of both streams (capacity = the larger of the two); inputs unchanged.

        Examples
        --------
        >>> a, b = SpaceSaving(3), SpaceSaving(3)
        >>> a.update_many("xxy"); b.update_many("xz")
        >>> m = a.merge(b)
        >>> m.count("x"), m.total
        (3, 5)
        """
        if not isinstance(other, SpaceSaving):
            raise TypeError(f"cannot merge SpaceSaving with {type(other).__name__}")
        cap = max(self.capacity, other.capacity)
        f1, f2 = self._floor_for_absent(), other._floor_for_absent()
        combined: dict[Any, tuple[float, float]] = {}
        for item, c in self._counts.items():
            c2 = other._counts.get(item)
            if c2 is None:
                combined[item] = (c + f2, self._errors[item] + f2)
            else:
                combined[item] = (c + c2, self._errors[item] + other._errors[item])
        for item, c in other._counts.items():
            if item not in combined:
                combined[item] = (c + f1, other._errors[item] + f1)
        ranked = sorted(combined.items(), key=lambda kv: kv[1][0], reverse=True)
        out = SpaceSaving(cap)
        out.total = self.total + other.total
        floor = f1 + f2
        if len(ranked) > cap:
            floor = max(floor, ranked[cap][1][0])
        out._floor = floor
        for item, (c, e) in ranked[:cap]:
            out._counts[item] = c
            out._errors[item] = e
        out._rebuild_heap()
        return out

    # -- queries ------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._counts)

    def __contains__(self, item: object) -> bool:
        return item in self._counts

    def __iter__(self) -> Iterator[Any]:
        return iter(self._counts)

    @property
    def floor(self) -> float:
        """Upper bound on the frequency of any item not in the summary (<= total/capacity)."""
        return self._floor_for_absent()

    def count(self, item: Hashable) -> float:
        """Estimated frequency (an upper bound); ``floor`` for an item not kept."""
        return self._counts.get(item, self._floor_for_absent())

    def error(self, item: Hashable) -> float:
        """Maximum overestimation of :meth:`count` for ``item``."""
        if item in self._counts:
            return self._errors[item]
        return self._floor_for_absent()

    def bounds(self, item: Hashable) -> tuple[float, float]:
        """``(lower, upper)`` bounds on the true frequency of ``item``."""
        if item in self._counts:
            c = self._counts[item]
            return (c - self._errors[item], c)
        return (0, self._floor_for_absent())

    def top(self, k: int | None = None) -> list[tuple[Any, float, float]]:
        """The ``k`` (default all) largest counters as ``(item, count, error)``, count desc."""
        ranked = sorted(self._counts.items(), key=lambda kv: kv[1], reverse=True)
        if k is not None:
            ranked = ranked[: max(0, int(k))]
        return [(item, c, self._errors[item]) for item, c in ranked]

    def heavy_hitters(self, phi: float) -> list[tuple[Any, float, float]]:
        """Candidates with estimated frequency ``>= phi * total`` (a superset of the true ones
        when ``phi * total > floor``), count desc."""
        t = phi * self.total
        return [row for row in self.top() if row[1] >= t]

    def guaranteed(self, threshold: float) -> list[tuple[Any, float, float]]:
        """Items whose frequency is surely ``>= threshold`` (``count - error >= threshold``)."""
        return [row for row in self.top() if row[1] - row[2] >= threshold]

    def guaranteed_top(self, k: int) -> list[tuple[Any, float, float]]:
        """Metwally's guaranteed top-k: the first ``j <= k`` counters whose lower bound is at
        least the next counter's upper bound (so they surely are the top ``j``)."""
        ranked = self.top()
        out = []
        for j in range(min(k, len(ranked))):
            nxt = ranked[j + 1][1] if j + 1 < len(ranked) else self._floor_for_absent()
            if min(c - e for _, c, e in ranked[: j + 1]) >= nxt:
                out = ranked[: j + 1]
        return out

    def as_dict(self) -> dict[Any, float]:
        """``{item: estimated count}``."""
        return dict(self._counts)

    # -- internals ----------------------------------------------------------------------
    def _floor_for_absent(self) -> float:
        return self._floor

    def _push(self, count: float, item: Any) -> None:
        heap = self._heap
        heapq.heappush(heap, (count, next(self._seq), item))
        if len(heap) > _HEAP_SLACK * self.capacity + 64:
            self._rebuild_heap()

    def _rebuild_heap(self) -> None:
        seq = self._seq
        self._heap = [(c, next(seq), item) for item, c in self._counts.items()]
        heapq.heapify(self._heap)

    def _pop_min(self) -> tuple[Any, float]:
        heap, counts = self._heap, self._counts
        while True:
            c, _, item = heapq.heappop(heap)
            if counts.get(item) == c:  # skip stale entries (item updated or evicted since)
                return item, c

    # -- pickling: the heap and sequence are rebuilt --------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        return {"capacity": self.capacity, "total": self.total, "counts": self._counts,
                "errors": self._errors, "floor": self._floor}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.capacity = state["capacity"]
        self.total = state["total"]
        self._counts = dict(state["counts"])
        self._errors = dict(state["errors"])
        self._floor = state["floor"]
        self._seq = itertools.count()
        self._rebuild_heap()

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, SpaceSaving) and other.capacity == self.capacity
                and other.total == self.total and other._counts == self._counts
                and other._errors == self._errors and other._floor == self._floor)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return (f"SpaceSaving(capacity={self.capacity}, kept={len(self)}, total={self.total}, "
                f"floor={self._floor})")
