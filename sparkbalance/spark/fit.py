"""One ``fit_partitioner`` for RDDs and DataFrames (the top-level ``sb.fit_partitioner``), and
the two fitting steps every adapter runs with an already resolved strategy.

``fit_partitioner`` resolves the strategy once
(:func:`sparkbalance.spark.session.conf.resolve_record`) and fits it on the keys of a pair
RDD (:func:`fit_rdd`) or of DataFrame columns (:func:`fit_dataframe`). The RDD and
DataFrame adapters call those two steps with the record they resolved themselves, so a
strategy is looked up and checked once per operation. Statistics are gathered only when the
strategy needs them (``record.needs_stats``) or the key costs are measured times
(``weights="time"``), under the job group ``sparkbalance-stats``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from sparkbalance.routing.base import PartitionFunction, check_num_partitions
from sparkbalance.routing.hash import HashPartitioner
from sparkbalance.stats.keystats import KeyStats
from sparkbalance.spark.rdd.bounded import bounded_key_stats
from sparkbalance.spark.rdd.keystats import gather_key_stats, measured_tasks
from sparkbalance.spark.report.plan_report import fit as fit_and_note, reported
from sparkbalance.spark.session import conf

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

    from sparkbalance.strategies import ResolvedStrategy

__all__ = ["fit_partitioner", "fit_rdd", "fit_dataframe", "check_weights", "WEIGHTS"]

#: Key cost measures: records, or records x measured seconds per record.
WEIGHTS = ("count", "time")


def _is_dataframe(data: Any) -> bool:
    return type(data).__name__ == "DataFrame" and hasattr(data, "sparkSession")


def check_weights(weights: str) -> str:
    """Validate ``weights`` (:data:`WEIGHTS`).

    Examples
    --------
    >>> check_weights("time")
    'time'
    """
    if weights not in WEIGHTS:
        raise ValueError(f"weights={weights!r}; expected 'count' or 'time'")
    return weights


@reported("fit_partitioner", kind=None)
def fit_partitioner(data: Any, num_partitions: int, *cols: Any, strategy: Any = None,
                    weights: str = "count", listener: Any = None, stats: KeyStats | None = None,
                    sample_fraction: float | None = None,
                    current: PartitionFunction | None = None, stats_method: str | None = None,
                    **params: Any) -> PartitionFunction:
    """Fit ``strategy`` on the keys of a pair RDD, or of DataFrame columns ``cols``.

    The strategy name and its parameters are checked before any Spark job runs: an unknown
    name raises ``ValueError``, an unknown parameter ``TypeError`` (naming it and the valid
    ones). A DataFrame needs a key-grouping strategy.

    Parameters
    ----------
    data : a pair RDD (keys: the first element of each pair) or a DataFrame.
    num_partitions : int >= 1.
    cols : a DataFrame's key columns (names or ``Column`` objects); none for an RDD.
    strategy : a name of :func:`sparkbalance.strategies.available`; None (default) reads
        ``spark.sparkbalance.strategy``, else :data:`sparkbalance.strategies.DEFAULT_STRATEGY`.
    weights : {"count", "time"}
        Key cost = records, or records x measured seconds per record ("time": needs
        ``listener`` holding the task records of the previous run of this stage, routed by
        ``current``; see :func:`sparkbalance.stats.timeweights.time_weighted_stats`).
    listener : a :class:`~sparkbalance.spark.metrics.listener.TaskMetricsListener` (``weights="time"``).
    stats : precomputed statistics (skips the statistics job).
    sample_fraction : fraction of records the statistics job reads (None:
        ``spark.sparkbalance.sampleFraction``, else all).
    current : the partition function in use today (planners minimise migration from it).
    stats_method : how an RDD's statistics are gathered
        (:func:`sparkbalance.spark.rdd.keystats.gather_key_stats`).
    **params : the strategy's parameters (:func:`sparkbalance.strategies.accepted_params`).

    Examples
    --------
    >>> f = fit_partitioner(pairs, 8, strategy="mixed", theta=0.1)         # doctest: +SKIP
    >>> g = fit_partitioner(df, 8, "user_id", strategy="keygroups")       # doctest: +SKIP
    """
    n = check_num_partitions(num_partitions)
    if _is_dataframe(data):
        from sparkbalance.spark.sql.key_columns import key_columns
        from sparkbalance.spark.sql.hash_columns import check_key_columns
        if stats_method is not None:
            raise TypeError(f"stats_method={stats_method!r} is for RDDs; a DataFrame's "
                            "statistics are one aggregation (or a sample)")
        kc = key_columns(data, cols)
        df, names = kc.df, check_key_columns(kc.df, kc.names)
        record = conf.resolve_record(df, strategy, params, sample_fraction=sample_fraction,
                                     key_grouping=True)
        return fit_dataframe(df, n, names, record, weights=weights, listener=listener,
                             stats=stats, current=current)
    if cols:
        raise TypeError(f"key columns {cols!r} given as positional arguments for a "
                        f"{type(data).__name__}; an RDD's keys are the first element of each "
                        "pair (columns are for DataFrames; strategy= is keyword-only)")
    record = conf.resolve_record(data, strategy, params, sample_fraction=sample_fraction)
    return fit_rdd(data, n, record, weights=weights, listener=listener, stats=stats,
                   current=current, stats_method=stats_method)


# ----------------------------------------------------------------------- RDD input
def _timeweights_module() -> Any:
    try:
        from sparkbalance.stats import timeweights
    except ModuleNotFoundError as exc:
        if exc.name != "sparkbalance.stats.timeweights":
            raise
        raise NotImplementedError("weights='time' needs sparkbalance.stats.timeweights, "
                                  "which is not installed") from exc
    return timeweights


def _time_weighted(stats: KeyStats, tasks: list[Any], current: PartitionFunction | None,
                   num_partitions: int, record: "ResolvedStrategy",
                   measured_inputs: dict[str, Any]) -> KeyStats:
    """Counts -> seconds with the task times of the last measured stage.

    The measured stage must have been routed by ``current`` (default: stable hash); for
    strategy "tag" the same measurement also gives the completion times t_i (put in
    ``measured_inputs``).
    """
    timeweights = _timeweights_module()
    measured = current if current is not None else HashPartitioner(num_partitions)
    if measured.splits_keys:
        raise ValueError("weights='time' needs the key-grouping partition function the measured "
                         f"stage ran with as current=; got a splitting {type(measured).__name__}")
    key_partition = measured.assign(stats.keys)
    weighted = timeweights.time_weighted_stats(stats, tasks, key_partition,
                                               num_partitions=measured.num_partitions)
    if record.name == "tag" and "completion_times" not in record.params \
            and measured.num_partitions == num_partitions:
        records = np.bincount(key_partition, weights=stats.counts, minlength=num_partitions)
        measured_inputs["completion_times"] = timeweights.completion_times(
            tasks, num_partitions, records=records, normalize=True)
    return weighted


def fit_rdd(rdd: Any, num_partitions: int, record: "ResolvedStrategy", *,
            weights: str = "count", listener: Any = None, stats: KeyStats | None = None,
            current: PartitionFunction | None = None, stats_method: str | None = None
            ) -> PartitionFunction:
    """Fit the resolved ``record`` on ``rdd``'s keys (statistics only when it needs them).

    Examples
    --------
    >>> from sparkbalance import strategies
    >>> fit_rdd(None, 4, strategies.resolve("hash")).num_partitions   # no statistics job
    4
    """
    n = check_num_partitions(num_partitions)
    check_weights(weights)
    measured_inputs: dict[str, Any] = {}
    if record.needs_stats or weights == "time":
        # Read the measured tasks before our own statistics job adds stages of its own.
        tasks = measured_tasks(listener) if weights == "time" else None
        if weights == "time":
            _timeweights_module()
        if stats is None and record.bounded and tasks is None and stats_method is None:
            stats = bounded_key_stats(rdd, n, theta=record.theta)
        elif stats is None:
            stats = gather_key_stats(rdd, method=stats_method,
                                     sample_fraction=record.sample_fraction)
        if tasks is not None:
            stats = _time_weighted(stats, tasks, current, n, record, measured_inputs)
    return fit_and_note(record, stats if record.needs_stats else None, n, current=current,
                        **measured_inputs)


# ----------------------------------------------------------------------- DataFrame input
def _check_measured(current: PartitionFunction | None) -> PartitionFunction:
    # A task's partition maps to keys only if the measured stage placed key k on
    # partition current(k): true of a sparkbalance placement (placement.place on this
    # function), false of Spark's own df.repartition / df.groupBy (Murmur3 hash of the
    # row's columns), whose tasks say nothing about which key ran where.
    if current is None:
        raise ValueError("weights='time' on a DataFrame needs current=<the partition function "
                         "the measured stage was placed by> (e.g. the .partitioner of the "
                         "previous balanced group_by); a plain df.groupBy/df.repartition "
                         "places rows by Spark's Murmur3 hash, so its task times cannot be "
                         "mapped to keys")
    if current.splits_keys:
        raise ValueError("weights='time' needs the key-grouping partition function the measured "
                         f"stage ran with as current=; got a splitting {type(current).__name__}")
    return current


def fit_dataframe(df: "DataFrame", num_partitions: int, cols: Sequence[str],
                  record: "ResolvedStrategy", *, weights: str = "count", listener: Any = None,
                  stats: KeyStats | None = None, current: PartitionFunction | None = None
                  ) -> PartitionFunction:
    """Fit the resolved key-grouping ``record`` on the key columns ``cols`` of ``df``
    (checked names; statistics by one aggregation, or a sample, only when needed).

    Examples
    --------
    >>> r = strategies.resolve("mixed", key_grouping=True)     # doctest: +SKIP
    >>> fit_dataframe(df, 8, ["user"], r)                         # doctest: +SKIP
    """
    from sparkbalance.spark.sql.keystats import key_stats
    n = check_num_partitions(num_partitions)
    tasks = None
    if check_weights(weights) == "time":
        measured = _check_measured(current)
        # Read the measured tasks before our own statistics job adds stages of its own.
        tasks = measured_tasks(listener)
    if record.needs_stats and record.bounded and tasks is None and stats is None:
        from sparkbalance.spark.sql.keystats import bounded_key_stats as bounded_df_stats
        stats = bounded_df_stats(df, cols, n, theta=record.theta)
    elif (record.needs_stats or tasks is not None) and stats is None:
        stats = key_stats(df, *cols, sample_fraction=record.sample_fraction)
    if tasks is not None:
        from sparkbalance.stats.timeweights import time_weighted_stats
        stats = time_weighted_stats(stats, tasks, measured.assign(stats.keys),
                                    num_partitions=measured.num_partitions)
    if record.needs_stats and len(stats) == 0:
        return HashPartitioner(n)  # nothing to balance (empty or all-null data)
    return fit_and_note(record, stats if record.needs_stats else None, n, current=current)
