"""What the keyed-state operator records: one :class:`BatchRecord` per processed batch (the
operator's ``history``) and one :class:`MigrationRecord` per migration (``migrations``).

Pure (no pyspark).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = ["BatchRecord", "MigrationRecord", "batch_record"]


@dataclass(frozen=True)
class BatchRecord:
    """One processed batch (``history`` row)."""

    seq: int
    batch_id: int | None
    imbalance_before: float      # λ of this batch under the layout it was routed with
    imbalance_after: float       # λ of this batch's costs under the layout used next
    keys_moved: int
    bytes_moved: float           # Σ S(k) of the keys whose state moved
    table_size: int              # |R| after the batch (0 for key groups)
    plan_seconds: float
    migration_seconds: float
    batch_seconds: float         # whole process() call, migration included
    rebalanced: bool
    layout_version: int
    num_keys: int
    state_bytes: float
    records: float
    max_load: float
    mean_load: float
    decision: str = ""           # why the state moved or not ("balanced", "pays", ...)
    predicted_saving_s: float = 0.0   # seconds the plan would save over the horizon
    predicted_cost_s: float = 0.0     # seconds the move was predicted to cost

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class MigrationRecord:
    """One migration (rebalancing after a batch, or a ``scale()``)."""

    seq: int
    reason: str                  # "imbalance", "scale" or "forecast" (rebalance)
    num_partitions_before: int
    num_partitions_after: int
    keys_moved: int
    bytes_moved: float
    planned_bytes: float
    #: its own jobs' wall time; for a move riding in a batch's shuffle, what it added to the
    #: batch (the payoff model's excess beyond noise, or its predicted cost before it can
    #: predict a batch: :meth:`~sparkbalance.state.control.payoff.PayoffModel.observe_batch`)
    seconds: float
    layout_version: int
    frames_touched: int = -1     # state frames a Python worker read (the rest stayed in the JVM)


def batch_record(seq: int, batch_id: int | None, m: Any, layout: Any,
                 migration: MigrationRecord | None, imbalance_after: float,
                 plan_seconds: float, batch_seconds: float, timed: bool,
                 judgement: Any = None) -> BatchRecord:
    """The :class:`BatchRecord` of one batch.

    Parameters
    ----------
    m : the batch's :class:`~sparkbalance.state.control.controller.Measurement`.
    layout : the layout used from the next batch on.
    migration : the migration after the batch, None if the state did not move.
    imbalance_after : predicted λ of the batch's costs under ``layout``.
    timed : costs are measured seconds (a listener), so ``records`` is unknown (NaN).
    judgement : the controller's :class:`~sparkbalance.state.control.payoff.Judgement` (None: not
        judged, e.g. a planner that never rebalances).

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> m = NS(imbalance=1.5, loads=np.array([3.0, 1.0]), active=np.array([0, 1]),
    ...        cost=np.array([3.0, 1.0]), num_keys=2, state_bytes=20.0)
    >>> lay = NS(table_size=0, version=0)
    >>> batch_record(0, None, m, lay, None, 1.5, 0.0, 0.1, False).max_load
    3.0
    """
    active = m.loads[m.active]
    mig = migration
    return BatchRecord(
        seq=seq, batch_id=batch_id, imbalance_before=m.imbalance,
        imbalance_after=imbalance_after,
        keys_moved=0 if mig is None else mig.keys_moved,
        bytes_moved=0.0 if mig is None else mig.bytes_moved,
        table_size=layout.table_size, plan_seconds=plan_seconds,
        migration_seconds=0.0 if mig is None else mig.seconds,
        batch_seconds=batch_seconds, rebalanced=mig is not None,
        layout_version=layout.version, num_keys=m.num_keys, state_bytes=m.state_bytes,
        records=float("nan") if timed else float(np.sum(m.cost)),
        max_load=float(active.max()) if active.size else 0.0,
        mean_load=float(active.mean()) if active.size else 0.0,
        decision="" if judgement is None else judgement.reason,
        predicted_saving_s=0.0 if judgement is None else float(judgement.saving_s),
        predicted_cost_s=0.0 if judgement is None else float(judgement.cost_s))
