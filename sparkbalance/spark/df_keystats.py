"""Per-key statistics of a DataFrame, by one Spark SQL aggregation (no Python UDF).

The DataFrame counterpart of :mod:`sparkbalance.spark.keystats` (the RDD one): distinct
non-null keys and their record counts, exact or on a Bernoulli sample scaled up by
``1 / fraction`` (Horvitz-Thompson). A multi-column key is the Python tuple of its values,
a BINARY value is ``bytes``, so the keys hash exactly as the rows do in
:mod:`sparkbalance.spark.sqlhash`. Rows with a null key column are left out: they cannot be
hashed and always go to one fixed partition.

Examples
--------
>>> s = key_stats(df, "user")                                   # doctest: +SKIP
>>> s.top(3)                                                    # doctest: +SKIP
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..stats.keystats import KeyStats
from . import sqlhash

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

__all__ = ["key_stats", "key_counts", "join_stats", "key_array", "SAMPLE_SEED"]

#: Seed of sampled statistics: the same sample, hence the same plan, on every run.
SAMPLE_SEED: int = 17


def _py_value(v: Any) -> Any:
    return bytes(v) if isinstance(v, bytearray) else v


def key_array(keys: list) -> np.ndarray:
    """Keys as the array :class:`KeyStats` takes: ``int64`` when all are ints, else objects.

    Examples
    --------
    >>> key_array([(1, "a"), (2, "b")])[0]
    (1, 'a')
    """
    if keys and all(type(k) is int for k in keys):
        return np.asarray(keys, dtype=np.int64)
    out = np.empty(len(keys), dtype=object)
    for i, k in enumerate(keys):  # element-wise: tuples must stay tuples
        out[i] = k
    return out


def key_counts(df: "DataFrame", cols: Sequence[str], sample_fraction: float | None = None
               ) -> tuple[list, np.ndarray]:
    """Distinct non-null keys of ``df`` over ``cols`` and their record counts (one job).

    Examples
    --------
    >>> key_counts(spark.createDataFrame([(1,), (1,)], "k int"), ["k"])   # doctest: +SKIP
    ([1], array([2.]))
    """
    from pyspark.sql import functions as F
    cols = sqlhash.check_key_columns(df, cols)
    src = df.select(*cols).where(~sqlhash.any_null(df, cols))
    if sample_fraction is not None:
        src = src.sample(withReplacement=False, fraction=sample_fraction, seed=SAMPLE_SEED)
    rows = src.groupBy(*cols).agg(F.count(F.lit(1)).alias("__sb_n")).collect()
    single = len(cols) == 1
    keys = [(_py_value(r[0]) if single else tuple(_py_value(v) for v in r[:-1])) for r in rows]
    counts = np.fromiter((r[-1] for r in rows), dtype=np.float64, count=len(rows))
    if sample_fraction is not None:
        counts = counts / sample_fraction  # Horvitz-Thompson scale-up to the whole data
    return keys, counts


def key_stats(df: "DataFrame", *cols: str, sample_fraction: float | None = None
              ) -> KeyStats:
    """Per-key record counts of ``df`` over key ``cols`` (null keys left out).

    One aggregation over the data (or over a Bernoulli sample of ``sample_fraction``, with
    counts scaled by ``1 / sample_fraction``). A multi-column key is a Python tuple.

    Examples
    --------
    >>> s = key_stats(spark.createDataFrame([(1,), (1,), (2,)], "k int"), "k")  # doctest: +SKIP
    >>> sorted(s.as_dict().items())                                            # doctest: +SKIP
    [(1, 2.0), (2, 1.0)]
    """
    keys, counts = key_counts(df, cols, sample_fraction)
    return KeyStats(key_array(keys), counts)


def join_stats(left: "DataFrame", right: "DataFrame", on: Sequence[str],
               sample_fraction: float | None = None) -> KeyStats:
    """Keys of both join sides; counts = left + right rows, cost = those + output rows.

    The output of key k is ``left(k) * right(k)`` rows, the work a skewed join piles on one
    partition; two aggregation jobs (one per side).

    Examples
    --------
    >>> s = join_stats(clicks, users, ["user"])     # doctest: +SKIP
    >>> s.cost[0] == s.counts[0] + l0 * r0          # doctest: +SKIP
    """
    lk, lc = key_counts(left, on, sample_fraction)
    rk, rc = key_counts(right, on, sample_fraction)
    index: dict[Any, int] = {}
    keys: list = []
    for k in lk + rk:
        if k not in index:
            index[k] = len(keys)
            keys.append(k)
    lv = np.zeros(len(keys))
    rv = np.zeros(len(keys))
    lv[[index[k] for k in lk]] = lc
    rv[[index[k] for k in rk]] = rc
    return KeyStats(key_array(keys), lv + rv, cost=lv + rv + lv * rv)
