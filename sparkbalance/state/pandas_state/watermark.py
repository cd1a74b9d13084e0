"""Event-time watermark of an ``applyInPandasWithState`` query, kept as Spark keeps it.

Spark's rules (``MicroBatchExecution``, ``IncrementalExecution``, ``WatermarkTracker``,
Spark 3.4+): the watermark of batch ``b`` is ``max(w_{b-1}, maxEventTime_{b-1} - delay)``
(0 before any data); a stateful operator drops input rows at or below the watermark of the
*previous* batch (late events) and evicts (times out) against the watermark of the current
batch; with ``EventTimeTimeout`` Spark runs one extra batch without data whenever the
watermark advanced, so the timeouts of the new watermark fire before the next data arrives.
:class:`WatermarkClock` follows these rules from the batches' maximum event times.

Pure Python: no pyspark import.
"""
from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["DELAY_KEY", "WatermarkClock", "watermark_column", "NO_TIMESTAMP"]

#: Metadata key Spark puts on the event-time column of ``withWatermark`` (delay in ms).
DELAY_KEY: str = "spark.watermarkDelayMs"
#: GroupState's "no timestamp" (``GroupState.NO_TIMESTAMP``).
NO_TIMESTAMP: int = -1


def watermark_column(fields: list[tuple[str, dict]]) -> tuple[str, int] | None:
    """The event-time column and delay (ms) from a schema's ``(name, metadata)`` pairs.

    Several watermarked columns: Spark's default multiple-watermark policy is "min", the
    smallest watermark, i.e. the largest delay over one event time; we take the column of
    the largest delay (the common case of one ``withWatermark`` is exact).

    Examples
    --------
    >>> watermark_column([("k", {}), ("ts", {"spark.watermarkDelayMs": 10000})])
    ('ts', 10000)
    >>> watermark_column([("k", {})]) is None
    True
    """
    found = [(name, int(meta[DELAY_KEY])) for name, meta in fields if DELAY_KEY in meta]
    if not found:
        return None
    return max(found, key=lambda nd: nd[1])


@dataclasses.dataclass
class WatermarkClock:
    """The watermark across micro-batches (ms since the epoch), Spark's advance rule.

    Parameters
    ----------
    delay_ms : the ``withWatermark`` delay, ms >= 0.
    current_ms : the watermark of the next batch to run (0 before any data).

    Examples
    --------
    >>> c = WatermarkClock(10_000)
    >>> c.current_ms, c.next_ms(25_000)
    (0, 15000)
    >>> c.advance(25_000); c.current_ms
    15000
    >>> c.next_ms(12_000)          # a batch of older rows never moves it back
    15000
    """

    delay_ms: int
    current_ms: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.delay_ms, int) or self.delay_ms < 0:
            raise ValueError(f"delay_ms={self.delay_ms!r}; expected an int >= 0 (ms)")

    def next_ms(self, max_event_ms: Any) -> int:
        """The watermark after a batch whose largest event time is ``max_event_ms`` (None:
        no rows with an event time)."""
        if max_event_ms is None:
            return self.current_ms
        return max(self.current_ms, int(max_event_ms) - self.delay_ms)

    def advance(self, max_event_ms: Any) -> None:
        """Move to the watermark after a batch (:meth:`next_ms`)."""
        self.current_ms = self.next_ms(max_event_ms)
