"""Input coercion of the keyed-state operator: the Spark handle, and a batch (an RDD of
``(key, value)`` pairs or a DataFrame) into validated pairs, with errors naming the bad
value and what was expected.

:func:`check_pairs` runs inside Spark tasks; the module imports pyspark only inside
:func:`as_pairs`, so the unit tests exercise the rest without a SparkContext.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from sparkbalance.hashing import validate_key

__all__ = ["as_pairs", "check_pairs", "state_key_error"]


def check_pairs(it: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
    """Validate batch records: each a ``(key, value)`` pair with a routable key.

    Examples
    --------
    >>> list(check_pairs([("a", 1), ["b", 2]]))
    [('a', 1), ('b', 2)]
    >>> list(check_pairs([("a", 1, 2)]))
    Traceback (most recent call last):
    ...
    ValueError: batch record ('a', 1, 2) has 3 fields; expected a (key, value) pair
    """
    for rec in it:
        if not isinstance(rec, (tuple, list)):
            raise TypeError(f"batch record {rec!r} is a {type(rec).__name__}; expected a "
                            "(key, value) pair")
        if len(rec) != 2:
            raise ValueError(f"batch record {rec!r} has {len(rec)} fields; expected a "
                             "(key, value) pair")
        k = rec[0]
        if k is None or (isinstance(k, float) and k != k):
            raise state_key_error(k, f"batch record {rec!r}")
        validate_key(k)
        yield (k, rec[1])


def state_key_error(key: Any, where: str) -> Exception:
    """The error for a key the keyed state cannot hold (None or NaN), naming ``where`` it
    came from.

    Examples
    --------
    >>> e = state_key_error(None, "costs")
    >>> type(e).__name__, str(e).split(";")[0]
    ('TypeError', 'costs has key None')
    """
    if key is None:
        return TypeError(f"{where} has key None; keys must be non-null (int, float, str, "
                         "bytes, bool or tuples of them)")
    # The state is a dict per key group: NaN != NaN, so a NaN key could never be found
    # again (Spark groups NaN as one key; the state cannot hold it).
    return ValueError(f"{where} has a NaN key; the keyed state needs keys equal to themselves")


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
