"""One key's ``GroupState`` for one call of the user's function, and Spark's rule for what
the call leaves in the state store.

The ``state`` handed to the function is PySpark's own
:class:`pyspark.sql.streaming.state.GroupState`, built as Spark's Python worker builds it
(``FlatMapGroupsInPandasWithStateExec``: a fresh state per call, whose timeout is unset
until the call sets one), so every method behaves, converts and fails exactly as in Spark.
After the call, :func:`stored_after` applies the store rule of
``FlatMapGroupsInPandasWithStateExec``: removed without a timeout deletes the key; updated,
removed or a timeout set writes ``(value or null, timeout)``; otherwise the key keeps what it
had (its value *and* its old timeout).

A stored entry is ``(key, value, timeout_ms)``: ``key`` the grouping tuple the function
saw, as plain Python values (:func:`plain_value`: a numpy scalar pickles at ~6 us and
~100 bytes, its Python value at a tenth of both, and each stored entry is pickled to
measure S(k) and again in its state frame), ``value`` the state row in Spark's internal form (``StructType.toInternal``) or
None, ``timeout_ms`` :data:`~.watermark.NO_TIMESTAMP` or the timeout.
"""
from __future__ import annotations

from typing import Any

from sparkbalance.state.pandas_state.watermark import NO_TIMESTAMP

__all__ = ["new_group_state", "stored_after", "plain_value", "Entry"]

Entry = tuple  # (key, internal value | None, timeout_ms)


def new_group_state(entry: Entry | None, schema: Any, timeout_conf: str, batch_ms: int,
                    watermark_ms: int, watermark_present: bool,
                    timed_out: bool) -> Any:
    """PySpark's ``GroupState`` for one call on a key stored as ``entry`` (None: new key).

    Examples
    --------
    >>> from pyspark.sql.types import StructType, StructField, LongType
    >>> s = new_group_state(None, StructType([StructField("c", LongType())]), "NoTimeout",
    ...                     1000, -1, False, False)
    >>> s.exists, s.getCurrentProcessingTimeMs()
    (False, 1000)
    """
    from pyspark.sql.streaming.state import GroupState
    value = None if entry is None or entry[1] is None else schema.fromInternal(entry[1])
    return GroupState(optionalValue=value, batchProcessingTimeMs=batch_ms,
                      eventTimeWatermarkMs=watermark_ms, timeoutConf=timeout_conf,
                      hasTimedOut=timed_out, watermarkPresent=watermark_present,
                      defined=value is not None, updated=False, removed=False,
                      timeoutTimestamp=NO_TIMESTAMP, keyAsUnsafe=b"", valueSchema=schema)


def stored_after(entry: Entry | None, key: tuple, state: Any) -> Entry | None:
    """What the store holds for ``key`` after a call that left ``state`` (Spark's rule).

    Examples
    --------
    >>> from pyspark.sql.types import StructType, StructField, LongType
    >>> schema = StructType([StructField("c", LongType())])
    >>> s = new_group_state(None, schema, "NoTimeout", 0, -1, False, False)
    >>> s.update((3,)); stored_after(None, ("a",), s)
    (('a',), (3,), -1)
    >>> import numpy as np
    >>> type(stored_after(None, (np.int64(1),), s)[0][0]).__name__
    'int'
    >>> s.remove(); stored_after((("a",), (3,), -1), ("a",), s) is None
    True
    """
    timeout = int(state._timeout_timestamp)
    if state._removed and timeout == NO_TIMESTAMP:
        return None
    if state._updated or state._removed or timeout != NO_TIMESTAMP:
        value = state._value_schema.toInternal(state._value) if state._defined else None
        return (tuple(plain_value(v) for v in key), None if value is None else tuple(value),
                timeout)
    return entry


def plain_value(v: Any) -> Any:
    """A numpy / pandas scalar as the Python value Arrow reads (a ``Timestamp`` as a
    ``datetime``); any other value as it is.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> plain_value(np.int64(3)), plain_value(pd.Timestamp("2020-01-01 00:00:01"))
    (3, datetime.datetime(2020, 1, 1, 0, 0, 1))
    """
    how = _HOW.get(type(v))
    if how is None:         # decided once per type: two failed attribute lookups cost ~1 us
        how = _HOW[type(v)] = (
            "to_pydatetime" if hasattr(v, "to_pydatetime") else
            "item" if hasattr(v, "item") and not isinstance(v, (bytes, str)) else "")
    return getattr(v, how)() if how else v


#: How :func:`plain_value` converts a value of each type it has seen (a method name, or
#: "" for as it is).
_HOW: dict = {}
