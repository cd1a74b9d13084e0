"""Keyed state across batches with delta migration (the rebalancing controller).

Modules, one concept each:

- :mod:`.window` — a key's entry and how a batch's values fold into it (window w, S(k));
- :mod:`.blocks` — one block (dict) per partition: group a batch, merge it into a block;
- :mod:`.frames` — the state as frames (one pickled block per key group, fixed header);
- :mod:`.frame_rdds` — frame RDDs: select/concat, and the merge that keeps untouched
  frames out of Python, in the JVM (bridge jar) or in Python;
- :mod:`.framed` — :class:`FramedState`, the state as one object: merge a batch, read
  statistics, state and outputs (the operator's only view of the frames);
- :mod:`.layout` — the versioned partition function of the state (routing table,
  key-group intervals or a key-group map) and its physical partitions;
- :mod:`.planners` — the strategies the state runs (from :mod:`sparkbalance.strategies`),
  their defaults and a fresh operator's layout;
- :mod:`.controller` — measure loads, decide (λ > 1 + θ), plan (pure);
- :mod:`.migration` — move only Δ on its own (``scale``): stays narrow, moved keys
  shuffled, concatenated (between batches Δ rides in the next batch's shuffle instead);
- :mod:`.records` — :class:`BatchRecord` (``history``) and :class:`MigrationRecord`;
- :mod:`.inputs` — a batch (RDD or DataFrame) into validated ``(key, value)`` pairs;
- :mod:`.timing` — measured task seconds of a batch's merge (listener attached);
- :mod:`.caching` — which RDDs stay cached, lineage truncation;
- :mod:`.store`, :mod:`.checkpoint` — durable checkpoints under new names per save,
  committed by the manifest; resume; clear errors;
- :mod:`.statefiles` — frame files written with a checksum per part file, verified on read;
- :mod:`.lease` — one owner per checkpoint directory (lease file, heartbeat, takeover);
- :mod:`.rollback` — a batch whose commit failed leaves the operator as before;
- :mod:`.streaming` — ``foreach_batch`` helpers (exactly-once over restarts, replays);
- :mod:`.operator` — :class:`KeyedStateOperator`: merge → measure → decide → migrate →
  record;
- :mod:`.shifting` — the shifting Zipf stream of Fang et al. §5 (tests, demo, benchmark).
"""
from __future__ import annotations

from sparkbalance._lazy import lazy_getattr

__all__ = ["KeyedStateOperator", "BatchRecord", "MigrationRecord", "CheckpointError",
           "LeaseError", "ReplayError", "StateFold", "FramedState", "state_planners"]

_LAZY = {
    "KeyedStateOperator": "sparkbalance.state.operator",
    "BatchRecord": "sparkbalance.state.control.records",
    "MigrationRecord": "sparkbalance.state.control.records",
    "CheckpointError": "sparkbalance.state.durability.manifest",
    "LeaseError": "sparkbalance.state.durability.lease",
    "ReplayError": "sparkbalance.state.streaming",
    "StateFold": "sparkbalance.state.frames.window",
    "FramedState": "sparkbalance.state.frames.framed_state",
    "state_planners": "sparkbalance.state.control.planners",
}


__getattr__ = lazy_getattr(__name__, _LAZY)
