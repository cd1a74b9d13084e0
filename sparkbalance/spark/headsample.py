"""A glance at the input before the zero-pass map stage: keep plain hash when keys are not skewed.

The zero-pass path (:mod:`sparkbalance.spark.mapstats`) measures the skew with the user's
own shuffle, but that shuffle then costs more than ``rdd.partitionBy(n)``: its map stage is
a job of its own, every map task writes ``m = 32 n`` blocks, and every reduce task fetches
32 of them. Where the keys are not skewed it then keeps plain placement, so all of that is
cost without gain (1.34x ``partitionBy`` on uniform keys in the routing benchmark).

Before that map stage one small job reads the first records of a few partitions spread
over the input (``HEAD_RECORDS`` keys in all; a partition's upstream work stops at its
slice), and :func:`sparkbalance.strategies.auto.sample_verdict` predicts from their key
counts how skewed hash placement can be. When even its upper bound leaves less than
``min_gain`` to gain, the adapter shuffles by the stable hash directly (one job, one block
per reduce task, :class:`~sparkbalance.routing.hash.HashPartitioner`); otherwise the
zero-pass path runs as before and measures the whole input.

The first records of a partition stand for all of it. Input sorted by key shows long runs
of one key and so looks skewed: the zero-pass path runs, which is the safe side. Hot keys
that appear only deep inside every partition would be missed; ``balance=True`` (or a named
strategy) skips the glance.
"""
from __future__ import annotations

import itertools
import time
from collections import Counter
from typing import Any, Iterable, Iterator

from ..strategies.auto import DEFAULT_MIN_GAIN, sample_verdict

__all__ = ["HEAD_RECORDS", "HEAD_PARTITIONS", "head_key_counts", "glance"]

#: Keys read in all (split evenly over the sampled partitions).
HEAD_RECORDS: int = 4096
#: Partitions read from, spread evenly over the input.
HEAD_PARTITIONS: int = 8


class _Head:
    """runJob body: (key, count) of the first ``per`` records; nothing when they are not
    (hashable key, value) pairs (the shuffle that follows reports those clearly)."""

    def __init__(self, per: int) -> None:
        self.per = per

    def __call__(self, iterator: Iterable[Any]) -> Iterator[tuple[Any, int]]:
        counts: Counter = Counter()
        try:
            for kv in itertools.islice(iterator, self.per):
                counts[kv[0]] += 1
        except (TypeError, IndexError, KeyError):
            return iter(())
        return iter(counts.items())


def head_key_counts(rdd: Any, records: int = HEAD_RECORDS,
                    partitions: int = HEAD_PARTITIONS) -> list[int]:
    """Records per distinct key among the first records of up to ``partitions`` partitions.

    Examples
    --------
    >>> sorted(head_key_counts(sc.parallelize([("a", 1), ("a", 2), ("b", 3)], 2)))  # doctest: +SKIP
    [1, 2]
    """
    total = rdd.getNumPartitions()
    if total <= 0:
        return []
    k = max(1, min(total, int(partitions)))
    picks = sorted({(i * total) // k for i in range(k)})
    per = -(-int(records) // len(picks))
    merged: Counter = Counter()
    for key, c in rdd.context.runJob(rdd, _Head(per), picks):
        merged[key] += c
    return list(merged.values())


def glance(rdd: Any, num_partitions: int, *,
           min_gain: float = DEFAULT_MIN_GAIN) -> dict[str, Any]:
    """:func:`sample_verdict` of the head sample, with the seconds it took (``seconds``).

    Examples
    --------
    >>> glance(sc.parallelize([(i, i) for i in range(10000)], 4), 8)["keep_hash"]  # doctest: +SKIP
    True
    """
    t0 = time.perf_counter()
    verdict = sample_verdict(head_key_counts(rdd), num_partitions, min_gain=min_gain)
    verdict["seconds"] = time.perf_counter() - t0
    return verdict
