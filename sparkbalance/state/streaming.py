"""Structured Streaming integration: ``writeStream.foreachBatch(op.foreach_batch)``.

Spark re-runs the last micro-batch after a restart when its commit was not recorded; the
operator's checkpoint stores the last applied batch id atomically with the state, so a batch
id at or below it is skipped: the state sees every batch exactly once.

Examples
--------
>>> # op = KeyedStateOperator(spark, 8, update=lambda s, v: s + v, initial=0,
>>> #                         checkpoint_dir="/tmp/ck")
>>> # (spark.readStream.format("rate").load()
>>> #      .selectExpr("value % 100 AS key", "1 AS value")
>>> #      .writeStream.foreachBatch(op.foreach_batch)
>>> #      .option("checkpointLocation", "/tmp/q").start())
"""
from __future__ import annotations

from typing import Any

__all__ = ["check_batch_id", "already_applied"]


def check_batch_id(batch_id: Any) -> int:
    """Validate a micro-batch id (an int >= 0, as Spark passes to foreachBatch)."""
    if isinstance(batch_id, bool) or not isinstance(batch_id, int):
        try:
            import numpy as np
            if isinstance(batch_id, np.integer):
                batch_id = int(batch_id)
            else:
                raise TypeError
        except TypeError:
            raise TypeError(f"batch_id={batch_id!r}; expected an int >= 0") from None
    if batch_id < 0:
        raise ValueError(f"batch_id={batch_id}; expected >= 0")
    return int(batch_id)


def already_applied(batch_id: int, last_batch_id: int | None) -> bool:
    """True when ``batch_id`` was applied before (a replay after restart).

    Examples
    --------
    >>> already_applied(3, 3), already_applied(4, 3), already_applied(0, None)
    (True, False, False)
    """
    return last_batch_id is not None and batch_id <= last_batch_id
