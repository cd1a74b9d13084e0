"""Keyed state across batches with delta migration (the rebalancing controller).

Modules, one concept each. The operator and its parts:

- :mod:`.operator` — :class:`KeyedStateOperator`: merge → measure → decide → record, per
  batch, and the moves between batches, over the parts below;
- :mod:`.position` — :class:`~.position.Position`: the state and where the stream is (a value);
- :mod:`.merge_job` — the one job of a batch: run the merge, cache it, collect its statistics;
- :mod:`.ledger` — :class:`~.ledger.Ledger`: the operator's ``history`` and ``migrations``;
- :mod:`.views` — :class:`~.views.StateViews`: the layout and state reads;
- :mod:`.rescaling` — :class:`~.rescaling.Rescaling`: ``scale``, planned, moved by the operator;
- :mod:`.forecast` — :class:`~.forecast.Forecasting`: ``rebalance(costs)``, likewise;
- :mod:`.inputs` — a batch (RDD or DataFrame) into validated ``(key, value)`` pairs;
- :mod:`.streaming` — ``foreach_batch`` helpers (exactly-once over restarts, replays).

:mod:`.frames` — the state's data:

- :mod:`.frames.format` — the byte format: one pickled block per key group, fixed header;
- :mod:`.frames.window` — a key's entry and how a batch's values fold into it (window w, S(k));
- :mod:`.frames.blocks` — one block (dict) per partition: group a batch, merge it into a block;
- :mod:`.frames.merge` — the merge of a batch into one partition, frame by frame;
- :mod:`.frames.moves` — what a migration reads on the map side and drops on the reduce side;
- :mod:`.frames.route_chunks` — a batch's routing shuffle written as chunks the merge reads;
- :mod:`.frames.rdds` — frame RDDs: select/concat, and the merge that keeps untouched frames
  in the JVM (bridge jar) or in Python;
- :mod:`.frames.framed_state` — :class:`FramedState`: the state as one object (merge a batch,
  read statistics, state and outputs);
- :mod:`.frames.migration` — move only Δ on its own (``scale``, a read between batches);
- :mod:`.frames.caching` — which RDDs stay cached, lineage truncation.

:mod:`.control` — deciding where the state lives:

- :mod:`.control.layout` — the versioned partition function (routing table, key-group
  intervals or a key-group map) and its physical partitions;
- :mod:`.control.planners` — the strategies the state runs, their defaults, a fresh layout;
- :mod:`.control.controller` — measure loads, decide (λ > 1 + θ), plan (pure);
- :mod:`.control.payoff` — migrate only when the predicted saving exceeds the cost;
- :mod:`.control.timing` — measured task seconds of a batch's merge (listener attached);
- :mod:`.control.records` — :class:`BatchRecord` and :class:`MigrationRecord`;
- :mod:`.control.report` — balance records, job descriptions and log lines.

:mod:`.durability` — surviving a crash:

- :mod:`.durability.keeper` — the operator's durability part: lease, commits, resume, the
  last outputs;
- :mod:`.durability.checkpoint` — save and restore a commit, written under new names;
- :mod:`.durability.manifest` — the commit point and which files belong to which save;
- :mod:`.durability.state_files` — frame files with a checksum per part file, verified on read;
- :mod:`.durability.store` — a local directory or a Hadoop file system;
- :mod:`.durability.lease` — one owner per checkpoint directory (heartbeat, takeover);
- :mod:`.durability.rollback` — :class:`~.durability.rollback.Snapshot`: a batch whose
  commit failed leaves the operator as before.

The shifting Zipf stream of Fang et al. §5 (benchmarks) is :mod:`sparkbalance.bench.shifting`.
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
