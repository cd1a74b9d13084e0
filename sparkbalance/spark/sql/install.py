"""Opt-in DataFrame methods and ``df.transform``-friendly functions.

:func:`install_dataframe_methods` attaches ``DataFrame.balancedRepartition``,
``balancedGroupBy`` and ``balancedJoin`` (Spark's own methods are untouched; a name pyspark
already defines is refused); :func:`uninstall_dataframe_methods` removes exactly what it
attached. ``balanced_repartition`` / ``balanced_agg`` / ``balanced_join`` return functions
for ``df.transform``. All of them call :func:`~sparkbalance.spark.sql.dataframe.repartition`,
:func:`~sparkbalance.spark.sql.dataframe.group_by` and :func:`~sparkbalance.spark.sql.join.join_df`.

Examples
--------
>>> install_dataframe_methods()                                      # doctest: +SKIP
['balancedRepartition', 'balancedGroupBy', 'balancedJoin']
>>> df.transform(balanced_agg("user", F.sum("x")))                    # doctest: +SKIP
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

from sparkbalance.spark.sql.dataframe import group_by, repartition
from sparkbalance.spark.sql.join import join_df

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

__all__ = ["install_dataframe_methods", "uninstall_dataframe_methods",
           "balanced_repartition", "balanced_agg", "balanced_join"]


def balanced_repartition(num_partitions: int, *cols: str, **kwargs: Any
                         ) -> Callable[["DataFrame"], "DataFrame"]:
    """``df.transform(balanced_repartition(8, "user"))``.

    Examples
    --------
    >>> df.transform(balanced_repartition(8, "user", strategy="keygroups"))  # doctest: +SKIP
    """
    return lambda df: repartition(df, num_partitions, *cols, **kwargs)


def balanced_agg(cols: str | Sequence[str], *exprs: Any, **kwargs: Any
                 ) -> Callable[["DataFrame"], "DataFrame"]:
    """``df.transform(balanced_agg("user", F.sum("x")))`` = balanced ``groupBy(...).agg(...)``.

    Examples
    --------
    >>> df.transform(balanced_agg("user", F.sum("x"), num_partitions=8))  # doctest: +SKIP
    """
    cols = [cols] if isinstance(cols, str) else list(cols)
    return lambda df: group_by(df, *cols, **kwargs).agg(*exprs)


def balanced_join(right: "DataFrame", on: str | Sequence[str], how: str = "inner",
                  **kwargs: Any) -> Callable[["DataFrame"], "DataFrame"]:
    """``df.transform(balanced_join(users, "user", strategy="split"))``.

    Examples
    --------
    >>> clicks.transform(balanced_join(users, "user", "left"))   # doctest: +SKIP
    """
    return lambda df: join_df(df, right, on, how, **kwargs)


def _df_balanced_repartition(self, numPartitions: int, *cols: str, **kwargs: Any):
    return repartition(self, numPartitions, *cols, **kwargs)


def _df_balanced_group_by(self, *cols: str, **kwargs: Any):
    return group_by(self, *cols, **kwargs)


def _df_balanced_join(self, other, on, how: str = "inner", **kwargs: Any):
    return join_df(self, other, on, how, **kwargs)


for _fn in (_df_balanced_repartition, _df_balanced_group_by, _df_balanced_join):
    _fn._sparkbalance = True  # type: ignore[attr-defined]  # marks our own methods

_METHODS = {
    "balancedRepartition": _df_balanced_repartition,
    "balancedGroupBy": _df_balanced_group_by,
    "balancedJoin": _df_balanced_join,
}


def install_dataframe_methods() -> list[str]:
    """Attach opt-in ``DataFrame.balancedRepartition/balancedGroupBy/balancedJoin``.

    Spark's own methods are untouched; returns the names attached.

    Examples
    --------
    >>> install_dataframe_methods()                          # doctest: +SKIP
    ['balancedRepartition', 'balancedGroupBy', 'balancedJoin']
    >>> df.balancedGroupBy("user", num_partitions=8).count()  # doctest: +SKIP
    """
    from pyspark.sql import DataFrame
    for name, fn in _METHODS.items():
        existing = getattr(DataFrame, name, None)
        if existing is not None and not getattr(existing, "_sparkbalance", False):
            raise RuntimeError(f"pyspark DataFrame already has {name!r} (not from "
                               "sparkbalance); refusing to replace it")
    for name, fn in _METHODS.items():
        setattr(DataFrame, name, fn)
    return list(_METHODS)


def uninstall_dataframe_methods() -> None:
    """Remove what :func:`install_dataframe_methods` attached.

    Examples
    --------
    >>> uninstall_dataframe_methods()                        # doctest: +SKIP
    """
    from pyspark.sql import DataFrame
    for name, fn in _METHODS.items():
        if getattr(DataFrame, name, None) is fn:
            delattr(DataFrame, name)
