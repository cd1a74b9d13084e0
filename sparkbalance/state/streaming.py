"""Structured Streaming integration: ``writeStream.foreachBatch(op.foreach_batch)``.

Spark re-runs the last micro-batch after a restart when its commit was not recorded; the
operator's checkpoint stores the last applied batch id atomically with the state, so a batch
id at or below it is never applied again: the state sees every batch exactly once. What a
replay gets (``on_replay``): ``"skip"`` (default) — the kept outputs of the last applied
batch id when it is that batch (a caller that crashed before delivering them delivers them
now; they are kept with the checkpoint until the next batch with an id commits, so a call
without a batch id in between does not replace them), None for an older one, never
another batch's; ``"error"`` — a :class:`ReplayError`.

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

from typing import Any, Callable

__all__ = ["check_batch_id", "already_applied", "ON_REPLAY", "check_on_replay", "ReplayError",
           "replayed"]

#: What ``process``/``foreach_batch`` do with a batch id at or below the last applied one.
ON_REPLAY = ("skip", "error")


class ReplayError(ValueError):
    """A batch id at or below the last applied one, with ``on_replay="error"``."""


def check_on_replay(value: Any) -> str:
    """Validate ``on_replay``: one of :data:`ON_REPLAY`."""
    if value not in ON_REPLAY:
        raise ValueError(f"on_replay={value!r}; expected one of {', '.join(ON_REPLAY)}")
    return value


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


def replayed(batch_id: int, last_batch_id: int, on_replay: str,
             last_outputs: Callable[[], Any]) -> Any:
    """The answer to a replayed ``batch_id``: the last batch's kept outputs
    (``last_outputs()``) when it is the last applied one, else None; a
    :class:`ReplayError` with ``on_replay="error"``. Never applies the batch.

    Examples
    --------
    >>> replayed(2, 3, "skip", lambda: "outputs of 3") is None
    True
    >>> replayed(3, 3, "skip", lambda: "outputs of 3")
    'outputs of 3'
    """
    if on_replay == "error":
        raise ReplayError(f"batch_id={batch_id} was applied already (the last applied batch is "
                          f"{last_batch_id}); on_replay='error' refuses replays")
    return last_outputs() if batch_id == last_batch_id else None
