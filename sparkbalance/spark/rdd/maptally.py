"""What the zero-pass map tasks count on the side: records per key group and the heavy keys.

Spark's map-output statistics give the *bytes* of each key group, compressed. Keys that
repeat compress well, so a hot key's group looks far lighter in bytes than in records:
measured on Zipf z = 1.0 (10^5 keys, 120,000 records, m = 512 groups) the hottest group
took 4.3 bytes per record against a median of 10.4, LPT over bytes piled other groups onto
it, and the slowest of n = 16 tasks got 1.54x the mean records where LPT over records gets
1.33x (the key-grouping bound ``max(1, n p_1)`` is 1.32, Fang et al. §3). The costly step
after a shuffle runs per record, so the plan weighs records.

The map tasks of :mod:`sparkbalance.spark.rdd.mapstats` already hold each group's bucket when
they flush it; they add its length to a per-task count (no per-record work) and, for a
bucket far above the flush's mean bucket, count its keys (``collections.Counter``, C
speed) to find the heavy keys. Each task sends ``(records per group, its top keys)``
through one accumulator; the driver sums the counts and keeps the top keys (sums of the
tasks' top lists, each truncated to :data:`TOP_KEYS`, so a key's count is a lower bound).

Examples
--------
>>> t = GroupTally()
>>> a = t.addInPlace(t.zero(zero_tally(3)), (np.array([1, 0, 2]), {"x": 2}))
>>> a = t.addInPlace(a, (np.array([0, 4, 0]), {"x": 1, "y": 4}))
>>> a[0].tolist(), sorted(a[1].items())
([1, 4, 2], [('x', 3), ('y', 4)])
"""
from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

__all__ = ["GroupTally", "zero_tally", "heavy_in_buckets", "read_tally", "key_bound",
           "TOP_KEYS", "HEAVY_FACTOR"]

#: Top keys kept per task and on the driver: bounded memory whatever the number of keys.
TOP_KEYS: int = 32
#: A bucket is searched for heavy keys when it holds this many times the flush's mean
#: bucket (and at least _MIN_HEAVY records): a key must carry about HEAVY_FACTOR / m of the
#: records to be found, far below the 1 / n at which a key starts to bound the plan.
HEAVY_FACTOR: int = 4
_MIN_HEAVY: int = 64

Tally = tuple[np.ndarray, dict]


def zero_tally(num_groups: int) -> Tally:
    """The empty tally of ``num_groups`` key groups."""
    return np.zeros(int(num_groups), dtype=np.int64), {}


def _top(counts: dict, k: int = TOP_KEYS) -> dict:
    if len(counts) <= k:
        return counts
    return dict(Counter(counts).most_common(k))


class GroupTally:
    """PySpark ``AccumulatorParam`` of a tally: records per group summed, top keys merged."""

    def zero(self, value: Tally) -> Tally:
        return zero_tally(len(value[0]))

    def addInPlace(self, value1: Tally, value2: Tally) -> Tally:
        counts, heavy = value1
        counts = counts + np.asarray(value2[0], dtype=np.int64)
        merged = dict(heavy)
        for key, c in value2[1].items():
            merged[key] = merged.get(key, 0) + int(c)
        return counts, _top(merged)


def heavy_in_buckets(buckets: dict[int, list], flushed: int, num_groups: int,
                     found: Counter) -> None:
    """Add to ``found`` the key counts of every bucket far above the mean bucket of a flush.

    Examples
    --------
    >>> found = Counter()
    >>> heavy_in_buckets({0: [("a", 1)] * 90 + [("b", 2)] * 10, 1: [("c", 3)]}, 101, 8, found)
    >>> found.most_common()
    [('a', 90), ('b', 10)]
    """
    threshold = max(_MIN_HEAVY, HEAVY_FACTOR * flushed // max(1, num_groups))
    for items in buckets.values():
        if len(items) > threshold:
            found.update(k for k, _ in items)
    if len(found) > 4 * TOP_KEYS:
        top = found.most_common(TOP_KEYS)
        found.clear()
        found.update(dict(top))


def read_tally(accumulator: Any) -> Tally:
    """The accumulator's value, then drop it from PySpark's driver registry (which would
    otherwise keep one array per call for the life of the process; a late update for a
    dropped accumulator is ignored by PySpark's accumulator server)."""
    value = accumulator.value
    try:
        from pyspark.accumulators import _accumulatorRegistry
        _accumulatorRegistry.pop(accumulator.aid, None)
    except ImportError:  # pragma: no cover - pyspark always has it
        pass
    return value


def key_bound(heavy: dict, total: float, num_partitions: int) -> float:
    """``max(1, n p_1)`` from the heaviest key found: no plan that keeps a key on one
    partition has a slowest partition below it (over the mean; Fang et al. §3).

    Examples
    --------
    >>> key_bound({"a": 30, "b": 5}, 100, 4), key_bound({}, 100, 4)
    (1.2, 1.0)
    """
    if not heavy or total <= 0:
        return 1.0
    return max(1.0, int(num_partitions) * max(heavy.values()) / float(total))
