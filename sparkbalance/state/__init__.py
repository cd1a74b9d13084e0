"""Keyed state across batches with delta migration (the rebalancing controller).

Modules, one concept each:

- :mod:`.window` — a key's entry and how a batch's values fold into it (window w, S(k));
- :mod:`.blocks` — one block (dict) per partition: group a batch, merge, split stays/moved;
- :mod:`.layout` — the versioned partition function of the state (routing table or
  key-group intervals) and its physical partitions;
- :mod:`.controller` — measure loads, decide (λ > 1 + θ), plan (pure);
- :mod:`.migration` — move only Δ: stays narrow, moved keys shuffled, zip-merged;
- :mod:`.checkpoint` — atomic durable checkpoints, resume, clear errors;
- :mod:`.streaming` — ``foreach_batch`` helpers (exactly-once over restarts);
- :mod:`.operator` — :class:`KeyedStateOperator`, tying them together;
- :mod:`.shifting` — the shifting Zipf stream of seed 000 §5 (tests, demo, benchmark).

Why the merge stays narrow: the state RDD has exactly one element (a dict) per partition
and each batch is routed by the same function and grouped into one dict per partition, so
``state.zip(batch).map(merge)`` is a ``ZippedPartitionsRDD2`` with two one-to-one
dependencies: only the batch is shuffled (PySpark's ``union``/``cogroup``/``join`` would
re-shuffle the state because the JVM does not see a common partitioner).
"""
from __future__ import annotations

from .._lazy import lazy_getattr

__all__ = ["KeyedStateOperator", "BatchRecord", "MigrationRecord", "CheckpointError",
           "StateFold", "PLANNER_NAMES"]

_LAZY = {
    "KeyedStateOperator": "sparkbalance.state.operator",
    "BatchRecord": "sparkbalance.state.operator",
    "MigrationRecord": "sparkbalance.state.operator",
    "CheckpointError": "sparkbalance.state.checkpoint",
    "StateFold": "sparkbalance.state.window",
    "PLANNER_NAMES": "sparkbalance.state.controller",
}


__getattr__ = lazy_getattr(__name__, _LAZY)