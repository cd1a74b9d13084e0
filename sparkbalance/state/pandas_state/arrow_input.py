"""A micro-batch's rows as Arrow chunks per key: the input of the balanced
``applyInPandasWithState`` without a Python row.

Spark's own operator hands its Python worker Arrow batches of each key's rows. Reading the
micro-batch through ``DataFrame.rdd`` instead pickles every row in the JVM, builds a
``Row`` per record in Python, shuffles each record and builds a frame per key from Python
values. Here the JVM writes the micro-batch as Arrow record batches (``toArrowBatchRdd``,
the conversion ``toPandas`` and ``mapInArrow`` use), and the routing shuffle's map task cuts
each batch by key (:func:`key_chunks`): one :class:`RowChunk` (the key's rows of that batch,
an Arrow IPC message) per key and input batch. A key's chunks meet in its merge task, where
:meth:`~.group_call.GroupCall.__call__` reads them back as Arrow and converts them to
pandas with Spark's own conversion.

The planner's load of a key is its rows: a chunk weighs its row count
(:meth:`~.group_call.GroupCall.weight`, the merge's weight hook in
:func:`~sparkbalance.state.frames.blocks.merge_blocks`), so pre-grouping does not change the
costs.

The key a chunk is stored under is the tuple of its grouping values as Arrow gives them
(``to_pylist``), equal to what ``DataFrame.rdd`` gives for the types of
:data:`KEY_TYPES`; a stream grouped by another type, or with a column Arrow cannot carry
exactly, keeps the row path (:func:`arrow_ready`).
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Iterator, NamedTuple

__all__ = ["NAN_KEY", "state_key", "RowChunk", "KEY_TYPES", "arrow_ready", "use_arrow",
           "arrow_schema", "key_chunks", "arrow_pairs"]

#: Grouping column types whose Arrow Python value equals the ``DataFrame.rdd`` one.
KEY_TYPES = ("LongType", "IntegerType", "ShortType", "ByteType", "StringType",
             "BooleanType", "DoubleType", "FloatType", "DateType")

#: Stands for a NaN in a grouping tuple: Spark groups NaN as one key, a dict never finds a
#: NaN again (NaN != NaN).
NAN_KEY: str = "\x00sparkbalance:NaN"


def state_key(values: tuple) -> tuple:
    """The operator's key of a grouping tuple (NaN replaced, so equal groups are equal).

    Examples
    --------
    >>> state_key(("a", float("nan"))) == state_key(("a", float("nan")))
    True
    """
    return tuple(NAN_KEY if isinstance(v, float) and math.isnan(v) else v for v in values)


class RowChunk(NamedTuple):
    """One key's rows of one input Arrow batch: ``rows`` rows as an Arrow IPC record-batch
    message (no schema: the reader has it, :func:`arrow_schema`)."""

    rows: int
    data: bytes


def arrow_ready(spark: Any, schema: Any, keys: list[str]) -> bool:
    """Whether the micro-batches of ``schema`` grouped by ``keys`` can reach the merge as
    Arrow chunks: every key of :data:`KEY_TYPES`, every column convertible to Arrow, and
    Arrow's regular (not large) string types (``useLargeVarTypes`` off)."""
    from pyspark.sql.pandas.types import to_arrow_schema
    if str(spark.conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false")
           ).lower() == "true":
        return False
    by_name = {f.name: f.dataType for f in schema}
    if len(by_name) != len(schema.fields):
        return False                 # duplicate column names: rows by position
    if any(type(by_name[k]).__name__ not in KEY_TYPES for k in keys):
        return False
    try:
        to_arrow_schema(schema, timezone="UTC")
    except Exception:                # a type Arrow does not carry (e.g. some UDTs)
        return False
    return True


def use_arrow(spark: Any, schema: Any, keys: list[str], wanted: bool | None) -> bool:
    """Whether the rows go as Arrow chunks: ``wanted`` None: when :func:`arrow_ready`;
    False: no; True: yes, and a ``ValueError`` naming the schema when it cannot."""
    ready = arrow_ready(spark, schema, keys)
    if wanted and not ready:
        raise ValueError(f"arrow_input=True for a stream of {schema.simpleString()} "
                         f"grouped by {keys}; Arrow chunks need grouping columns of "
                         f"{', '.join(KEY_TYPES)} (and useLargeVarTypes off)")
    return ready if wanted is None else bool(wanted)


def arrow_schema(schema: Any) -> Any:
    """The Arrow schema the JVM writes ``schema`` with (time zone metadata aside: a
    timestamp is the same instant whatever zone it is labelled with; PySpark 3.5's
    ``to_arrow_schema`` takes no zone and labels timestamps UTC itself)."""
    from pyspark.sql.pandas.types import to_arrow_schema
    try:
        return to_arrow_schema(schema, timezone="UTC")
    except TypeError:                 # PySpark 3.5: no timezone parameter
        return to_arrow_schema(schema)


def key_chunks(messages: Iterable[bytes], schema: Any, key_index: list[int]
               ) -> Iterator[tuple[tuple, RowChunk]]:
    """``(key tuple, RowChunk)`` per key of each Arrow record-batch message, rows of a key
    in their order in the batch (a NaN key part is mapped as
    :func:`state_key` maps it; a key may come as several chunks, in
    order).

    Examples
    --------
    >>> import pyarrow as pa
    >>> sch = pa.schema([("k", pa.string()), ("v", pa.int64())])
    >>> b = pa.record_batch([pa.array(["a", "b", "a"]), pa.array([1, 2, 3])], schema=sch)
    >>> [(k, c.rows) for k, c in key_chunks([b.serialize().to_pybytes()], sch, [0])]
    [(('a',), 2), (('b',), 1)]
    >>> [(k, c.rows) for k, c in key_chunks([b.slice(0, 1).serialize().to_pybytes()], sch, [0])]
    [(('a',), 1)]
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    names = [schema.names[i] for i in key_index]
    for msg in messages:
        batch = pa.ipc.read_record_batch(pa.py_buffer(msg), schema)
        n = batch.num_rows
        if n == 0:
            continue
        # A stable sort by the key puts each key's rows side by side in their order: one
        # take, then a zero-copy slice per key (a take per key costs ~2.5x as much).
        order = pc.sort_indices(batch, sort_keys=[(c, "ascending") for c in names])
        batch = batch.take(order)
        keys = list(zip(*(batch.column(i).to_pylist() for i in key_index)))
        start = 0
        for i in range(1, n + 1):
            # a NaN part never equals the next row's: its own run, mapped by state_key
            if i == n or keys[i] != keys[start]:
                rows = i - start
                yield state_key(keys[start]), RowChunk(
                    rows, msg if rows == n else
                    batch.slice(start, rows).serialize().to_pybytes())
                start = i


def arrow_pairs(df: Any, schema: Any, key_index: list[int]) -> Any:
    """The RDD of ``(key, RowChunk)`` of the micro-batch ``df`` (lazy; the Arrow batches
    are written in the JVM and cut by key in the routing shuffle's map task)."""
    from sparkbalance.state.frames.rdds import built_rdd
    jrdd = df._jdf.toArrowBatchRdd().toJavaRDD()
    messages = built_rdd(jrdd, df.sparkSession.sparkContext)
    index = list(key_index)
    return messages.mapPartitions(lambda it: key_chunks(it, schema, index))
