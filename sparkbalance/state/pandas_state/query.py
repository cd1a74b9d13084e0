"""``stateful(stream.groupBy(...)).applyInPandasWithState(...)``: Spark's call, balanced.

How it runs. :meth:`StatefulGroups.applyInPandasWithState` checks Spark's arguments and
returns a :class:`StatefulFrame`, a handle whose ``writeStream`` is a
:class:`StatefulWriter` recording the user's settings (format, outputMode, options,
checkpointLocation, trigger, queryName, partitionBy, foreachBatch). ``start()`` starts the
*source* query (the stream before ``groupBy``) with the user's trigger and checkpoint
location and ``foreachBatch`` = a :class:`~.batch_driver.BatchDriver`, which applies each
micro-batch to a :class:`~sparkbalance.state.operator.KeyedStateOperator` (state
checkpointed under ``<checkpointLocation>/sparkbalance-state``) and writes the batch's
outputs to the user's sink once per batch id. ``start`` returns Spark's own
``StreamingQuery`` of the source query.
"""
from __future__ import annotations

from typing import Any, Callable

from sparkbalance.state.pandas_state.arrow_input import use_arrow
from sparkbalance.state.pandas_state.arrow_rows import RowConverter
from sparkbalance.state.pandas_state.batch_driver import BatchDriver
from sparkbalance.state.pandas_state.group_call import TIMEOUTS, GroupCall
from sparkbalance.state.pandas_state.sinks import sink_for
from sparkbalance.state.pandas_state.watermark import watermark_column

__all__ = ["stateful", "StatefulGroups", "StatefulFrame", "StatefulWriter", "OUTPUT_MODES"]

#: Output modes of applyInPandasWithState (Spark: "Append" or "Update", case-insensitive).
OUTPUT_MODES = ("append", "update")


def stateful(grouped: Any, num_partitions: int | None = None, **operator_args: Any
             ) -> "StatefulGroups":
    """A balanced drop-in for ``grouped.applyInPandasWithState``.

    Parameters
    ----------
    grouped : ``stream.groupBy(col, ...)`` of a streaming DataFrame (plain columns).
    num_partitions : state partitions; default ``spark.sql.shuffle.partitions`` (Spark's).
    **operator_args : ``arrow_input`` (None: rows reach the function through Arrow chunks
        per key when the schema allows, :mod:`.arrow_input`; False: as Python rows), the
        rest passed to :class:`~sparkbalance.state.operator.KeyedStateOperator`
        (``planner``, ``theta``, ``listener``, ``trigger``, ...).

    Examples
    --------
    >>> q = (stateful(events.groupBy("user"))                            # doctest: +SKIP
    ...      .applyInPandasWithState(count_fn, "user string, n long", "n long",
    ...                              "Update", "NoTimeout")
    ...      .writeStream.outputMode("update").format("parquet")
    ...      .option("checkpointLocation", "/ck").start("/out"))
    """
    df = getattr(grouped, "_df", None)
    if df is None or not hasattr(grouped, "applyInPandasWithState"):
        raise TypeError(f"stateful({grouped!r}); expected the GroupedData of "
                        "stream.groupBy(...)")
    if not df.isStreaming:
        raise ValueError("stateful(grouped) needs a streaming DataFrame's groupBy "
                         "(spark.readStream...); for a batch DataFrame use applyInPandas")
    keys = grouped.count().columns[:-1]      # the grouping columns' names, as resolved
    missing = [k for k in keys if k not in df.columns]
    if missing:
        raise ValueError(f"groupBy expressions {missing} are not columns of the stream "
                         f"{df.columns}; group by plain columns (withColumn first)")
    arrow_input = operator_args.pop("arrow_input", None)
    return StatefulGroups(df, keys, num_partitions, operator_args, arrow_input)


class StatefulGroups:
    """The grouped stream; :meth:`applyInPandasWithState` as Spark's."""

    def __init__(self, df: Any, keys: list[str], num_partitions: int | None,
                 operator_args: dict, arrow_input: bool | None = None) -> None:
        self.df, self.keys = df, list(keys)
        self.num_partitions, self.operator_args = num_partitions, dict(operator_args)
        self.arrow_input = arrow_input

    def applyInPandasWithState(self, func: Callable, outputStructType: Any,
                               stateStructType: Any, outputMode: str,
                               timeoutConf: str) -> "StatefulFrame":
        """Spark's arguments and function contract
        (``GroupedData.applyInPandasWithState``); returns a :class:`StatefulFrame`."""
        from pyspark.sql.types import StructType, _parse_datatype_string
        if not callable(func):
            raise TypeError(f"func={func!r}; expected func(key, pdf_iter, state)")
        schemas = []
        for name, s in (("outputStructType", outputStructType),
                        ("stateStructType", stateStructType)):
            if isinstance(s, str):
                s = _parse_datatype_string(s)
            if not isinstance(s, StructType):
                raise TypeError(f"{name}={s!r}; expected a StructType or a DDL string")
            schemas.append(s)
        mode = str(outputMode).lower()
        if mode not in OUTPUT_MODES:
            raise ValueError(f"outputMode={outputMode!r}; expected Append or Update")
        if timeoutConf not in TIMEOUTS:
            raise ValueError(f"timeoutConf={timeoutConf!r}; expected one of "
                             f"{', '.join(TIMEOUTS)}")
        wm = watermark_column([(f.name, f.metadata) for f in self.df.schema])
        if timeoutConf == "EventTimeTimeout" and wm is None:
            raise ValueError("timeoutConf='EventTimeTimeout' needs withWatermark(...) on the "
                             "stream before groupBy (Spark's rule)")
        return StatefulFrame(self, func, schemas[0], schemas[1], mode, timeoutConf, wm)


class StatefulFrame:
    """The result of ``applyInPandasWithState``: its ``schema`` and ``writeStream``."""

    def __init__(self, groups: StatefulGroups, func: Callable, out_schema: Any,
                 state_schema: Any, mode: str, timeout: str,
                 watermark: tuple[str, int] | None) -> None:
        self.groups, self.func = groups, func
        self.schema, self.state_schema = out_schema, state_schema
        self.mode, self.timeout, self.watermark = mode, timeout, watermark

    @property
    def columns(self) -> list[str]:
        return self.schema.names

    @property
    def isStreaming(self) -> bool:
        return True

    @property
    def writeStream(self) -> "StatefulWriter":
        return StatefulWriter(self)

    def group_call(self) -> GroupCall:
        """The per-key step (:class:`~.group_call.GroupCall`) for the session's settings."""
        df = self.groups.df
        spark = df.sparkSession
        tz = spark.conf.get("spark.sql.session.timeZone")
        max_rec = int(spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch", "10000"))
        conv = RowConverter(df.schema, self.schema, tz, max_rec)
        cols = df.columns
        event = None if self.watermark is None else cols.index(self.watermark[0])
        return GroupCall(self.func, conv, [cols.index(k) for k in self.groups.keys],
                         self.state_schema, self.timeout, event)


class StatefulWriter:
    """``writeStream`` of a :class:`StatefulFrame`: the user's chain, recorded, then
    :meth:`start` (see module docstring)."""

    def __init__(self, frame: StatefulFrame) -> None:
        self.frame = frame
        self._format: str | None = None
        self._mode: str | None = None
        self._options: dict[str, str] = {}
        self._trigger: dict[str, Any] = {}
        self._name: str | None = None
        self._foreach: Callable | None = None
        self._partition_by: list | None = None
        self.driver: BatchDriver | None = None

    def format(self, source: str) -> "StatefulWriter":
        self._format = source
        return self

    def outputMode(self, outputMode: str) -> "StatefulWriter":
        self._mode = str(outputMode).lower()
        return self

    def option(self, key: str, value: Any) -> "StatefulWriter":
        self._options[key] = str(value) if not isinstance(value, str) else value
        return self

    def options(self, **options: Any) -> "StatefulWriter":
        for k, v in options.items():
            self.option(k, v)
        return self

    def trigger(self, **trigger: Any) -> "StatefulWriter":
        self._trigger = trigger
        return self

    def queryName(self, queryName: str) -> "StatefulWriter":
        self._name = queryName
        return self

    def partitionBy(self, *cols: str) -> "StatefulWriter":
        self._partition_by = list(cols[0] if len(cols) == 1 and isinstance(cols[0], list)
                                  else cols)
        return self

    def foreachBatch(self, func: Callable[[Any, int], Any]) -> "StatefulWriter":
        self._foreach = func
        return self

    def start(self, path: str | None = None, format: str | None = None,
              outputMode: str | None = None, queryName: str | None = None,
              **options: Any) -> Any:
        """Start the query; returns Spark's ``StreamingQuery`` of the source query."""
        from sparkbalance.state.operator import KeyedStateOperator
        if format is not None:
            self.format(format)
        if outputMode is not None:
            self.outputMode(outputMode)
        if queryName is not None:
            self.queryName(queryName)
        self.options(**options)
        f = self.frame
        mode = self._mode or "append"
        if mode != f.mode:
            raise ValueError(f"outputMode({mode!r}) of the query differs from "
                             f"applyInPandasWithState's outputMode={f.mode!r}; Spark "
                             "requires them to agree")
        df = f.groups.df
        spark = df.sparkSession
        ck = self._options.get("checkpointLocation") or spark.conf.get(
            "spark.sql.streaming.checkpointLocation", None)
        if not ck:
            raise ValueError("option('checkpointLocation', dir) is needed: the state is "
                             "checkpointed beside the query's checkpoint")
        ck = str(ck)
        sink = sink_for(spark, self._format, path, self._options, self._name, f.schema,
                        self._foreach, self._partition_by)
        call = f.group_call()
        n = f.groups.num_partitions or int(spark.conf.get("spark.sql.shuffle.partitions"))
        arrow = use_arrow(spark, df.schema, f.groups.keys, f.groups.arrow_input)
        args = dict(f.groups.operator_args)   # the look-ahead's tally weighs a chunk's rows
        op = KeyedStateOperator(spark, n, update_values=call, initial=None,
                                checkpoint_dir=ck.rstrip("/") + "/sparkbalance-state", **args)
        local = ck[len("file:"):] if ck.startswith("file:") and "://" not in ck else ck
        meta = local.rstrip("/") + "/sparkbalance-meta"     # local or a Hadoop URI
        wm = f.watermark
        self.driver = BatchDriver(spark, op, call, f.schema, sink, meta,
                                  None if wm is None else wm[0],
                                  None if wm is None else wm[1], arrow)
        w = df.writeStream.foreachBatch(self.driver).option("checkpointLocation", ck)
        if self._trigger:
            w = w.trigger(**self._trigger)
        if self._name:
            w = w.queryName(self._name)
        return w.start()
