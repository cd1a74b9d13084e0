"""The per-key step of a micro-batch: the user's function called once on a key's rows (or
on its timeout), as Spark's ``applyInPandasWithState`` calls it.

:class:`GroupCall` is the ``update_values(entry, values) -> (entry, outputs)`` of a
:class:`~sparkbalance.state.operator.KeyedStateOperator`: the operator routes, balances and
migrates the entries; this step is Spark's semantics for one key of one batch:

1. **data** — the key's rows (late rows dropped with ``EventTimeTimeout``, at or below the
   previous batch's watermark) as pandas chunks, ``hasTimedOut`` False;
2. **timeout** — a key without rows whose timeout is below the batch's threshold (the
   batch's processing time, or its watermark) is called with one empty frame and
   ``hasTimedOut`` True, as Spark calls it after the batch's data; under
   ``ProcessingTimeTimeout`` a key *with* rows whose timeout passed is timed out first
   (Spark runs a batch without data at every trigger, which would have timed it out);
3. **the batch without data** — with ``EventTimeTimeout``, when the batch moves the
   watermark on, Spark runs a batch without data that times out against the new watermark;
   its calls are made here too, so their outputs belong to the same micro-batch.

The values of a key are its row tuples and possibly :data:`TICK` (the driver's "this key
may time out"). Outputs are ``("p", frame)`` for each non-empty frame the function yields
and ``("t", timeout_ms)`` when the key's stored timeout changed (the driver keeps the keys
with a timeout set). At the end of a merge task :meth:`GroupCall.finish_outputs` turns the
partition's frames into one ``("a", arrow_ipc_bytes)`` output, converted once as Spark's
worker converts a run of keys' frames (:meth:`~.arrow_rows.RowConverter.to_arrow`).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable

from sparkbalance.state.pandas_state.arrow_input import RowChunk, arrow_schema
from sparkbalance.state.pandas_state.arrow_rows import RowConverter
from sparkbalance.state.pandas_state.group_state import (Entry, new_group_state, plain_value,
                                                          stored_after)
from sparkbalance.state.pandas_state.task_frames import KeyFrames, prepare_block
from sparkbalance.state.pandas_state.watermark import NO_TIMESTAMP

__all__ = ["GroupCall", "BatchClock", "TICK", "TIMEOUTS"]

#: The marker value the driver adds for a key whose timeout may fire in this batch.
TICK: str = "\x00sparkbalance:timeout"
#: GroupStateTimeout names, as Spark spells them.
TIMEOUTS = ("NoTimeout", "ProcessingTimeTimeout", "EventTimeTimeout")


@dataclasses.dataclass(frozen=True)
class BatchClock:
    """The times of one micro-batch, fixed when the driver builds the batch (ms).

    ``batch_ms`` the batch's processing time; ``watermark_ms`` its watermark (-1 without
    ``withWatermark``); ``late_ms`` rows at or below it are late (EventTimeTimeout);
    ``next_watermark_ms`` the watermark after the batch (the batch without data runs when
    it is larger).
    """

    batch_ms: int
    watermark_ms: int = NO_TIMESTAMP
    late_ms: int = NO_TIMESTAMP
    next_watermark_ms: int = NO_TIMESTAMP


class GroupCall:
    """``update_values`` of the keyed-state operator for one ``applyInPandasWithState``.

    Parameters
    ----------
    func : the user's ``func(key, Iterator[pandas.DataFrame], state) ->
        Iterator[pandas.DataFrame]``.
    converter : a :class:`~.arrow_rows.RowConverter` of the input and output schemas.
    key_index : positions of the grouping columns in the input rows.
    state_schema : the ``stateStructType``.
    timeout : one of :data:`TIMEOUTS`.
    event_index : position of the watermarked event-time column, or None.

    ``clock`` (a :class:`BatchClock`) is set by the driver before each batch; it is pickled
    with the batch's job, so a recomputed batch sees its own clock.

    Examples
    --------
    >>> # op = KeyedStateOperator(spark, 8, update_values=GroupCall(...))   # see query.py
    """

    def __init__(self, func: Callable, converter: RowConverter, key_index: list[int],
                 state_schema: Any, timeout: str, event_index: int | None) -> None:
        if timeout not in TIMEOUTS:
            raise ValueError(f"timeoutConf={timeout!r}; expected one of {', '.join(TIMEOUTS)}")
        self.func = func
        self.converter = converter
        self.key_index = list(key_index)
        self.state_schema = state_schema
        self.timeout = timeout
        self.event_index = event_index
        self.clock = BatchClock(0)
        self._schema: Any = None      # the input's Arrow schema, made on the executor

    def __getstate__(self) -> dict:
        d = dict(self.__dict__)
        d["_schema"] = None
        return d

    # -- the operator's update_values
    def __call__(self, entry: Entry | None, values: list) -> tuple[Entry | None, list]:
        clock, outs = self.clock, []
        rows = (values if len(values) == 1 and type(values[0]) is KeyFrames else
                [v for v in values if v is not TICK and v != TICK])
        key = None
        if rows and type(rows[0]) is KeyFrames:    # converted for the task (prepare_block)
            rows, key = rows[0].frames, rows[0].key
        elif rows and type(rows[0]) is RowChunk:
            rows = self._read_chunks(rows, clock.late_ms)
        elif rows and self.timeout == "EventTimeTimeout" and self.event_index is not None:
            rows = self._on_time(rows, clock.late_ms)
        timeout_before = NO_TIMESTAMP if entry is None else entry[2]
        if (rows and entry is not None and self.timeout == "ProcessingTimeTimeout"
                and self._due(entry, clock.batch_ms)):
            # Spark runs a batch without data at every trigger under ProcessingTimeTimeout:
            # a key that expired since the last batch was timed out before its new rows.
            entry = self._timed_out(entry, clock.watermark_ms, outs)
        if rows:
            if key is not None:
                chunks = rows
            else:
                chunks = (self.converter.batches_to_pandas(rows) if isinstance(rows, _Batches)
                          else self.converter.to_pandas(rows))
                key = tuple(_scalar(s) for s in (chunks[0].iloc[:, i] for i in self.key_index))
            entry = self._call(entry, key, chunks, False, clock.watermark_ms, outs)
        elif entry is not None and self._due(entry, self._threshold(clock.watermark_ms)):
            entry = self._timed_out(entry, clock.watermark_ms, outs)
        if (entry is not None and self.timeout == "EventTimeTimeout"
                and clock.next_watermark_ms > clock.watermark_ms
                and self._due(entry, clock.next_watermark_ms)):
            entry = self._timed_out(entry, clock.next_watermark_ms, outs)
        timeout_after = NO_TIMESTAMP if entry is None else entry[2]
        if timeout_after != timeout_before:
            outs.append(("t", timeout_after))
        return entry, outs

    def weight(self, values: list) -> int:
        """The load of a key's values for the planner: its rows (a :class:`RowChunk`
        weighs its row count, a row or a timeout tick one), the merge's weight hook
        (:func:`~sparkbalance.state.frames.blocks.merge_blocks`)."""
        if len(values) == 1:        # the usual key: one chunk, or its frames
            v = values[0]
            return v.rows if type(v) is RowChunk or type(v) is KeyFrames else 1
        return sum(v.rows if type(v) is RowChunk or type(v) is KeyFrames else 1
                   for v in values)

    def prepare_block(self, block: dict) -> dict:
        """A merge task's batch block with each key's Arrow chunks converted to pandas
        once for the task (:func:`~.task_frames.prepare_block`), the merge's per-task
        input hook (:func:`~sparkbalance.state.frames.blocks.prepare_block`)."""
        return prepare_block(self, block)

    def arrow_schema(self) -> Any:
        """The Arrow schema of the input's chunks (made once per executor)."""
        if self._schema is None:
            self._schema = arrow_schema(self.converter.schema)
        return self._schema

    def late_mask(self, batch: Any) -> Any:
        """The rows of ``batch`` kept (a numpy bool array) when late rows are dropped
        (EventTimeTimeout with a watermark: event time at or below the batch's late
        limit, a null kept), else None."""
        if self.timeout != "EventTimeTimeout" or self.event_index is None:
            return None
        import pyarrow as pa
        import pyarrow.compute as pc
        t = batch.column(self.event_index).cast(pa.int64())
        keep = pc.or_kleene(pc.is_null(t), pc.greater(t, self.clock.late_ms * 1000))
        return keep.to_numpy(zero_copy_only=False).astype(bool)

    # -- pieces
    def _read_chunks(self, chunks: list, late_ms: int) -> "_Batches":
        """The Arrow batches of a key's :class:`RowChunk` values, late rows dropped
        (EventTimeTimeout), empty batches left out."""
        import pyarrow as pa
        schema = self.arrow_schema()
        batches = _Batches(pa.ipc.read_record_batch(pa.py_buffer(c.data), schema)
                           for c in chunks)
        if self.timeout == "EventTimeTimeout" and self.event_index is not None:
            import pyarrow.compute as pc
            limit = late_ms * 1000
            kept = _Batches()
            for b in batches:
                t = b.column(self.event_index).cast(pa.int64())
                b = b.filter(pc.or_kleene(pc.is_null(t), pc.greater(t, limit)))
                if b.num_rows:
                    kept.append(b)
            batches = kept
        return batches

    def _threshold(self, watermark_ms: int) -> int:
        return self.clock.batch_ms if self.timeout == "ProcessingTimeTimeout" else watermark_ms

    def _due(self, entry: Entry, threshold: int) -> bool:
        # Spark: timeoutTimestamp != NO_TIMESTAMP && timeoutTimestamp < threshold
        return self.timeout != "NoTimeout" and entry[2] != NO_TIMESTAMP and entry[2] < threshold

    def _on_time(self, rows: list, late_ms: int) -> list:
        # Spark drops rows with eventTime <= watermark (µs); a null event time is kept.
        i, limit = self.event_index, late_ms * 1000
        return [r for r in rows if r[i] is None or _micros(r[i]) > limit]

    def _timed_out(self, entry: Entry, watermark_ms: int, outs: list) -> Entry | None:
        # Spark's key of a timeout comes from the key columns of a row of nulls: the same
        # Arrow conversion of the stored key gives the same scalar types.
        row = [None] * len(self.converter.schema)
        for i, v in zip(self.key_index, entry[0]):
            row[i] = v
        pdf = self.converter.to_pandas([tuple(plain_value(v) for v in row)])[0]
        key = tuple(_scalar(pdf.iloc[:, i]) for i in self.key_index)
        return self._call(entry, key, [pdf.iloc[0:0]], True, watermark_ms, outs)

    def _call(self, entry: Entry | None, key: tuple, chunks: list, timed_out: bool,
              watermark_ms: int, outs: list) -> Entry | None:
        clock = self.clock
        state = new_group_state(entry, self.state_schema, self.timeout, clock.batch_ms,
                                watermark_ms, self.event_index is not None, timed_out)
        result = self.func(key, iter(chunks), state)
        width = len(self.converter.out_schema)
        for pdf in _frames(result, width):
            if len(pdf) > 0:              # Spark's worker ignores empty frames
                outs.append(("p", pdf))
        return stored_after(entry, key, state)

    def finish_outputs(self, outputs: list) -> list:
        """The ``(key, output)`` list of one merge task with its frames converted to one
        Arrow stream: ``[(None, ("a", bytes))]`` (when any frame) followed by the timeout
        changes, in order (the operator's per-task output hook,
        :meth:`~sparkbalance.state.frames.window.StateFold.finish`)."""
        pdfs = [o[1] for _, o in outputs if o[0] == "p"]
        rest = [(k, o) for k, o in outputs if o[0] != "p"]
        if not pdfs:
            return rest
        return [(None, ("a", self.converter.to_arrow(pdfs)))] + rest


class _Batches(list):
    """A key's rows as Arrow record batches (from :class:`RowChunk` values)."""


def _frames(result: Any, width: int) -> Iterable[Any]:
    """The function's frames, checked as Spark's worker checks them (``width``: the
    output schema's column count; an empty frame without columns is accepted)."""
    import pandas as pd
    if isinstance(result, pd.DataFrame):
        raise TypeError("the function returned a pandas.DataFrame; expected an iterable of "
                        "pandas.DataFrame (yield the frame, or return [frame])")
    try:
        it = iter(result)
    except TypeError:
        raise TypeError(f"the function returned {type(result).__name__}; expected an "
                        "iterable of pandas.DataFrame") from None
    for pdf in it:
        if not isinstance(pdf, pd.DataFrame):
            raise TypeError(f"the function yielded a {type(pdf).__name__}; expected "
                            "pandas.DataFrame")
        if not (len(pdf.columns) == width or (len(pdf.columns) == 0 and pdf.empty)):
            raise ValueError(f"the function yielded a frame of {len(pdf.columns)} columns; "
                             f"expected {width} (the outputStructType's), as Spark's "
                             "RESULT_COLUMN_SCHEMA_MISMATCH")
        yield pdf


def _scalar(series: Any) -> Any:
    # Spark's worker takes the key as ``series[0]``: numpy scalars for numeric columns.
    return series[0] if len(series) else None


def _micros(ts: Any) -> int:
    import datetime as dt
    if ts.tzinfo is None:
        ts = ts.astimezone()
    return int(round((ts - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc))
                     / dt.timedelta(microseconds=1)))
