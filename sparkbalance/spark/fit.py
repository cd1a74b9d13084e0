"""One ``fit_partitioner`` for RDDs and DataFrames (the top-level ``sb.fit_partitioner``).

Both forms take the same keywords with the same defaults (``strategy=None`` meaning the
registry's :data:`~sparkbalance.strategies.DEFAULT_STRATEGY`, ``weights="count"``,
``listener``, ``sample_fraction``, ``current``, the strategy's parameters); a DataFrame also
names its key columns.
"""
from __future__ import annotations

from typing import Any

from sparkbalance.spark.report.plan_report import reported

__all__ = ["fit_partitioner"]


@reported("fit_partitioner", kind=None)
def fit_partitioner(data: Any, num_partitions: int, *cols: Any, **kwargs: Any) -> Any:
    """Fit a partition function on the keys of a pair RDD or of DataFrame columns ``cols``
    (names or ``Column`` objects).

    Examples
    --------
    >>> f = fit_partitioner(pairs, 8, strategy="mixed")                  # doctest: +SKIP
    >>> g = fit_partitioner(df, 8, "user_id", strategy="keygroups")       # doctest: +SKIP
    """
    if type(data).__name__ == "DataFrame" and hasattr(data, "sparkSession"):
        from sparkbalance.spark.sql.dataframe import fit_partitioner as fit_df
        return fit_df(data, num_partitions, *cols, **kwargs)
    if cols:
        raise TypeError(f"key columns {cols!r} given for a {type(data).__name__}; an RDD's "
                        "keys are the first element of each pair (columns are for DataFrames)")
    from sparkbalance.spark.rdd.adapters import fit_partitioner as fit_rdd
    return fit_rdd(data, num_partitions, **kwargs)
