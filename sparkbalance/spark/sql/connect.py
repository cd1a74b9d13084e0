"""Spark Connect: which DataFrame features run there, and a clear error for the rest.

A Spark Connect session (``SparkSession.builder.remote(...)``) has DataFrames but no RDD and
no py4j gateway to the driver's JVM. ``repartition``, ``group_by`` (``agg``, ``count``,
``applyInPandas``, ``applyInArrow``, ``cogroup``), ``join`` of DataFrames and
``with_window_columns`` are DataFrame expressions only and run there unchanged. What reads
task timings from the listener bus (``weights="time"``, which needs a
:class:`~sparkbalance.spark.metrics.TaskMetricsListener` over py4j) cannot, and says so
before any job runs (:func:`require_classic`).

Examples
--------
>>> is_connect(object())
False
"""
from __future__ import annotations

from typing import Any

__all__ = ["is_connect", "require_classic", "ConnectUnsupported"]


class ConnectUnsupported(NotImplementedError):
    """A feature that needs the driver's JVM (py4j) or an RDD, asked of a Connect session."""


def is_connect(df: Any) -> bool:
    """True for a Spark Connect DataFrame or session (not a classic PySpark one)."""
    return type(df).__module__.startswith("pyspark.sql.connect")


def require_classic(df: Any, feature: str, instead: str) -> None:
    """Raise :class:`ConnectUnsupported` naming ``feature`` when ``df`` is a Connect
    DataFrame; ``instead`` says what to do there.

    Examples
    --------
    >>> require_classic(object(), "weights='time'", "use weights='count'")
    """
    if is_connect(df):
        raise ConnectUnsupported(
            f"{feature} is not available on a Spark Connect session: it needs the driver's "
            f"JVM (py4j) or an RDD, which Connect clients do not have; {instead}")
