"""One micro-batch of a balanced ``applyInPandasWithState``: the ``foreachBatch`` function
the source query runs.

Per source batch ``b`` (exactly once, keyed by ``b``):

1. **clock** — the batch's processing time and watermarks (:class:`~.group_call.BatchClock`)
   are fixed once and saved under ``<checkpointLocation>/sparkbalance-meta/<b>.json``
   (local or a Hadoop URI, through the checkpoint's store; the last :data:`KEEP_CLOCKS`
   are kept) before anything is applied; a replay of ``b`` after a crash reuses them
   (Spark keeps a batch's timestamp and watermark in its offset log for the same reason);
2. **keys due** — the keys whose timeout is below the batch's threshold (kept on the driver
   from the timeout changes the batches report) get a :data:`~.group_call.TICK`;
3. **merge** — the rows (as Arrow chunks per key and input batch, :mod:`.arrow_input`, or
   as Python rows where the schema needs them), keyed by their grouping tuple, and the
   ticks go through
   :meth:`KeyedStateOperator.process(pairs, batch_id=b)
   <sparkbalance.state.operator.KeyedStateOperator.process>`: routed by the balanced
   layout, merged into the state (the function is called once per key), measured and
   rebalanced by the controller; the operator's checkpoint records ``b`` atomically with
   the state, and a replayed ``b`` is never applied twice (it returns the kept outputs);
4. **sink** — the output rows go to the user's sink, once per ``b`` (:mod:`.sinks`): the
   merge tasks' Arrow streams and the timeout changes come back to the driver with the
   merge job's statistics (no job of their own; a replayed batch's kept outputs are
   read in one job), and the output DataFrame is built from the Arrow batches (no Python
   row, no Python stage after it; the session's Arrow settings read once per query, not
   per batch: :class:`ArrowFrames`).

After a restart the due-key index is rebuilt from the state (one pass) and the watermark
from the last saved clock.
"""
from __future__ import annotations

import json
import time
from typing import Any

from sparkbalance.state.durability.store import store_for
from sparkbalance.state.pandas_state.arrow_input import (NAN_KEY, arrow_pairs, arrow_schema,
                                                         state_key)
from sparkbalance.state.pandas_state.arrow_rows import arrow_table
from sparkbalance.state.pandas_state.group_call import TICK, BatchClock, GroupCall
from sparkbalance.state.pandas_state.watermark import NO_TIMESTAMP, WatermarkClock

__all__ = ["BatchDriver", "ArrowFrames", "state_key", "NAN_KEY", "KEEP_CLOCKS"]

#: Saved batch clocks kept: Spark replays at most the last batch after a restart; a few
#: more cost nothing and help a reader of the directory.
KEEP_CLOCKS: int = 3

#: Parameters of PySpark's internal Arrow path this module calls (checked by name: another
#: PySpark version's path is not called, ``createDataFrame`` is).
_ARROW_PATH = ("table", "schema", "timezone", "prefer_timestamp_ntz",
               "prefers_large_var_types", "arrow_batch_size")


def _arrow_path_params(spark: Any) -> tuple:
    import inspect
    fn = getattr(spark, "_create_from_arrow_table", None)    # bound: no self
    return () if fn is None else tuple(inspect.signature(fn).parameters)


class ArrowFrames:
    """DataFrames of a fixed schema from Arrow tables, the session's Arrow settings read
    once.

    ``createDataFrame(table, schema)`` reads eight settings per call through one py4j call
    whose list argument costs one more per item (~41 round trips a batch, measured on
    PySpark 4.3 with a py4j counter; ~10 through the same Arrow path with the settings
    kept). A PySpark without that path uses ``createDataFrame`` (4.x) or, on 3.5 classic,
    whose ``createDataFrame`` takes no Arrow table, hands the table's record batches to the
    JVM as 3.5's own ``createDataFrame(pandas)`` hands its converted batches
    (:func:`_from_arrow_stream`).

    Examples
    --------
    >>> frames = ArrowFrames(spark, out_schema)                  # doctest: +SKIP
    >>> frames(pyarrow.table({"k": [1], "n": [2]})).collect()    # doctest: +SKIP
    [Row(k=1, n=2)]
    """

    def __init__(self, spark: Any, schema: Any) -> None:
        self.spark, self.schema = spark, schema
        self._args: tuple | None = None
        if _ARROW_PATH == _arrow_path_params(spark):
            conf = spark.conf
            self._args = (
                conf.get("spark.sql.session.timeZone"),
                conf.get("spark.sql.timestampType", "TIMESTAMP_LTZ") == "TIMESTAMP_NTZ",
                conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false") == "true",
                int(conf.get("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")))

    def __call__(self, table: Any) -> Any:
        if self._args is not None:
            return self.spark._create_from_arrow_table(table, self.schema, *self._args)
        import pyspark
        if int(pyspark.__version__.split(".")[0]) >= 4:
            return self.spark.createDataFrame(table, schema=self.schema)
        return _from_arrow_stream(self.spark, table, self.schema)


def _from_arrow_stream(spark: Any, table: Any, schema: Any) -> Any:
    """PySpark 3.5: a DataFrame of ``schema`` over ``table``'s record batches, written to
    the JVM as an Arrow stream (``PythonSQLUtils.toDataFrame``, the last step of 3.5's
    ``createDataFrame`` of pandas), without a Python row or a pandas frame."""
    from pyspark.sql import DataFrame
    from pyspark.sql.pandas.serializers import ArrowStreamSerializer
    jvm = spark._jvm
    jiter = spark._sc._serialize_to_jvm(
        table.to_batches(), ArrowStreamSerializer(),
        lambda path: jvm.PythonSQLUtils.readArrowStreamFromFile(path),
        lambda: jvm.ArrowIteratorServer())
    return DataFrame(jvm.PythonSQLUtils.toDataFrame(jiter, schema.json(), spark._jsparkSession),
                     spark)


class BatchDriver:
    """``foreachBatch`` function of the source query (see module docstring).

    Parameters
    ----------
    spark : the SparkSession.
    operator : the :class:`~sparkbalance.state.operator.KeyedStateOperator` whose
        ``update_values`` is ``call``.
    call : the :class:`~.group_call.GroupCall`.
    out_schema : the ``outputStructType``.
    sink : the user's sink (:mod:`.sinks`).
    meta_dir : where each batch's clock is saved: a local path, a Hadoop URI or a store
        (:func:`~sparkbalance.state.durability.store.store_for`), or None.
    event_col, delay_ms : the watermarked column and its delay, or None.
    arrow_input : rows reach the merge as Arrow chunks per key (:mod:`.arrow_input`;
        the caller checks the schema allows it, :func:`~.arrow_input.use_arrow`), else
        (default) as Python rows through ``DataFrame.rdd``.
    """

    def __init__(self, spark: Any, operator: Any, call: GroupCall, out_schema: Any,
                 sink: Any, meta_dir: str | None, event_col: str | None,
                 delay_ms: int | None, arrow_input: bool = False) -> None:
        self.spark, self.op, self.call = spark, operator, call
        operator.collect_outputs = True    # the outputs come back with the merge job
        self.arrow_input = bool(arrow_input)
        self._arrow_schema = arrow_schema(call.converter.schema) if arrow_input else None
        self.out_schema, self.sink = out_schema, sink
        self._frames = ArrowFrames(spark, out_schema)
        self.meta = None if meta_dir is None else store_for(spark.sparkContext, meta_dir)
        self.event_col = event_col
        self.watermark = None if event_col is None else WatermarkClock(int(delay_ms))
        self.due: dict[Any, int] = {}     # state key -> timeout ms (keys with one set)
        self.batches: list[dict] = []     # per applied batch: id, seconds, rows out
        if self.meta is not None:
            self.meta.mkdirs()
        self._resume()

    # ------------------------------------------------------------------ restart
    def _resume(self) -> None:
        if self.meta is not None and self.watermark is not None:
            saved = self._saved()
            if saved:
                self.watermark.current_ms = self._load(saved[-1])["next_watermark_ms"]
        if self.op.last_batch_id is not None and self.call.timeout != "NoTimeout":
            pairs = self.op.state_rdd.filter(lambda kv: kv[1][2] != NO_TIMESTAMP)
            self.due = dict(pairs.map(lambda kv: (kv[0], kv[1][2])).collect())

    def _saved(self) -> list[int]:
        return sorted(int(n[:-5]) for n in self.meta.list()
                      if n.endswith(".json") and n[:-5].isdigit())

    def _load(self, batch_id: int) -> dict:
        return json.loads(self.meta.read_bytes(f"{batch_id}.json"))

    # ------------------------------------------------------------------ one batch
    def clock_for(self, df: Any, batch_id: int) -> BatchClock:
        """The batch's clock: saved before it is applied, reused on a replay."""
        if self.meta is not None and self.meta.exists(f"{batch_id}.json"):
            return BatchClock(**self._load(batch_id))
        batch_ms = int(time.time() * 1000)
        if self.watermark is None:
            clock = BatchClock(batch_ms)
        else:
            from pyspark.sql import functions as F
            top = df.agg(F.unix_micros(F.max(F.col(self.event_col)))).collect()[0][0]
            # Spark's EventTimeStats take each event time in ms (µs // 1000).
            top_ms = None if top is None else int(top) // 1000
            w = self.watermark.current_ms
            clock = BatchClock(batch_ms, w, w, self.watermark.next_ms(top_ms))
        if self.meta is not None:
            # atomic: whole or absent
            self.meta.write_atomic(f"{batch_id}.json", json.dumps(clock.__dict__).encode())
            for old in self._saved()[:-KEEP_CLOCKS]:
                self.meta.remove(f"{old}.json")
        return clock

    def __call__(self, df: Any, batch_id: int) -> None:
        t0 = time.perf_counter()
        clock = self.clock_for(df, batch_id)
        self.call.clock = clock
        outputs = self.op.process(self._pairs(df, clock), batch_id=batch_id)
        if self.watermark is not None:
            self.watermark.current_ms = max(self.watermark.current_ms, clock.next_watermark_ms)
        if outputs is not None:
            out = self._collect_outputs(outputs)
            self.sink.write(out, batch_id)
        self.batches.append({"batch_id": batch_id, "seconds": time.perf_counter() - t0})

    def _collect_outputs(self, outputs: Any) -> Any:
        """The batch's output DataFrame and the timeout changes: each merge task's outputs
        are one Arrow stream (:meth:`~.group_call.GroupCall.finish_outputs`) and the
        timeout changes are small, brought back by the merge job (``op.collected``) or, for
        a replay's kept outputs, collected in one job; the DataFrame is built from the
        Arrow batches (as ``createDataFrame`` of an Arrow table: no Python row, no Python
        stage when the sink reads it)."""
        items = self.op.collected if self.op.collected is not None else outputs.collect()
        streams, frames, rows = [], [], []
        for k, (tag, v) in items:
            if tag == "a":
                streams.append(v)
            elif tag == "t":
                if v == NO_TIMESTAMP:
                    self.due.pop(k, None)
                else:
                    self.due[k] = v
            elif tag == "p":       # a merge that ran without the per-task output hook
                frames.append(v)
            elif tag == "r":       # outputs kept by an older version's checkpoint
                rows.append(v)
        if frames:
            streams.append(self.call.converter.to_arrow(frames))
        table = arrow_table(streams)
        if table is None or table.num_rows == 0:
            out = self.spark.createDataFrame(rows, self.out_schema)
        else:
            out = self._frames(table)
            if rows:
                out = out.union(self.spark.createDataFrame(rows, self.out_schema))
        return out

    def _pairs(self, df: Any, clock: BatchClock) -> Any:
        index = self.call.key_index
        if self.arrow_input:
            pairs = arrow_pairs(df, self._arrow_schema, index)
        else:
            def pair(row: Any) -> tuple:
                t = tuple(row)
                return (state_key(tuple(t[i] for i in index)), t)

            pairs = df.rdd.map(pair)
        if self.call.timeout == "NoTimeout" or not self.due:
            return pairs
        if self.call.timeout == "ProcessingTimeTimeout":
            limit = clock.batch_ms
        else:
            limit = max(clock.watermark_ms, clock.next_watermark_ms)
        due = [(k, TICK) for k, ts in self.due.items() if ts < limit]
        if not due:
            return pairs
        sc = self.spark.sparkContext
        return pairs.union(sc.parallelize(due, max(1, min(len(due) // 10_000, 64))))
