"""One balanced join for both APIs: ``join(left, right, ...)`` on pair RDDs or DataFrames.

The two joins differ in what they join on, so they keep their own parameters and this
module only chooses between them by the type of the sides:

* two pair RDDs: :func:`sparkbalance.spark.rdd.adapters.join`, ``rdd.join(other, n)``'s
  pairs ``(k, (v, w))``, joined on the pairs' keys (``num_partitions``, ``strategy``,
  the strategy's parameters);
* two DataFrames: :func:`sparkbalance.spark.sql.join.join_df`, an equi-join on the key
  columns ``on`` (``how``, ``num_partitions``, ``strategy`` including ``"split"``,
  ``split_side``, ...), the rows of ``left.join(right, on, how)``.

Each records its own balance record (operation ``join`` or ``join_df``); nothing here
starts a Spark job, and a mix of an RDD and a DataFrame, or DataFrame-only arguments on
RDDs, fail before any job runs.
"""
from __future__ import annotations

from typing import Any

__all__ = ["join"]


def _is_dataframe(data: Any) -> bool:
    """A classic or Spark Connect DataFrame (both are named ``DataFrame``), without
    importing pyspark.sql for an RDD call."""
    return type(data).__name__ == "DataFrame" and hasattr(data, "sparkSession")


def join(left: Any, right: Any, *args: Any, **kwargs: Any) -> Any:
    """Balanced join of two pair RDDs or of two DataFrames; the same result as Spark's.

    Parameters
    ----------
    left, right : both pair RDDs of ``(key, value)``, or both DataFrames.
    *args, **kwargs
        For RDDs: ``num_partitions=None, strategy=None, **params`` (the strategy's
        parameters); the join is an inner join on the pairs' keys, statistics are
        gathered on ``left`` (the side whose skew matters).
        For DataFrames: ``on, how="inner", *, num_partitions=None, strategy=None,
        split_side=None, split_threshold, stats=None, sample_fraction=None,
        literal_limit=None, **params``; ``strategy="split"`` cuts the hot keys of one
        side and replicates the other side's matching rows (exact for inner joins and for
        the outer/semi/anti joins that preserve only the split side).

    Returns
    -------
    RDD of ``(k, (v, w))`` as ``left.join(right, num_partitions)``, or the DataFrame
    ``left.join(right, on, how)``.

    Raises
    ------
    TypeError
        One side an RDD and the other a DataFrame, or ``on``/``how`` given for RDDs.

    Examples
    --------
    >>> import sparkbalance as sb
    >>> sorted(sb.join(pairs, names, 4, strategy="mixed").collect())[:1]  # doctest: +SKIP
    [(0, (1, 'ann'))]
    >>> sb.join(clicks, users, "user", "left", strategy="split").count()  # doctest: +SKIP
    10000
    """
    left_df, right_df = _is_dataframe(left), _is_dataframe(right)
    if left_df != right_df:
        raise TypeError(f"join(left={type(left).__name__}, right={type(right).__name__}): "
                        "both sides must be DataFrames, or both pair RDDs")
    if left_df:
        from sparkbalance.spark.sql.join import join_df
        return join_df(left, right, *args, **kwargs)
    columns = [name for name in ("on", "how") if name in kwargs]
    if args and isinstance(args[0], (str, list, tuple)):
        columns.insert(0, f"on={args[0]!r}")
    if columns:
        raise TypeError(f"join of two RDDs got {', '.join(columns)}: pair RDDs are joined on "
                        "their keys (key columns and join types are for DataFrames); "
                        "expected join(left, right, num_partitions=None, strategy=None, "
                        "**params)")
    from sparkbalance.spark.rdd.adapters import join as join_rdd
    return join_rdd(left, right, *args, **kwargs)
