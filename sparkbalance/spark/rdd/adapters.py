"""RDD adapters: drop-ins for ``partitionBy``, ``reduceByKey``, ``aggregateByKey``,
``groupByKey`` and ``join`` that route keys with any sparkbalance strategy.

Every strategy of :mod:`sparkbalance.strategies` works here through the registry, with no
special case per name:

* **key-grouping** strategies (hash, mixed, mintable, minmig, readj, keygroups) give one
  partition per key: the adapter passes the fitted function as PySpark's ``partitionFunc``
  (one shuffle, exactly PySpark's plan), as the bound ``__call__`` of its
  :class:`~sparkbalance.spark.rdd.key_errors.KeyGuard` (``routing.base.partition_func``: a bound
  method costs ~110 ns less per record than an instance; ``partitionFunc.__self__.f`` is the
  fitted function).
* **splitting** strategies (pkg, dchoices, wchoices, tag) may send one key to several
  partitions. The adapter routes *records* (each map task runs its own copy of the
  partition function with its own local load vector, Nasir et al. §3.2), keys the records by
  ``(key, chosen partition)``, combines per ``(key, partition)`` where the records landed,
  then merges the few partials of each key in a final, small shuffle by stable hash. The
  results equal PySpark's for the associative/commutative functions PySpark requires.
  ``join`` splits the left side and replicates each right record to every candidate
  partition of its key, so every left record meets every right record exactly once.

A strategy is a registry name (None: ``spark.sparkbalance.strategy`` of the session, else
:data:`sparkbalance.strategies.DEFAULT_STRATEGY`, the default of every adapter; see
:mod:`sparkbalance.spark.session.conf`) or an already fitted partition function. Names and parameters
are checked against the registry before any Spark job runs. Statistics are gathered only when
the strategy needs them (``spec.needs_stats``), under the job group ``sparkbalance-stats``.

**Zero-pass statistics.** Strategy "auto" (the default) with no statistics parameter, or
any call with ``stats="map-output"``, gathers no statistics at all: the shuffle itself routes
records to ``m >> n`` key groups, the records of each group (counted by the map tasks) are
planned onto the ``n`` tasks (LPT, or plain placement when it gains too little) and the
shuffle is read once (:mod:`sparkbalance.spark.rdd.mapstats`; needs the JVM bridge, else one
WARNING and the statistics pass). The adapters then return an RDD whose ``partitioner`` holds the fitted
:class:`~sparkbalance.routing.keygroups.GroupMapPartitioner` (``mapstats.fitted_function``),
which can be saved and reused as a fixed plan.

Long because: five adapters, each with its zero-pass branch and its splitting merge step,
share the same resolution helpers.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

from sparkbalance import strategies
from sparkbalance.routing.base import PartitionFunction, check_num_partitions, partition_func
from sparkbalance.routing.hash import HashPartitioner
from sparkbalance.stats.keystats import KeyStats
from sparkbalance.spark.rdd import shuffle as fnshuffle
from sparkbalance.spark.rdd import mapstats
from sparkbalance.spark.session import conf
from sparkbalance.spark.report.plan_report import fit as fit_and_note, reported
from sparkbalance.spark.rdd.key_errors import KeyGuard, check_pairs
from sparkbalance.spark.rdd.keystats import gather_key_stats, measured_tasks

__all__ = ["partition_by", "reduce_by_key", "aggregate_by_key", "group_by_key", "join",
           "fit_partitioner"]

_WEIGHTS = ("count", "time")


# ---------------------------------------------------------------------------------------
# Fitting
# ---------------------------------------------------------------------------------------
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
                   num_partitions: int, strategy: str, params: dict[str, Any]) -> KeyStats:
    """Counts -> seconds with the task times of the last measured stage.

    The measured stage must have been routed by ``current`` (default: stable hash); for
    strategy "tag" the same measurement also gives the completion times t_i.
    """
    timeweights = _timeweights_module()
    measured = current if current is not None else HashPartitioner(num_partitions)
    if measured.splits_keys:
        raise ValueError("weights='time' needs the key-grouping partition function the measured "
                         f"stage ran with as current=; got a splitting {type(measured).__name__}")
    key_partition = measured.assign(stats.keys)
    weighted = timeweights.time_weighted_stats(stats, tasks, key_partition,
                                               num_partitions=measured.num_partitions)
    if strategy == "tag" and "completion_times" not in params \
            and measured.num_partitions == num_partitions:
        records = np.bincount(key_partition, weights=stats.counts, minlength=num_partitions)
        params["completion_times"] = timeweights.completion_times(
            tasks, num_partitions, records=records, normalize=True)
    return weighted


@reported("fit_partitioner")
def fit_partitioner(rdd: Any, num_partitions: int, *, strategy: str | None = None,
                    weights: str = "count", listener: Any = None,
                    sample_fraction: float | None = None,
                    current: PartitionFunction | None = None, stats: KeyStats | None = None,
                    stats_method: str | None = None, **params: Any) -> PartitionFunction:
    """Fit ``strategy`` on ``rdd``'s keys; gathers statistics only when the strategy needs them.

    The strategy name and its parameters are checked against the registry before any Spark
    job runs: an unknown name raises ``ValueError``, an unknown parameter ``TypeError``
    (naming it and the valid ones).

    Parameters
    ----------
    rdd : pair RDD.
    num_partitions : int >= 1.
    strategy : a name of :func:`sparkbalance.strategies.available`; None (default) reads
        ``spark.sparkbalance.strategy``, else :data:`sparkbalance.strategies.DEFAULT_STRATEGY`.
    weights : {"count", "time"}
        Key cost = records, or records x measured seconds per record ("time": needs
        ``listener`` holding the task records of the previous run of this stage, routed by
        ``current``; see :func:`sparkbalance.stats.timeweights.time_weighted_stats`).
    listener : a :class:`~sparkbalance.spark.metrics.listener.TaskMetricsListener` (``weights="time"``).
    sample_fraction : fraction of records the statistics job reads (None:
        ``spark.sparkbalance.sampleFraction``, else all).
    current : the partition function in use today (planners minimise migration from it).
    stats : KeyStats, optional
        Precomputed statistics (skips the statistics job).
    stats_method : how to gather statistics
        (:func:`sparkbalance.spark.rdd.keystats.gather_key_stats`).
    **params : the strategy's parameters (:func:`sparkbalance.strategies.accepted_params`).

    Examples
    --------
    >>> f = fit_partitioner(rdd, 8, strategy="mixed", theta=0.1)  # doctest: +SKIP
    >>> partition_by(rdd, 8, f)            # or rdd.partitionBy(8, sb.partition_func(f))  # doctest: +SKIP
    """
    n = check_num_partitions(num_partitions)
    # Name, parameters and weights are checked before any job: a typo costs no stage.
    # Unset settings come from spark.sparkbalance.* (conf), as in the DataFrame adapters.
    spec, params = conf.resolve_strategy(rdd, strategy, params)
    spec = strategies.resolve(spec.name, params)
    sample_fraction = conf.resolve_sample_fraction(rdd, sample_fraction)
    if weights not in _WEIGHTS:
        raise ValueError(f"weights={weights!r}; expected 'count' or 'time'")
    if spec.needs_stats or weights == "time":
        # Read the measured tasks before our own statistics job adds stages of its own.
        tasks = measured_tasks(listener) if weights == "time" else None
        if weights == "time":
            _timeweights_module()
        if stats is None:
            stats = gather_key_stats(rdd, method=stats_method, sample_fraction=sample_fraction)
        if tasks is not None:
            stats = _time_weighted(stats, tasks, current, n, spec.name, params)
    return fit_and_note(spec.name, stats if spec.needs_stats else None, n, current=current,
                        **params)


def _num_partitions(rdd: Any, num_partitions: int | None) -> int:
    if num_partitions is None:
        try:
            num_partitions = rdd._defaultReducePartitions()  # PySpark's own default
        except AttributeError:  # pragma: no cover - older/newer PySpark
            num_partitions = rdd.getNumPartitions()
    return check_num_partitions(num_partitions)


def _pairs_checked(rdd: Any) -> Any:
    """``rdd`` with each partition's first record checked to be a (key, value) pair.

    PySpark unpacks the records in its own loops, where a non-pair fails deep in a Java trace;
    this step is pipelined into the same Python task (no stage, no copy, nothing per record)
    and fails first with a line naming the partition and the record (key_errors.check_pairs).
    """
    return rdd.mapPartitionsWithIndex(check_pairs, preservesPartitioning=True)


def _resolve(rdd: Any, num_partitions: int | None, strategy: str | PartitionFunction | None,
             params: dict[str, Any]) -> PartitionFunction:
    if num_partitions is None and isinstance(strategy, PartitionFunction):
        num_partitions = strategy.num_partitions
    n = _num_partitions(rdd, num_partitions)
    if isinstance(strategy, PartitionFunction):  # an already fitted function
        if params:
            raise TypeError("a fitted partition function takes no parameters; got "
                            f"{sorted(params)}")
        if strategy.num_partitions != n:
            raise ValueError(f"partition function has {strategy.num_partitions} partitions; "
                             f"expected num_partitions={n}")
        f = strategy
    else:
        f = fit_partitioner(rdd, n, strategy=strategy, **params)
    # Keys an executor cannot route fail with a first line naming type, partition, remedy.
    return KeyGuard.of(f)


# ---------------------------------------------------------------------------------------
# Splitting machinery (module-level functions: cloudpickle ships them by reference)
# ---------------------------------------------------------------------------------------
def _dest_of(kp: tuple[Any, int]) -> int:
    """partitionFunc of composite keys ``(key, chosen partition)``: the chosen partition."""
    return kp[1]


class _Router:
    """mapPartitions body: route each record with this task's own copy of ``f``."""

    def __init__(self, f: PartitionFunction) -> None:
        self.f = f

    def __call__(self, records: Iterator[Any]) -> Iterator[Any]:
        fresh = getattr(self.f, "fresh", None)
        # Own local loads per task (Nasir et al. 2015 §3.2).
        g = fresh() if fresh is not None else self.f
        for k, v in records:
            yield (k, g(k)), v


def _drop_dest(kv: tuple[tuple[Any, int], Any]) -> tuple[Any, Any]:
    return kv[0][0], kv[1]


def _home(n: int) -> HashPartitioner:
    return HashPartitioner(n)


def _split_combine(rdd: Any, f: PartitionFunction, create: Callable, merge_value: Callable,
                   merge_combiners: Callable) -> Any:
    """Combine per (key, chosen partition), then merge each key's partials by stable hash."""
    n = f.num_partitions
    partials = (rdd.mapPartitions(_Router(f))
                .combineByKey(create, merge_value, merge_combiners, n, partitionFunc=_dest_of)
                .map(_drop_dest))
    return partials.reduceByKey(merge_combiners, n, partitionFunc=_home(n))


# ---------------------------------------------------------------------------------------
# Public adapters
# ---------------------------------------------------------------------------------------
@reported("partition_by")
def partition_by(rdd: Any, num_partitions: int,
                 strategy: str | PartitionFunction | None = None, *,
                 stats: KeyStats | None = None, sample_fraction: float | None = None,
                 current: PartitionFunction | None = None, **params: Any) -> Any:
    """``rdd.partitionBy(num_partitions)`` routed by ``strategy``.

    With a splitting strategy the records of one key may land in several partitions
    (each map task balances its own records); use the other adapters for exact keyed
    results.

    Examples
    --------
    >>> partition_by(sc.parallelize([(1, "a")]), 4, "pkg").getNumPartitions()  # doctest: +SKIP
    4
    """
    n = check_num_partitions(num_partitions)
    if not isinstance(strategy, PartitionFunction):
        extra = {k: v for k, v in (("stats", stats), ("sample_fraction", sample_fraction),
                                   ("current", current)) if v is not None}
        params = {**extra, **params}
    rdd = _pairs_checked(rdd)
    zero_pass = mapstats.zero_pass_options(rdd, strategy, params)
    if zero_pass is not None:
        return mapstats.shuffle_by_groups(rdd, n, **zero_pass)
    f = _resolve(rdd, n, strategy, params)
    if fnshuffle.inlinable(f):
        return fnshuffle.partition_by_function(rdd, f)
    return rdd.partitionBy(n, partition_func(f))


@reported("reduce_by_key")
def reduce_by_key(rdd: Any, func: Callable[[Any, Any], Any], num_partitions: int | None = None,
                  strategy: str | PartitionFunction | None = None, **params: Any) -> Any:
    """``rdd.reduceByKey(func, num_partitions)`` with balanced routing; same result.

    Examples
    --------
    >>> from operator import add
    >>> out = reduce_by_key(sc.parallelize([("a", 1)] * 5), add, 2, "pkg")  # doctest: +SKIP
    >>> sorted(out.collect())                                                # doctest: +SKIP
    [('a', 5)]
    """
    rdd = _pairs_checked(rdd)
    zero_pass = mapstats.zero_pass_options(rdd, strategy, params)
    if zero_pass is not None:
        return mapstats.combine_by_groups(rdd, _num_partitions(rdd, num_partitions), _identity,
                                          func, func, **zero_pass)
    f = _resolve(rdd, num_partitions, strategy, params)
    if fnshuffle.inlinable(f):
        return fnshuffle.combine_by_function(rdd, f, _identity, func, func)
    if not f.splits_keys:
        return rdd.reduceByKey(func, f.num_partitions, partitionFunc=partition_func(f))
    return _split_combine(rdd, f, _identity, func, func)


def _identity(x: Any) -> Any:
    return x


@reported("aggregate_by_key")
def aggregate_by_key(rdd: Any, zero_value: Any, seq_func: Callable, comb_func: Callable,
                     num_partitions: int | None = None,
                     strategy: str | PartitionFunction | None = None, **params: Any) -> Any:
    """``rdd.aggregateByKey(zero_value, seq_func, comb_func, num_partitions)``; same result.

    Examples
    --------
    >>> aggregate_by_key(rdd, 0, lambda a, v: a + v, lambda a, b: a + b, 4, "tag")  # doctest: +SKIP
    """
    import copy

    def create(v: Any) -> Any:  # PySpark deep-copies the zero value per key as well
        return seq_func(copy.deepcopy(zero_value), v)

    rdd = _pairs_checked(rdd)
    zero_pass = mapstats.zero_pass_options(rdd, strategy, params)
    if zero_pass is not None:
        return mapstats.combine_by_groups(rdd, _num_partitions(rdd, num_partitions), create,
                                          seq_func, comb_func, **zero_pass)
    f = _resolve(rdd, num_partitions, strategy, params)
    if fnshuffle.inlinable(f):
        return fnshuffle.combine_by_function(rdd, f, create, seq_func, comb_func)
    if not f.splits_keys:
        return rdd.aggregateByKey(zero_value, seq_func, comb_func, f.num_partitions,
                                  partitionFunc=partition_func(f))
    return _split_combine(rdd, f, create, seq_func, comb_func)


def _list1(v: Any) -> list:
    return [v]


def _append(acc: list, v: Any) -> list:
    acc.append(v)
    return acc


def _extend(a: list, b: list) -> list:
    a.extend(b)
    return a


def _as_result_iterable(values: list) -> Any:
    from pyspark.resultiterable import ResultIterable
    return ResultIterable(values)


@reported("group_by_key")
def group_by_key(rdd: Any, num_partitions: int | None = None,
                 strategy: str | PartitionFunction | None = None, **params: Any) -> Any:
    """``rdd.groupByKey(num_partitions)``: (key, iterable of values); same groups.

    With a splitting strategy each (key, partition) builds a partial list where its
    records landed; the partial lists are concatenated per key (values order is
    unspecified, as in PySpark).
    """
    rdd = _pairs_checked(rdd)
    zero_pass = mapstats.zero_pass_options(rdd, strategy, params)
    if zero_pass is not None:
        return mapstats.combine_by_groups(rdd, _num_partitions(rdd, num_partitions), _list1,
                                          _append, _extend, **zero_pass
                                          ).mapValues(_as_result_iterable)
    f = _resolve(rdd, num_partitions, strategy, params)
    if not f.splits_keys:
        return rdd.groupByKey(f.num_partitions, partitionFunc=partition_func(f))
    return _split_combine(rdd, f, _list1, _append, _extend).mapValues(_as_result_iterable)


def _tag_left(v: Any) -> tuple[int, Any]:
    return (1, v)


def _tag_right(v: Any) -> tuple[int, Any]:
    return (2, v)


def _pairs(tagged: Any) -> list[tuple[Any, Any]]:
    left, right = [], []
    for side, v in tagged:
        (left if side == 1 else right).append(v)
    return [(a, b) for a in left for b in right]


class _Replicator:
    """flatMap body: send a right-side record to every candidate partition of its key."""

    def __init__(self, f: PartitionFunction) -> None:
        self.f = f

    def __call__(self, kv: tuple[Any, Any]) -> list[tuple[tuple[Any, int], tuple[int, Any]]]:
        k, v = kv
        return [((k, p), (2, v)) for p in dict.fromkeys(self.f.candidates(k))]


def _tag_routed_left(kv: tuple[tuple[Any, int], Any]) -> tuple[tuple[Any, int], tuple[int, Any]]:
    return kv[0], (1, kv[1])


@reported("join")
def join(rdd: Any, other: Any, num_partitions: int | None = None,
         strategy: str | PartitionFunction | None = None, **params: Any) -> Any:
    """``rdd.join(other, num_partitions)`` (inner join) with balanced routing; same pairs.

    Statistics (when needed) are gathered on ``rdd``, the side whose skew matters. With a
    splitting strategy ``rdd``'s records of a key are spread over the key's candidate
    partitions and ``other``'s records of that key are copied to every candidate (Nasir et al.'s
    key splitting; the copies cost ``|candidates|`` x the right side's hot keys).
    """
    rdd, other = _pairs_checked(rdd), _pairs_checked(other)
    zero_pass = mapstats.zero_pass_options(rdd, strategy, params)
    if zero_pass is not None:  # both sides' records in the group sizes
        tagged = rdd.mapValues(_tag_left).union(other.mapValues(_tag_right))
        return mapstats.combine_by_groups(tagged, _num_partitions(rdd, num_partitions), _list1,
                                          _append, _extend, **zero_pass).flatMapValues(_pairs)
    f = _resolve(rdd, num_partitions, strategy, params)
    n = f.num_partitions
    if not f.splits_keys:
        # PySpark's own join plan (union of tagged sides, one groupByKey) with our routing.
        tagged = rdd.mapValues(_tag_left).union(other.mapValues(_tag_right))
        return tagged.groupByKey(n, partitionFunc=partition_func(f)).flatMapValues(_pairs)
    if not callable(getattr(f, "candidates", None)):
        raise NotImplementedError(
            f"join with the splitting {type(f).__name__} needs its candidates(key) to replicate "
            "the other side; it has none, so an exact join is impossible. Use a key-grouping "
            "strategy for this join.")
    left = rdd.mapPartitions(_Router(f)).map(_tag_routed_left)
    right = other.flatMap(_Replicator(f))
    return (left.union(right).groupByKey(n, partitionFunc=_dest_of)
            .flatMapValues(_pairs).map(_drop_dest))
