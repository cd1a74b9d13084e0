"""The candidate set C of LLFD as a queue (Fang et al. §3.1: keys by decreasing c(k)).

LLFD takes the unit of highest c(k) first and, among equal costs, the one queued first
(a sequence number ``seq``). The planners queue C once (10^5 units at 10^7 keys when a
partition must shed its keys) and then whole exchangeable sets at a time, each already
sortable in one call; a heap of every unit cost a ``heappop`` per unit. Here each batch is
a *run* sorted once, and a small heap holds only the head of every run, so a step costs a
``heapreplace`` on a heap of a few entries. The order is exactly (−c, seq).
"""
from __future__ import annotations

import bisect
import heapq

import numpy as np

__all__ = ["CandidateQueue"]


class CandidateQueue:
    """Units by decreasing cost, ties by the order they were queued in.

    Examples
    --------
    >>> q = CandidateQueue()
    >>> q.push_run(np.array([1.0, 3.0, 3.0]), np.array([10, 11, 12]))
    >>> q.push(5.0, 13)
    >>> [q.pop() for _ in range(4)], q.pop()
    ([13, 11, 12, 10], -1)
    """

    __slots__ = ("_heads", "_keys", "_units", "_seqs", "_pos", "_seq")

    def __init__(self) -> None:
        # heads: (-c, seq, unit, run); run -1 = a unit queued alone
        self._heads: list[tuple[float, int, int, int]] = []
        self._keys: list[list[float]] = []
        self._units: list[list[int]] = []
        self._seqs: list[list[int]] = []
        self._pos: list[int] = []
        self._seq = 0

    def __bool__(self) -> bool:
        return bool(self._heads)

    def push(self, cost: float, unit: int) -> None:
        """Queue one unit of cost ``cost``."""
        heapq.heappush(self._heads, (-cost, self._seq, unit, -1))
        self._seq += 1

    def push_run(self, cost: np.ndarray, units: np.ndarray) -> None:
        """Queue ``units`` (costs ``cost``) in this order, as many :meth:`push` calls would."""
        m = int(units.shape[0])
        if m == 0:
            return
        o = np.argsort(-cost, kind="stable")
        keys = (-cost[o]).tolist()
        seqs = (o + self._seq).tolist()
        self._seq += m
        r = len(self._keys)
        self._keys.append(keys)
        self._units.append(units[o].tolist())
        self._seqs.append(seqs)
        self._pos.append(0)
        heapq.heappush(self._heads, (keys[0], seqs[0], self._units[r][0], r))

    def peek_cost(self) -> float:
        """c of the next unit (the queue must not be empty)."""
        return -self._heads[0][0]

    def block(self) -> tuple[list[float], list[int], int, int]:
        """(−costs, units, lo, hi): the next ``hi - lo`` units are ``units[lo:hi]``, in
        order, with ``-costs[lo:hi]`` their costs (at least one unit; the queue must not
        be empty). Read them, then :meth:`advance` by the number taken.

        The head run's units that come before every other run's head, found by bisection:
        a reader runs over plain lists instead of calling :meth:`pop` per unit.
        """
        heads = self._heads
        key, seq, v, r = heads[0]
        if r < 0:
            return [key], [v], 0, 1
        keys, p = self._keys[r], self._pos[r]
        if len(heads) == 1:
            return keys, self._units[r], p, len(keys)
        key2, seq2 = min(heads[1:3])[:2]       # the second-best head is a child of the root
        hi = bisect.bisect_left(keys, key2, p)
        seqs = self._seqs[r]
        while hi < len(keys) and keys[hi] == key2 and seqs[hi] < seq2:
            hi += 1
        return keys, self._units[r], p, max(hi, p + 1)

    def advance(self, m: int) -> None:
        """Drop the next ``m`` units, all of the run :meth:`block` returned."""
        if m <= 0:
            return
        heads = self._heads
        r = heads[0][3]
        if r < 0:
            heapq.heappop(heads)
            return
        p = self._pos[r] + m
        keys = self._keys[r]
        if p < len(keys):
            self._pos[r] = p
            heapq.heapreplace(heads, (keys[p], self._seqs[r][p], self._units[r][p], r))
        else:
            heapq.heappop(heads)

    def pop(self) -> int:
        """The next unit, or -1 when the queue is empty."""
        heads = self._heads
        if not heads:
            return -1
        _, _, v, r = heads[0]
        if r >= 0:
            p = self._pos[r] + 1
            keys = self._keys[r]
            if p < len(keys):
                self._pos[r] = p
                heapq.heapreplace(heads, (keys[p], self._seqs[r][p], self._units[r][p], r))
                return v
        heapq.heappop(heads)
        return v
