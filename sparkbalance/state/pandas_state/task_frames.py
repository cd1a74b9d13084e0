"""A merge task's Arrow chunks converted to pandas once, each key handed a cut of it.

Converting each key's rows on its own (an Arrow batch read, Spark's column conversion and
a frame built per key) cost ~10x the cut of one frame: a skewed micro-batch of 20,000 rows
has ~2,500 keys, most of them one or two rows, so the per-key conversion was most of the
merge task's CPU. :func:`prepare_block` runs once per merge task before the keys are
folded (the merge's per-task hook,
:func:`~sparkbalance.state.frames.blocks.prepare_block`): the :class:`RowChunk` values of
all keys are laid side by side in key order, late rows dropped (EventTimeTimeout), and
converted with Spark's own conversion (:meth:`~.arrow_rows.RowConverter.frame`) once per
run of about :data:`RUN_ROWS` rows; each key then gets :class:`KeyFrames`: copies of its
row range with a fresh ``RangeIndex``, cut at ``maxRecordsPerBatch`` rows, and its key as
``series[0]`` of its first frame would give it.

The frames equal those of the per-key conversion (values, dtypes, index, columns, None and
NaN) as long as a column's pandas dtype does not depend on which rows are converted: an
integer or boolean column holding a null becomes float64 / object only in the frames of
keys with a null, so a run with such a null, or a column type outside
:data:`SLICEABLE`, is converted key by key as before.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from sparkbalance.state.pandas_state.arrow_input import RowChunk

__all__ = ["KeyFrames", "prepare_block", "RUN_ROWS", "SLICEABLE"]

#: Rows converted at once (a bound on the extra memory of one run; a key with more rows
#: is a run of its own).
RUN_ROWS: int = 1 << 16

#: Arrow type ids whose pandas conversion is the same row by row whatever the other rows:
#: checked with ``pyarrow.types`` predicates (see :func:`_sliceable`).
SLICEABLE = ("integer", "floating", "boolean", "string", "timestamp", "date32")


class KeyFrames(NamedTuple):
    """One key's rows of a merge task as the function sees them.

    ``rows``: its rows before late rows were dropped (the planner's weight, as the chunks
    weighed); ``frames``: its pandas frames (empty when every row was late); ``key``: the
    grouping tuple as Spark's worker gives it (None without frames).
    """

    rows: int
    frames: list
    key: tuple | None


def prepare_block(call: Any, block: dict) -> dict:
    """``block`` (``{key: [values]}``) with the :class:`RowChunk` values of each key
    replaced by one :class:`KeyFrames` (ticks and other values kept, in order; a key
    holding Python rows is left as it is). ``call`` is the
    :class:`~.group_call.GroupCall`.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from pyspark.sql.types import StructType, StructField, LongType
    >>> from sparkbalance.state.pandas_state.arrow_input import key_chunks
    >>> from sparkbalance.state.pandas_state.arrow_rows import RowConverter
    >>> from sparkbalance.state.pandas_state.group_call import GroupCall
    >>> s = StructType([StructField("k", LongType()), StructField("v", LongType())])
    >>> c = GroupCall(lambda k, p, st: [], RowConverter(s, s, "UTC", 10), [0], s,
    ...               "NoTimeout", None)
    >>> b = pa.record_batch([pa.array([1, 2, 1]), pa.array([5, 6, 7])], names=["k", "v"])
    >>> blk = {}
    >>> for k, ch in key_chunks([b.serialize().to_pybytes()], b.schema, [0]):
    ...     blk.setdefault(k, []).append(ch)
    >>> kf = prepare_block(c, blk)[(1,)][0]
    >>> kf.rows, kf.key, kf.frames[0]["v"].tolist(), list(kf.frames[0].index)
    (2, (np.int64(1),), [5, 7], [0, 1])
    """
    import pyarrow as pa

    schema = call.arrow_schema()
    keys, counts, messages = [], [], []
    for k, values in block.items():
        if len(values) == 1 and type(values[0]) is RowChunk:     # the usual key
            c = values[0]
            keys.append(k)
            counts.append(c.rows)
            messages.append(c.data)
            continue
        chunks = [v for v in values if type(v) is RowChunk]
        # a key holding Python rows (tuples) keeps its values; a str is the timeout tick
        if not chunks or any(type(v) is not RowChunk and not isinstance(v, str)
                             for v in values):
            continue
        keys.append(k)
        counts.append(sum(c.rows for c in chunks))
        messages.extend(c.data for c in chunks)
    if not keys:
        return block
    table = _read_messages(schema, messages, sum(counts))
    out = dict(block)
    sliceable = all(_sliceable(f.type) for f in schema)
    start = 0       # first key of the run
    first_row = 0   # its first row
    run_rows = 0
    for i, k in enumerate(keys):
        run_rows += counts[i]
        if run_rows >= RUN_ROWS or i == len(keys) - 1:
            frames = _run(call, schema, table.slice(first_row, run_rows), counts[start:i + 1],
                          sliceable)
            for j, kf in zip(range(start, i + 1), frames):
                kk = keys[j]
                values = block[kk]
                out[kk] = ([kf] if len(values) == 1 else
                           [kf] + [v for v in values if type(v) is not RowChunk])
            start, first_row, run_rows = i + 1, first_row + run_rows, 0
    return out


def _read_messages(schema: Any, messages: list, rows: int) -> Any:
    """The Arrow IPC record-batch messages ``messages`` (of ``schema``, ``rows`` rows in
    all, in order) as one ``pyarrow.Table``, read as one stream (the schema's message
    before them): one call into Arrow for the task instead of a read per key (~2.5 us a
    key). Messages a stream reader refuses are read one by one.

    Examples
    --------
    >>> import pyarrow as pa
    >>> b = pa.record_batch([pa.array([1, 2, 3])], names=["k"])
    >>> msgs = [b.slice(0, 1).serialize().to_pybytes(), b.slice(1).serialize().to_pybytes()]
    >>> _read_messages(b.schema, msgs, 3).column("k").to_pylist()
    [1, 2, 3]
    """
    import pyarrow as pa
    try:
        table = pa.ipc.open_stream(pa.py_buffer(b"".join(
            [schema.serialize().to_pybytes(), *messages]))).read_all()
        if table.num_rows == rows and table.schema.equals(schema):
            return table
    except (pa.ArrowInvalid, OSError):
        pass
    read, buf = pa.ipc.read_record_batch, pa.py_buffer
    return pa.Table.from_batches([read(buf(m), schema) for m in messages], schema=schema)


def _sliceable(t: Any) -> bool:
    import pyarrow as pa
    return any(getattr(pa.types, f"is_{name}")(t) for name in SLICEABLE)


def _run(call: Any, schema: Any, table: Any, counts: list, sliceable: bool) -> list:
    """The :class:`KeyFrames` of the keys of one run (``counts``: their rows, in the order
    of ``table``'s rows)."""
    import numpy as np
    import pyarrow as pa

    n = len(counts)
    table = table.combine_chunks()
    batch = (table.to_batches()[0] if table.num_rows
             else pa.RecordBatch.from_pylist([], schema=schema))
    kept = np.asarray(counts, dtype=np.int64)
    late = call.late_mask(batch)
    if late is not None:
        owner = np.repeat(np.arange(n), kept)
        batch = batch.filter(pa.array(late))
        kept = np.bincount(owner[late], minlength=n)
    ends = np.cumsum(kept)
    conv = call.converter
    step = conv.max_records
    fast = sliceable and not any(
        c.null_count and (pa.types.is_integer(c.type) or pa.types.is_boolean(c.type))
        for c in batch.columns)
    if fast and batch.num_rows:
        # one conversion, consolidated (a cut then copies one block per dtype)
        big = conv.frame(batch).copy()
        key_cols = [_key_column(big.iloc[:, i]) for i in call.key_index]
        cut = _cutter(big)
    out = []
    for j in range(n):
        m, e = int(kept[j]), int(ends[j])
        a = e - m
        if m == 0:
            out.append(KeyFrames(counts[j], [], None))
            continue
        if fast:
            frames = [cut(s, min(s + step, e)) for s in range(a, e, step)]
            key = tuple(col[a] for col in key_cols)
        else:
            frames = [conv.frame(batch.slice(s, min(step, e - s))) for s in range(a, e, step)]
            key = tuple(_first(frames[0].iloc[:, i]) for i in call.key_index)
        out.append(KeyFrames(counts[j], frames, key))
    return out


def _cutter(big: Any) -> Any:
    """``cut(s, e)``: rows ``s:e`` of the frame ``big`` as a frame of their own (a copy,
    with a fresh ``RangeIndex``), what ``big.iloc[s:e].copy()`` with a new index gives.
    Built from ``big``'s block manager: a copy of the row range of each of its
    consolidated numpy blocks, in a manager with a fresh ``RangeIndex`` (~5 us a key for
    two columns, against ~8 through ``BlockManager.get_slice`` and a block copy, ~40
    through ``iloc``); most keys of a skewed batch have a row or two, so this fixed cost
    is most of the task's conversion. Blocks that are not 2-D numpy arrays are sliced by
    the manager, and a pandas without these internals cuts by ``iloc``.

    Examples
    --------
    >>> import pandas as pd
    >>> p = _cutter(pd.DataFrame({"k": [1, 2, 3], "x": ["a", "b", "c"]}))(1, 3)
    >>> p.to_dict("list"), list(p.index)
    ({'k': [2, 3], 'x': ['b', 'c']}, [0, 1])
    """
    import numpy as np
    import pandas as pd
    mgr = big._mgr
    columns, manager = mgr.axes[0], type(mgr)
    from_mgr = pd.DataFrame._from_mgr

    def cut_mgr(s: int, e: int) -> Any:
        m = mgr.get_slice(slice(s, e), axis=1)
        m = manager([b.copy(deep=True) for b in m.blocks], [columns, pd.RangeIndex(e - s)],
                    verify_integrity=False)
        return from_mgr(m, axes=m.axes)

    def cut_iloc(s: int, e: int) -> Any:
        p = big.iloc[s:e].copy()
        p.index = pd.RangeIndex(len(p))
        return p

    try:
        blocks = [(b.values, b.mgr_locs, b.make_block_same_class) for b in mgr.blocks]
        rows = pd.RangeIndex._simple_new
        if not all(type(v) is np.ndarray and v.ndim == 2 for v, _, _ in blocks):
            raise TypeError

        def cut(s: int, e: int) -> Any:
            m = manager(tuple(make(v[:, s:e].copy(), loc) for v, loc, make in blocks),
                        [columns, rows(range(e - s))], verify_integrity=False)
            return from_mgr(m, axes=m.axes)
        if not cut(0, 0).columns.equals(big.columns):
            raise TypeError
        return cut
    except (AttributeError, TypeError, ValueError):    # not numpy blocks, other internals
        cut = cut_mgr

    try:
        if not cut(0, 0).columns.equals(big.columns):
            raise TypeError
    except (AttributeError, TypeError, ValueError):    # internals of another pandas
        return cut_iloc
    return cut


def _key_column(series: Any) -> Any:
    """What ``series[j]`` reads, indexable at numpy speed: the column's numpy array when
    its elements are the scalars ``series[j]`` gives (numeric, bool, object), else the
    series (e.g. datetime64, whose element is a ``Timestamp``, not a ``datetime64``)."""
    values = series.to_numpy(copy=False)
    return values if values.dtype.kind in "biufO" else series


def _first(series: Any) -> Any:
    # Spark's worker takes the key as ``series[0]``: numpy scalars for numeric columns.
    return series[0]
