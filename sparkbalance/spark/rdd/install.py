"""Opt-in camelCase methods on ``pyspark.RDD`` (Spark's own methods are never touched).

``install()`` adds ``rdd.balancedPartitionBy``, ``balancedReduceByKey``,
``balancedAggregateByKey``, ``balancedGroupByKey`` and ``balancedJoin`` (thin wrappers of
:mod:`sparkbalance.spark.rdd.adapters`), and the DataFrame methods of
:mod:`sparkbalance.spark.sql.install` when that module is present. Idempotent.

Examples
--------
>>> import sparkbalance
>>> sparkbalance.install()                                   # doctest: +SKIP
>>> rdd.balancedReduceByKey(operator.add, 8, strategy="pkg")  # doctest: +SKIP
"""
from __future__ import annotations

from typing import Any

from sparkbalance.spark.sql import install as _df_install
from sparkbalance.spark.rdd import adapters as _rdd

__all__ = ["install", "uninstall", "RDD_METHODS"]

#: camelCase name on pyspark.RDD -> adapter function.
RDD_METHODS: dict[str, Any] = {
    "balancedPartitionBy": _rdd.partition_by,
    "balancedReduceByKey": _rdd.reduce_by_key,
    "balancedAggregateByKey": _rdd.aggregate_by_key,
    "balancedGroupByKey": _rdd.group_by_key,
    "balancedJoin": _rdd.join,
}


def _method(func: Any) -> Any:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return func(self, *args, **kwargs)
    method.__name__ = func.__name__
    method.__doc__ = func.__doc__
    method.__wrapped__ = func
    method._sparkbalance = True
    return method


def install() -> list[str]:
    """Attach the balanced methods; returns the names attached (idempotent).

    Refuses to shadow an attribute of the same name that sparkbalance did not add.
    """
    from pyspark import RDD

    added = []
    for name, func in RDD_METHODS.items():
        existing = getattr(RDD, name, None)
        if existing is not None and not getattr(existing, "_sparkbalance", False):
            raise RuntimeError(f"pyspark.RDD already has {name!r} (not from sparkbalance); "
                               "refusing to replace it")
        setattr(RDD, name, _method(func))
        added.append(name)
    added.extend(_df_install.install_dataframe_methods())
    return added


def uninstall() -> None:
    """Remove what :func:`install` added (RDD methods, and DataFrame ones when present)."""
    from pyspark import RDD

    for name in RDD_METHODS:
        if getattr(getattr(RDD, name, None), "_sparkbalance", False):
            delattr(RDD, name)
    _df_install.uninstall_dataframe_methods()
