"""Rows of a micro-batch to the pandas a user function sees, and its pandas back to rows,
through the Arrow conversions of Spark's own Python worker.

Spark hands ``applyInPandasWithState`` each key's rows as pandas converted from Arrow
(``ArrowBatchTransformer.to_pandas``: int64/int32/float64/object/datetime64 columns, nullable
ints as float64), in chunks of at most ``spark.sql.execution.arrow.maxRecordsPerBatch``
rows, and takes the function's frames back through ``PandasToArrowConversion.convert``
(columns by name when they are strings, cast to the output schema). Using the same calls
keeps dtypes, nulls and NaNs identical.

Outputs are converted as Spark's worker converts them: the frames of many keys are
concatenated (``pd.concat(..., ignore_index=True)``, column by column when the frames agree
on columns and dtypes, :func:`concat_frames`; flushed past ``max_records`` rows) and
converted once (:meth:`RowConverter.to_arrow`), not frame by frame; the Arrow stream goes to
the driver as bytes and becomes the batch's output DataFrame without a Python row.

Timestamps: rows read through ``DataFrame.rdd`` carry naive datetimes in the Python
process's local time (PySpark's ``TimestampType.fromInternal``); they are made aware before
Arrow reads them, so the instant is kept whatever the time zones.
"""
from __future__ import annotations

import datetime as _dt
import functools
from typing import Any, Iterator

__all__ = ["RowConverter", "arrow_table", "concat_frames"]


class RowConverter:
    """Row tuples of ``schema`` to pandas chunks, and pandas of ``out_schema`` to row tuples.

    Parameters
    ----------
    schema, out_schema : the input and output ``StructType``.
    timezone : the session time zone (``spark.sql.session.timeZone``).
    max_records : rows per pandas chunk (``spark.sql.execution.arrow.maxRecordsPerBatch``;
        <= 0: unbounded, as in Spark).

    Examples
    --------
    >>> from pyspark.sql.types import StructType, StructField, LongType, StringType
    >>> s = StructType([StructField("k", StringType()), StructField("v", LongType())])
    >>> c = RowConverter(s, s, "UTC", 10_000)
    >>> [p.shape for p in c.to_pandas([("a", 1), ("a", None)])]
    [(2, 2)]
    >>> c.to_rows(c.to_pandas([("a", 1)])[0])
    [('a', 1)]
    """

    def __init__(self, schema: Any, out_schema: Any, timezone: str, max_records: int) -> None:
        self.schema = schema
        self.out_schema = out_schema
        self.timezone = timezone
        self.max_records = max_records if max_records > 0 else 2 ** 31 - 1
        self._types: list | None = None

    def __getstate__(self) -> dict:
        d = dict(self.__dict__)
        d["_types"] = None     # arrow types are rebuilt on the executor
        return d

    def _arrow_types(self) -> list:
        if self._types is None:
            from pyspark.sql.pandas.types import to_arrow_type
            try:
                self._types = [to_arrow_type(f.dataType, timezone="UTC") for f in self.schema]
            except TypeError:       # PySpark 3.5: no timezone parameter, timestamps in UTC
                self._types = [to_arrow_type(f.dataType) for f in self.schema]
        return self._types

    def to_pandas(self, rows: list) -> list:
        """``rows`` (tuples in ``schema`` order) as pandas DataFrames of at most
        ``max_records`` rows each (one empty frame for no rows)."""
        import pyarrow as pa
        types = self._arrow_types()
        names = self.schema.names
        out = []
        for start in range(0, max(len(rows), 1), self.max_records):
            part = rows[start:start + self.max_records]
            cols = list(zip(*part)) if part else [()] * len(names)
            arrays = [pa.array([_aware(v) for v in col] if t.tz else list(col), type=t)
                      if pa.types.is_timestamp(t) else pa.array(list(col), type=t)
                      for col, t in zip(cols, types)]
            out.append(self.frame(pa.RecordBatch.from_arrays(arrays, names=names)))
        return out

    def batches_to_pandas(self, batches: list) -> list:
        """Arrow record batches of ``schema`` (one key's rows, in order) as pandas
        DataFrames of at most ``max_records`` rows each, as :meth:`to_pandas` cuts rows."""
        import pyarrow as pa
        if len(batches) == 1 and batches[0].num_rows <= self.max_records:
            return [self.frame(batches[0])]
        table = pa.Table.from_batches(batches)
        return [self.frame(table.slice(s, self.max_records).combine_chunks().to_batches()[0])
                for s in range(0, table.num_rows, self.max_records)]

    def frame(self, batch: Any) -> Any:
        """One Arrow batch as the pandas frame Spark's worker makes of it."""
        import pandas as pd
        names = self.schema.names
        series = _to_series(batch, self.schema, self.timezone)
        # Spark's worker: pd.concat(series, axis=1); a dict of the same series builds
        # the same frame at half the cost (columns named alike; duplicates: concat)
        if len(set(names)) == len(names):
            return pd.DataFrame(dict(zip(names, series)), copy=False)
        return pd.concat(series, axis=1)

    def to_rows(self, pdf: Any) -> list:
        """The rows of one output frame (Spark's conversion to ``out_schema``)."""
        if len(pdf) == 0:
            return []
        batch = _to_batch(pdf, self.out_schema, self.timezone, by_name=True)
        cols = [c.to_pylist() for c in batch.columns]
        return list(zip(*cols))

    def to_arrow(self, pdfs: list) -> bytes:
        """Output frames (non-empty, in call order) as one Arrow IPC stream of
        ``out_schema``: concatenated and converted as Spark's worker does (a record batch
        per run of more than ``max_records`` rows), so the cost is per batch, not per key.

        Examples
        --------
        >>> import pandas as pd
        >>> from pyspark.sql.types import StructType, StructField, LongType
        >>> s = StructType([StructField("k", LongType())])
        >>> c = RowConverter(s, s, "UTC", 10_000)
        >>> arrow_table([c.to_arrow([pd.DataFrame({"k": [1]}), pd.DataFrame({"k": [2]})])]
        ...             ).column("k").to_pylist()
        [1, 2]
        """
        import pyarrow as pa
        batches, run, count = [], [], 0
        names = self.out_schema.names
        unique = len(set(names)) == len(names)

        def flush() -> None:
            merged = run[0] if len(run) == 1 else concat_frames(run)
            # columns already the schema's names in its order: selecting them by name
            # (a reindex and a copy of the frame) gives the same frame back
            by_name = not (unique and list(merged.columns) == names)
            batches.append(_to_batch(merged, self.out_schema, self.timezone, by_name))

        for pdf in pdfs:
            run.append(pdf)
            count += len(pdf)
            if count > self.max_records:     # Spark's worker flushes past the limit
                flush()
                run, count = [], 0
        if run:
            flush()
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, batches[0].schema) as w:
            for b in batches:
                w.write_batch(b)
        return sink.getvalue().to_pybytes()

    def chunks(self, rows: list) -> Iterator[Any]:
        """Lazy :meth:`to_pandas` chunks (the function may stop early)."""
        yield from self.to_pandas(rows)


@functools.lru_cache(maxsize=1)
def _conversion() -> Any:
    """PySpark 4's ``pyspark.sql.conversion``, or None (3.5): asked once per process, not
    once per key (a failed import searches the path again every time)."""
    try:
        import pyspark.sql.conversion as conversion
    except ImportError:
        return None
    return conversion


def _to_series(batch: Any, schema: Any, timezone: str) -> list:
    """An Arrow batch's columns as the pandas Series Spark's worker makes of them."""
    conversion = _conversion()
    if conversion is None:  # PySpark 3.5: the worker's serializer converts column by column
        from pyspark.sql.pandas.serializers import ArrowStreamPandasSerializer
        ser = ArrowStreamPandasSerializer(timezone, False)
        return [ser.arrow_to_pandas(c, "dict", False) for c in batch.columns]
    return conversion.ArrowBatchTransformer.to_pandas(
        batch, timezone=timezone, schema=schema, struct_in_pandas="dict",
        ndarray_as_list=False, prefer_int_ext_dtype=False, df_for_struct=False)


def _to_batch(pdf: Any, schema: Any, timezone: str, by_name: bool) -> Any:
    """A frame of the function's as the Arrow batch of ``schema`` Spark's worker makes
    (columns by name when they are strings and ``by_name``, else by position; cast)."""
    conversion = _conversion()
    if conversion is None:  # PySpark 3.5: the worker builds a struct array of the frame
        import pyarrow as pa
        from pyspark.sql.pandas.serializers import ArrowStreamPandasUDFSerializer
        from pyspark.sql.pandas.types import to_arrow_type
        ser = ArrowStreamPandasUDFSerializer(timezone, True, by_name, arrow_cast=True)
        return pa.RecordBatch.from_struct_array(
            ser._create_struct_array(pdf, to_arrow_type(schema)))
    return conversion.PandasToArrowConversion.convert(pdf, schema, timezone=timezone, safecheck=True,
                                           arrow_cast=True, assign_cols_by_name=by_name)


def arrow_table(streams: list) -> Any:
    """One ``pyarrow.Table`` of the Arrow IPC streams of :meth:`RowConverter.to_arrow`
    (None for no streams)."""
    import pyarrow as pa
    batches = [b for s in streams for b in pa.ipc.open_stream(s)]
    if not streams:
        return None
    return pa.Table.from_batches(batches, schema=pa.ipc.open_stream(streams[0]).schema)


def concat_frames(frames: list) -> Any:
    """``pd.concat(frames, ignore_index=True)``, a column at a time when every frame has
    the same plain column names (unique) and each column the same numpy dtype in every
    frame: the usual case of a function yielding one small frame per key, where
    ``pd.concat`` spends ~25 us a frame aligning and checking what this checks once a
    column (~2 us a frame; a block at a time, ~1 us a frame, when the frames also share
    their block layout, :func:`_block_columns`). Any other run is left to ``pd.concat``.

    Examples
    --------
    >>> import pandas as pd
    >>> a, b = pd.DataFrame({"k": [1], "x": ["u"]}), pd.DataFrame({"k": [2], "x": [None]})
    >>> concat_frames([a, b]).equals(pd.concat([a, b], ignore_index=True))
    True
    >>> concat_frames([a, pd.DataFrame({"x": ["v"], "k": [3]})])["k"].tolist()  # by name
    [1, 3]
    """
    import numpy as np
    import pandas as pd
    first = frames[0].columns
    names = list(first)
    try:
        if type(first) is not pd.Index or len(set(names)) != len(names):
            raise LookupError
        by_block = _block_columns(frames, first, names)
        if by_block is not None:
            cols = by_block
        else:
            cols = [[] for _ in names]
            for f in frames:
                if f.columns is not first and list(f.columns) != names:
                    raise LookupError
                mgr = f._mgr
                for i, col in enumerate(cols):
                    col.append(mgr.iget_values(i))
            for col in cols:
                dtype = col[0].dtype
                if type(col[0]) is not np.ndarray or any(
                        type(a) is not np.ndarray or a.dtype != dtype for a in col):
                    raise LookupError
            cols = [np.concatenate(col) for col in cols]
    except (LookupError, AttributeError, TypeError):   # AttributeError: pandas internals
        return pd.concat(frames, ignore_index=True)
    out = pd.DataFrame(dict(enumerate(cols)), copy=False)
    out.columns = first
    return out


def _block_columns(frames: list, first: Any, names: list) -> list | None:
    """The concatenated columns of ``frames`` when every frame has the columns ``names``
    in the same numpy blocks (same dtypes, each block's columns a run at the same
    places): the case of a function building each output frame from a dict alike, whose
    blocks are concatenated once each (about 1 us a frame, against ~1 us a column of a
    frame when taken column by column). None otherwise (the caller takes the columns
    one by one)."""
    import numpy as np
    layout = None
    parts: list = []
    for f in frames:
        cols = f.columns
        if cols is not first and cols._values.tolist() != names:
            return None
        blocks = f._mgr.blocks
        if layout is None:
            layout = []
            for b in blocks:
                if type(b.values) is not np.ndarray or not b.mgr_locs.is_slice_like:
                    return None
                layout.append((b.values.dtype, b.mgr_locs.as_slice))
                parts.append([])
        if len(blocks) != len(layout):
            return None
        for b, (dtype, where), part in zip(blocks, layout, parts):
            v = b.values
            if (type(v) is not np.ndarray or v.dtype != dtype
                    or not b.mgr_locs.is_slice_like or b.mgr_locs.as_slice != where):
                return None
            part.append(v)
    out: list = [None] * len(names)
    for (_, where), part in zip(layout, parts):
        values = np.concatenate(part, axis=1)
        for j, i in enumerate(range(*where.indices(len(names)))):
            out[i] = values[j]
    return out if all(c is not None for c in out) else None


def _aware(v: Any) -> Any:
    # TimestampType: naive datetimes from DataFrame.rdd are local time (TimestampNTZType
    # columns have no tz and keep theirs as they are).
    if type(v) is _dt.datetime and v.tzinfo is None:
        return v.astimezone()
    return v
