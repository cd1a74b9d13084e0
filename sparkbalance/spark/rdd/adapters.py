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
:mod:`sparkbalance.spark.session.conf`) or an already fitted partition function. Each call
resolves it once (:func:`sparkbalance.spark.session.conf.resolve_record`, before any Spark
job: names and parameters checked against the registry) and passes the record down;
statistics are gathered only when the strategy needs them (``record.needs_stats``,
:func:`sparkbalance.spark.fit.fit_rdd`), under the job group ``sparkbalance-stats``. The
choice between the zero-pass, inline, plain and split shuffles is made in one place
(``_combine``).

**Zero-pass statistics.** Strategy "auto" (the default) with no statistics parameter, or
any call with ``stats="map-output"``, gathers no statistics at all: the shuffle itself routes
records to ``m >> n`` key groups, the records of each group (counted by the map tasks) are
planned onto the ``n`` tasks (LPT, or plain placement when it gains too little) and the
shuffle is read once (:mod:`sparkbalance.spark.rdd.mapstats`; needs the JVM bridge, else
"auto" plans from a bounded sample of the input, :mod:`sparkbalance.spark.rdd.bounded`). The adapters then return an RDD whose ``partitioner`` holds the fitted
:class:`~sparkbalance.routing.keygroups.GroupMapPartitioner` (``mapstats.fitted_function``),
which can be saved and reused as a fixed plan.

Long because: five adapters share one resolution step, one four-way choice and the
splitting merge step.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Iterator

from sparkbalance.routing.base import PartitionFunction, check_num_partitions, partition_func
from sparkbalance.routing.hash import HashPartitioner
from sparkbalance.stats.keystats import KeyStats
from sparkbalance.strategies import ResolvedStrategy, bounded_auto
from sparkbalance.spark.fit import fit_partitioner, fit_rdd
from sparkbalance.spark.rdd import shuffle as fnshuffle
from sparkbalance.spark.rdd import mapstats
from sparkbalance.spark.session import conf
from sparkbalance.spark.report.plan_report import reported
from sparkbalance.spark.rdd.key_errors import KeyGuard, check_pairs

__all__ = ["partition_by", "reduce_by_key", "aggregate_by_key", "group_by_key", "join",
           "fit_partitioner"]

#: Adapter keywords that say how to fit (statistics given, sampled, measured...), not
#: which strategy: any of them given means a statistics path, not the zero-pass shuffle.
_FIT_OPTIONS = ("stats", "sample_fraction", "current", "weights", "listener", "stats_method")


# ---------------------------------------------------------------------------------------
# Resolution and fitting: once per call
# ---------------------------------------------------------------------------------------
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


@dataclass(frozen=True)
class _Call:
    """One adapter call after its single resolution: the record and the fitting options."""

    record: ResolvedStrategy
    options: dict[str, Any]
    num_partitions: int


def _resolve(rdd: Any, num_partitions: int | None, strategy: Any,
             params: dict[str, Any]) -> _Call:
    """The call's strategy resolved once (:func:`conf.resolve_record`), before any job.

    The zero-pass shuffle is offered when no fitting option is given: strategy "auto"
    (the default) then plans key groups from the map output (:mod:`.mapstats`), and
    ``stats="map-output"`` asks for it explicitly.
    """
    params = dict(params)
    options = {k: params.pop(k) for k in _FIT_OPTIONS if k in params}
    asked = isinstance(options.get("stats"), str) and options["stats"] == mapstats.MAP_OUTPUT
    if asked:
        options.pop("stats")
        given = sorted(k for k, v in options.items() if v is not None)
        if given:
            raise TypeError(f"stats='map-output' reads no other statistics; got {given}")
    fitting = any(v is not None for v in options.values())
    record = conf.resolve_record(rdd, strategy, params,
                                 sample_fraction=options.pop("sample_fraction", None),
                                 map_output=None if fitting else partial(mapstats.loaded, rdd),
                                 asked=asked)
    if not fitting:   # "auto" without the shuffle's counts: a bounded sample, not a pass
        record = bounded_auto(record)
    if num_partitions is None and record.function is not None:
        num_partitions = record.function.num_partitions
    n = _num_partitions(rdd, num_partitions)
    if record.function is not None and record.function.num_partitions != n:
        raise ValueError(f"partition function has {record.function.num_partitions} "
                         f"partitions; expected num_partitions={n}")
    return _Call(record, options, n)


def _fitted(rdd: Any, call: _Call) -> KeyGuard:
    """The call's partition function (fitted on ``rdd``'s keys unless given), guarded: keys
    an executor cannot route fail with a first line naming type, partition, remedy."""
    f = call.record.function
    if f is None:
        f = fit_rdd(rdd, call.num_partitions, call.record, **call.options)
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
# The four ways of a keyed shuffle, chosen in one place
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Combiner:
    """What a combining adapter merges, and PySpark's own operation for a plain function.

    ``plain(rdd, n, partitionFunc)`` is PySpark's operation (``reduceByKey``,
    ``groupByKey``...); ``inline`` says whether an inlinable function may replace it by
    :func:`~sparkbalance.spark.rdd.shuffle.combine_by_function` (``groupByKey`` keeps
    PySpark's own grouping, whose spilling suits large groups); ``finish`` turns the
    combiners of the other ways into what ``plain`` returns (None: they are the same).
    """

    create: Callable
    merge_value: Callable
    merge_combiners: Callable
    plain: Callable[[Any, int, Callable], Any]
    inline: bool = True
    finish: Callable[[Any], Any] | None = None


def _combine(rdd: Any, call: _Call, c: _Combiner, f: KeyGuard | None = None) -> Any:
    """``rdd`` combined per key by the call's strategy, one of four ways: zero-pass (key
    groups planned from the shuffle's map output), inline (routing in the map-side loop),
    plain (PySpark's operation with ``partitionFunc``), split (combine per (key, chosen
    partition), then merge). ``f``: the function already fitted (on another RDD)."""
    if call.record.map_output is not None:
        out = mapstats.combine_by_groups(rdd, call.num_partitions, c.create, c.merge_value,
                                         c.merge_combiners, **call.record.map_output)
    else:
        f = f if f is not None else _fitted(rdd, call)
        if not f.splits_keys and not (c.inline and fnshuffle.inlinable(f)):
            return c.plain(rdd, f.num_partitions, partition_func(f))
        if f.splits_keys:
            out = _split_combine(rdd, f, c.create, c.merge_value, c.merge_combiners)
        else:
            out = fnshuffle.combine_by_function(rdd, f, c.create, c.merge_value,
                                                c.merge_combiners)
    return c.finish(out) if c.finish is not None else out


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
    options = {"stats": stats, "sample_fraction": sample_fraction, "current": current}
    rdd = _pairs_checked(rdd)
    call = _resolve(rdd, n, strategy, {**{k: v for k, v in options.items() if v is not None},
                                       **params})
    if call.record.map_output is not None:
        return mapstats.shuffle_by_groups(rdd, n, **call.record.map_output)
    f = _fitted(rdd, call)
    if fnshuffle.inlinable(f):
        return fnshuffle.partition_by_function(rdd, f)
    return rdd.partitionBy(n, partition_func(f))


def _identity(x: Any) -> Any:
    return x


def _plain_reduce(func: Callable) -> Callable[[Any, int, Callable], Any]:
    return lambda rdd, n, pf: rdd.reduceByKey(func, n, partitionFunc=pf)


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
    call = _resolve(rdd, num_partitions, strategy, params)
    return _combine(rdd, call, _Combiner(_identity, func, func, _plain_reduce(func)))


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

    def plain(rdd: Any, n: int, pf: Callable) -> Any:
        return rdd.aggregateByKey(zero_value, seq_func, comb_func, n, partitionFunc=pf)

    rdd = _pairs_checked(rdd)
    call = _resolve(rdd, num_partitions, strategy, params)
    return _combine(rdd, call, _Combiner(create, seq_func, comb_func, plain))


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


def _plain_group(rdd: Any, n: int, pf: Callable) -> Any:
    return rdd.groupByKey(n, partitionFunc=pf)


#: group_by_key: lists per key; PySpark's groupByKey for a plain function.
_GROUP = _Combiner(_list1, _append, _extend, _plain_group, inline=False,
                   finish=lambda out: out.mapValues(_as_result_iterable))
#: join: the tagged values of both sides listed per key (iterated once by _pairs).
_JOIN = _Combiner(_list1, _append, _extend, _plain_group, inline=False)


@reported("group_by_key")
def group_by_key(rdd: Any, num_partitions: int | None = None,
                 strategy: str | PartitionFunction | None = None, **params: Any) -> Any:
    """``rdd.groupByKey(num_partitions)``: (key, iterable of values); same groups.

    With a splitting strategy each (key, partition) builds a partial list where its
    records landed; the partial lists are concatenated per key (values order is
    unspecified, as in PySpark).
    """
    rdd = _pairs_checked(rdd)
    return _combine(rdd, _resolve(rdd, num_partitions, strategy, params), _GROUP)


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
    PySpark's own join plan otherwise (union of tagged sides, one grouping, both sides'
    records in the zero-pass group sizes).
    """
    rdd, other = _pairs_checked(rdd), _pairs_checked(other)
    call = _resolve(rdd, num_partitions, strategy, params)
    f = _fitted(rdd, call) if call.record.map_output is None else None
    if f is None or not f.splits_keys:
        tagged = rdd.mapValues(_tag_left).union(other.mapValues(_tag_right))
        return _combine(tagged, call, _JOIN, f).flatMapValues(_pairs)
    if not callable(getattr(f, "candidates", None)):
        raise NotImplementedError(
            f"join with the splitting {type(f).__name__} needs its candidates(key) to replicate "
            "the other side; it has none, so an exact join is impossible. Use a key-grouping "
            "strategy for this join.")
    n = f.num_partitions
    left = rdd.mapPartitions(_Router(f)).map(_tag_routed_left)
    right = other.flatMap(_Replicator(f))
    return (left.union(right).groupByKey(n, partitionFunc=_dest_of)
            .flatMapValues(_pairs).map(_drop_dest))
