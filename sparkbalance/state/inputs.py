"""Input coercion of the keyed-state operator: the Spark handle, and a batch (an RDD of
``(key, value)`` pairs or a DataFrame) into validated pairs, with errors naming the bad
value and what was expected.

The key rule of the keyed state: a key must equal itself. The state keeps one dict per key
group, and NaN != NaN, so a NaN key would start a new entry at every arrival that is never
found again (the state grows without bound and each output is 1, not a running total). Such
keys - a float NaN of any width (``float``, ``numpy.float16/32/64``), ``Decimal("NaN")`` and
``Decimal("sNaN")``, or a tuple (a struct key) holding one at any depth - are refused with
an error naming the record and where in the key the NaN is (:func:`nan_in_key`), before the
batch changes any state (the batch's job fails and the operator is left as before it). The
partitioning adapters instead route every NaN to one partition, as Spark groups it
(:mod:`sparkbalance.hashing`): they hold no state, so nothing grows.

:func:`check_pairs` runs inside Spark tasks; the module imports pyspark only inside
:func:`as_pairs`, so the unit tests exercise the rest without a SparkContext.
"""
from __future__ import annotations

from decimal import Decimal
from typing import Any, Iterable, Iterator

import numpy as np

from sparkbalance.hashing import validate_key

__all__ = ["as_pairs", "check_pairs", "state_key_error", "nan_in_key"]

_NO_NAN = frozenset({str, int, bytes})


def nan_in_key(key: Any) -> str | None:
    """Where ``key`` holds a value not equal to itself: ``"key"``, ``"key[1]"``,
    ``"key[0][2]"``..., or None when it holds none.

    Examples
    --------
    >>> nan_in_key(float("nan")), nan_in_key((1, ("a", Decimal("sNaN")))), nan_in_key((1, 2.5))
    ('key', 'key[1][1]', None)
    >>> nan_in_key(np.float32("nan"))
    'key'
    """
    if isinstance(key, (float, np.floating)):
        return "key" if key != key else None
    if isinstance(key, Decimal):
        return "key" if key.is_nan() else None
    if isinstance(key, (tuple, list)):
        for i, part in enumerate(key):
            at = nan_in_key(part)
            if at is not None:
                return f"key[{i}]" + at[3:]
    return None


def check_pairs(it: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
    """Validate batch records: each a ``(key, value)`` pair with a routable key that
    equals itself (the key rule above).

    Examples
    --------
    >>> list(check_pairs([("a", 1), ["b", 2]]))
    [('a', 1), ('b', 2)]
    >>> list(check_pairs([("a", 1, 2)]))
    Traceback (most recent call last):
    ...
    ValueError: batch record ('a', 1, 2) has 3 fields; expected a (key, value) pair
    >>> try:
    ...     list(check_pairs([("a", 1), ((1, float("nan")), 2)]))
    ... except ValueError as e:
    ...     print(str(e).split(";")[0])
    batch record ((1, nan), 2) (record 1 of its input partition) has a NaN key (a NaN at key[1])
    """
    for i, rec in enumerate(it):
        if not isinstance(rec, (tuple, list)):
            raise TypeError(f"batch record {rec!r} is a {type(rec).__name__}; expected a "
                            "(key, value) pair")
        if len(rec) != 2:
            raise ValueError(f"batch record {rec!r} has {len(rec)} fields; expected a "
                             "(key, value) pair")
        k = rec[0]
        # str and int keys (the common ones) cannot hold a NaN: no call per record for them
        if k is None or (type(k) not in _NO_NAN and nan_in_key(k) is not None):
            raise state_key_error(k, f"batch record {rec!r} (record {i} of its input "
                                     "partition)")
        validate_key(k)
        yield (k, rec[1])


def state_key_error(key: Any, where: str) -> Exception:
    """The error for a key the keyed state cannot hold (None, or one holding a NaN:
    :func:`nan_in_key`), naming ``where`` it came from.

    Examples
    --------
    >>> e = state_key_error(None, "costs")
    >>> type(e).__name__, str(e).split(";")[0]
    ('TypeError', 'costs has key None')
    >>> str(state_key_error(Decimal("NaN"), "costs")).split(";")[0]
    'costs has a NaN key (a NaN at key)'
    """
    if key is None:
        return TypeError(f"{where} has key None; keys must be non-null (int, float, str, "
                         "bytes, bool or tuples of them)")
    return ValueError(f"{where} has a NaN key (a NaN at {nan_in_key(key)}); the keyed state "
                      "needs keys equal to themselves: a NaN (float of any width, Decimal NaN "
                      "or sNaN, also inside a tuple) would start a new entry at every "
                      "arrival. Filter or replace such keys before the batch")


def as_pairs(batch: Any, key_col: str = "key", value_col: str = "value") -> Any:
    """``batch`` as an RDD of validated ``(key, value)`` pairs (lazy: a bad record raises
    in the job that reads it).

    ``batch`` is an RDD of pairs, or a DataFrame with columns ``key_col`` and ``value_col``
    (or exactly two columns, key then value).

    Examples
    --------
    >>> as_pairs(spark.createDataFrame([("a", 1)], ["key", "value"])).collect()  # doctest: +SKIP
    [('a', 1)]
    """
    from pyspark import RDD
    if isinstance(batch, RDD):
        rdd = batch
    elif hasattr(batch, "columns") and hasattr(batch, "select"):
        cols = list(batch.columns)
        if key_col in cols and value_col in cols:
            sel = batch.select(key_col, value_col)
        elif len(cols) == 2:
            sel = batch
        else:
            raise ValueError(f"DataFrame has columns {cols}; expected columns "
                             f"{key_col!r} and {value_col!r} (key_col=, "
                             "value_col=) or exactly two columns (key, value)")
        rdd = sel.rdd.map(lambda r: (r[0], r[1]))
    else:
        raise TypeError(f"batch is a {type(batch).__name__}; expected an RDD of (key, "
                        "value) pairs or a DataFrame with key/value columns")
    return rdd.mapPartitions(check_pairs)
