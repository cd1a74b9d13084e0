"""The plain-Spark baseline of keyed state: the whole state cogrouped with every batch.

What ``DStream.updateStateByKey`` does in PySpark, with the same per-key work as
:class:`~sparkbalance.state.operator.KeyedStateOperator`, so a benchmark comparing the two
measures the data flow only.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["PLAIN", "PlainRecord", "PlainStateStream"]

#: Name of the plain-Spark baseline in :func:`sparkbalance.bench.streams.run_streams` and
#: the tables.
PLAIN = "plain"


@dataclass(frozen=True)
class PlainRecord:
    """One batch of :class:`PlainStateStream` (the fields
    :func:`sparkbalance.bench.report.summarise` reads)."""

    seq: int
    batch_seconds: float
    imbalance_before: float
    imbalance_after: float
    keys_moved: int            # keys of the state re-shuffled by the cogroup
    bytes_moved: float         # Σ S(k) of the state re-shuffled by the cogroup
    state_bytes: float
    num_keys: int
    plan_seconds: float = 0.0
    migration_seconds: float = 0.0
    rebalanced: bool = False
    table_size: int = 0


class PlainStateStream:
    """Keyed window state the plain-Spark way: ``state.cogroup(batch)`` every batch.

    What ``DStream.updateStateByKey`` does in PySpark (``prev.cogroup(batch, n)``, then a
    per-key update; the new state is persisted): PySpark's ``cogroup`` is a union plus a
    shuffle, so the *whole* state is shuffled with every batch, and keys stay where
    ``portable_hash(k) % n`` puts them. Same per-key work as the operator (the same
    :class:`~sparkbalance.state.frames.window.StateFold`, window replay included), so the
    difference in batch time is the data flow only. Lineage is truncated every
    ``truncate_every`` batches with ``localCheckpoint`` (as the operator does by default).

    Examples
    --------
    >>> from sparkbalance.bench.workloads import busy_count
    >>> ps = PlainStateStream(spark, 4, busy_count(0), initial=0, window=3)  # doctest: +SKIP
    >>> ps.process(sc.parallelize([(1, 1), (1, 1)])).collect()           # doctest: +SKIP
    [(1, 2)]
    """

    def __init__(self, spark: Any, num_partitions: int, update_values: Any, initial: Any = 0,
                 window: int | None = None, truncate_every: int = 10) -> None:
        from sparkbalance.state.frames.window import StateFold
        self.sc = getattr(spark, "sparkContext", spark)
        if num_partitions < 1:
            raise ValueError(f"num_partitions={num_partitions}; expected >= 1")
        self.num_partitions = num_partitions
        self._fold = StateFold(update_values=update_values, initial=initial, window=window)
        self.truncate_every = truncate_every
        self._state: Any = None
        self._seq = 0
        self._state_bytes, self._num_keys = 0.0, 0
        self.history: list[PlainRecord] = []

    def process(self, batch: Any, batch_id: int | None = None) -> Any:
        """Apply one RDD of ``(key, value)``; return ``(key, state)`` of the new state."""
        from pyspark import StorageLevel

        from sparkbalance.stats.workload import imbalance
        t0 = time.perf_counter()
        fold, seq, n = self._fold, self._seq, self.num_partitions
        prev = self._state if self._state is not None else self.sc.emptyRDD()

        def _update(it: Any) -> Any:
            for k, (entries, values) in it:
                entry = next(iter(entries), None)
                values = list(values)
                if values:
                    entry, _ = fold.apply(entry, values, seq)
                elif entry is not None:
                    entry = fold.expire(entry, seq)
                if entry is not None:
                    yield k, entry

        new = prev.cogroup(batch, n).mapPartitions(_update, preservesPartitioning=True)
        new.persist(StorageLevel.MEMORY_AND_DISK)
        if (seq + 1) % self.truncate_every == 0:
            new.localCheckpoint()
        stats = new.mapPartitions(
            lambda it: [_plain_stats(it, seq)]).collect()      # the batch's one job
        loads = np.array([s[2] for s in stats], dtype=float)
        if self._state is not None:
            self._state.unpersist()
        moved_keys, moved_bytes = self._num_keys, self._state_bytes
        self._state = new
        self._num_keys = int(sum(s[0] for s in stats))
        self._state_bytes = float(sum(s[1] for s in stats))
        self._seq += 1
        # λ = max L / L̄ (stats); nan rather than its idle 1.0 for a batch without records
        imb = imbalance(loads) if loads.sum() > 0 else float("nan")
        self.history.append(PlainRecord(seq, time.perf_counter() - t0, imb, imb, moved_keys,
                                        moved_bytes, self._state_bytes, self._num_keys))
        return new.mapValues(lambda e: e[0])

    def collect_state(self) -> dict:
        """``{key: state}`` on the driver (tests and small states)."""
        return {} if self._state is None else {k: e[0] for k, e in self._state.collect()}

    def close(self) -> None:
        if self._state is not None:
            self._state.unpersist()
        self._state = None


def _plain_stats(it: Any, seq: int) -> tuple[int, float, int]:
    """(keys, Σ S(k), records of batch ``seq``) of one partition of the plain state (the
    records are read from the window's last segment; 0 for an unbounded window)."""
    keys, nbytes, recs = 0, 0.0, 0
    for _, e in it:
        keys += 1
        nbytes += e[1]
        segs = e[2]
        if segs and segs[-1][0] == seq:
            recs += len(segs[-1][1])
    return keys, nbytes, recs
