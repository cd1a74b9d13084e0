"""Measured task seconds of one batch's merge, per physical partition of the state.

With a task-metrics listener attached (:class:`~sparkbalance.spark.metrics.listener.TaskMetricsListener`
or anything with its ``tasks(successful_only=True)``), the merge job of a batch runs under
its own job group; its last stage (the merge) gives one run time per partition, which the
controller turns into time-aware costs
(:func:`~sparkbalance.stats.timeweights.cost_from_partition_seconds`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from sparkbalance.stats.timeweights import partition_seconds

__all__ = ["merge_seconds"]


def merge_seconds(listener: Any, job_group: str, num_physical: int) -> np.ndarray | None:
    """Run seconds per partition of the last stage of ``job_group``'s tasks (the counting
    attempt of each, see :func:`~sparkbalance.stats.timeweights.successful_attempts`);
    0 where no task succeeded. None without a listener, without tasks of the group, or
    when every time is 0.

    Examples
    --------
    >>> merge_seconds(None, "g", 2) is None
    True
    """
    if listener is None:
        return None
    try:
        tasks = [t for t in listener.tasks(successful_only=True) if t.job_group == job_group]
    except Exception:  # noqa: BLE001 - a broken listener must not break the batch
        return None
    tasks = [t for t in tasks if 0 <= t.partition_id < num_physical]
    if not tasks:
        return None
    last_stage = max(t.stage_id for t in tasks)
    secs = np.nan_to_num(partition_seconds(tasks, num_physical, stage_id=last_stage), nan=0.0)
    return secs if secs.sum() > 0 else None
