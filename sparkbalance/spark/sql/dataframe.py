"""Balanced DataFrame repartition and groupBy, routed inside the JVM (no Python UDF).

``repartition(df, n, "key")`` is a drop-in for ``df.repartition(n, "key")`` that balances
skewed keys: it gathers per-key counts with one aggregation (or a sample, or takes given
:class:`~sparkbalance.stats.KeyStats`; :mod:`sparkbalance.spark.sql.keystats`), fits a
key-grouping strategy of the registry :mod:`sparkbalance.strategies`, turns the fitted
partition function into a Spark SQL expression (:mod:`sparkbalance.spark.sql.route`) and
places every row on the partition it names in one exchange (:func:`sparkbalance.spark.sql.placement.place`:
``repartitionById`` on Spark 4.1+, hash partitioning on a precomputed route value on Spark
3.5). The expression computes exactly what the Python partition function computes, so the
DataFrame path and the RDD path agree key by key.

``group_by(df, "key").agg(...)`` groups by ``(pid, key)`` after the placement: Spark sees the
data already clustered on ``pid`` and plans **one** exchange (the placement itself), then
drops ``pid``. Balanced joins are in :mod:`sparkbalance.spark.sql.join`.

Keys are column names or ``Column`` objects, as in ``df.repartition`` / ``df.groupBy``
(:mod:`sparkbalance.spark.sql.key_columns`: an expression is computed into a hidden helper column,
dropped again). Statistics list the heaviest keys only (bounded driver memory,
:mod:`sparkbalance.spark.sql.keystats`).

Settings not given explicitly come from the session's ``spark.sparkbalance.*`` conf
(:mod:`sparkbalance.spark.session.conf`); unknown strategy parameters are refused before any job.

Examples
--------
>>> import sparkbalance as sb                                     # doctest: +SKIP
>>> balanced = sb.repartition(df, 8, "user")                       # doctest: +SKIP
>>> totals = sb.group_by(df, "user", num_partitions=8).sum("amount")   # doctest: +SKIP
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from sparkbalance import strategies
from sparkbalance.routing.base import PartitionFunction, check_num_partitions
from sparkbalance.routing.hash import HashPartitioner
from sparkbalance.stats.keystats import KeyStats
from sparkbalance.spark.session import conf
from sparkbalance.spark.sql import hash_columns as sqlhash
from sparkbalance.spark.sql.key_columns import KeyColumns, key_columns
from sparkbalance.spark.sql.keystats import key_stats
from sparkbalance.spark.rdd.keystats import measured_tasks
from sparkbalance.spark.sql.placement import place
from sparkbalance.spark.report.plan_report import fit as fit_and_note, reported
from sparkbalance.spark.sql.route import PID_COL, with_partition_id

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, GroupedData

__all__ = ["fit_partitioner", "resolve_key_grouping", "repartition", "group_by",
           "BalancedGroupedData", "WEIGHTS"]

#: Key cost measures: records, or records x measured seconds per record.
WEIGHTS = ("count", "time")


def resolve_key_grouping(df: "DataFrame", strategy: str | None, params: dict[str, Any]
                         ) -> tuple[strategies.Strategy, dict[str, Any]]:
    """The key-grouping strategy and parameters a DataFrame adapter runs, checked before jobs.

    ``strategy=None`` reads ``spark.sparkbalance.strategy`` (else the registry default);
    strategies that split a key over partitions, or plan the keyed state only, are refused
    with ``ValueError``, unknown parameters with ``TypeError``.

    Examples
    --------
    >>> resolve_key_grouping(df, "keygroups", {})[0].kind        # doctest: +SKIP
    'keygroups'
    """
    spec, params = conf.resolve_strategy(df, strategy, params)
    if spec.splits_keys or spec.state_only:
        why = ("splits keys over partitions" if spec.splits_keys else
               "plans the keyed state only")
        raise ValueError(f"strategy={spec.name!r} {why}; the DataFrame adapter needs a "
                         f"key-grouping strategy, one of {', '.join(strategies.KEY_GROUPING)}")
    return spec, params


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


@reported("fit_partitioner", "dataframe")
def fit_partitioner(df: "DataFrame", num_partitions: int, *cols: Any,
                    strategy: str | None = None, weights: str = "count", listener: Any = None,
                    stats: KeyStats | None = None, sample_fraction: float | None = None,
                    current: PartitionFunction | None = None, **params: Any
                    ) -> PartitionFunction:
    """Fit the partition function :func:`repartition` would use (statistics + strategy).

    Same keywords and defaults as :func:`sparkbalance.spark.rdd.adapters.fit_partitioner`.

    Parameters
    ----------
    df : the DataFrame.
    num_partitions : n >= 1.
    cols : key column names or ``Column`` objects (an expression is computed per row).
    strategy : a key-grouping strategy (default ``spark.sparkbalance.strategy``, else
        :data:`sparkbalance.strategies.DEFAULT_STRATEGY`).
    weights : {"count", "time"}
        Key cost = records, or records x measured seconds per record ("time": needs
        ``listener`` holding the task records of the previous run of this keyed stage and
        ``current``, the partition function that run was placed by; see
        :func:`sparkbalance.stats.timeweights.time_weighted_stats`).
    stats : precomputed statistics (skips the statistics job).
    sample_fraction : gather statistics on a sample of this fraction (conf
        ``spark.sparkbalance.sampleFraction``; exact when unset).
    current : the partition function in use (table planners minimise moves from it).
    params : strategy parameters (``theta``, ``max_table``, ``num_groups``...), checked
        before any Spark job runs.

    Examples
    --------
    >>> f = fit_partitioner(df, 8, "user", strategy="mixed")   # doctest: +SKIP
    >>> f("alice") == f("alice")                               # doctest: +SKIP
    True
    """
    n = check_num_partitions(num_partitions)
    kc = key_columns(df, cols)
    df, cols = kc.df, sqlhash.check_key_columns(kc.df, kc.names)
    spec, params = resolve_key_grouping(df, strategy, params)
    if weights not in WEIGHTS:
        raise ValueError(f"weights={weights!r}; expected 'count' or 'time'")
    sample_fraction = conf.resolve_sample_fraction(df, sample_fraction)
    tasks = None
    if weights == "time":
        measured = _check_measured(current)
        # Read the measured tasks before our own statistics job adds stages of its own.
        tasks = measured_tasks(listener)
    if (spec.needs_stats or tasks is not None) and stats is None:
        stats = key_stats(df, *cols, sample_fraction=sample_fraction)
    if tasks is not None:
        from sparkbalance.stats.timeweights import time_weighted_stats
        stats = time_weighted_stats(stats, tasks, measured.assign(stats.keys),
                                    num_partitions=measured.num_partitions)
    if spec.needs_stats and len(stats) == 0:
        return HashPartitioner(n)  # nothing to balance (empty or all-null data)
    return fit_and_note(spec.name, stats if spec.needs_stats else None, n, current=current,
                        **params)


@reported("repartition", "dataframe")
def repartition(df: "DataFrame", num_partitions: int, *cols: Any, strategy: str | None = None,
                stats: KeyStats | None = None, sample_fraction: float | None = None,
                partitioner: PartitionFunction | None = None,
                current: PartitionFunction | None = None, literal_limit: int | None = None,
                **params: Any) -> "DataFrame":
    """Balanced drop-in for ``df.repartition(num_partitions, *cols)``.

    Parameters
    ----------
    df : the DataFrame.
    num_partitions : n >= 1.
    cols : key column names or ``Column`` objects (references or expressions) of types
        INT/BIGINT/SMALLINT/TINYINT/BOOLEAN/STRING/BINARY.
    strategy : key-grouping strategy (default ``spark.sparkbalance.strategy`` or the
        registry default).
    stats : per-key statistics to plan from (skips the aggregation).
    sample_fraction : gather statistics on a sample of this fraction.
    partitioner : use this partition function (skips statistics and fitting).
    current : the partitioner in use (table planners minimise moves from it).
    literal_limit : largest routing table placed in the query as a literal.
    params : ``weights``/``listener`` of :func:`fit_partitioner` and strategy parameters
        (``theta``, ``max_table``, ``num_groups``, ``tau``...).

    Returns
    -------
    DataFrame with the same rows and columns, row with key k in partition ``F(k)``
    (``NULL_PARTITION`` for null keys), where F is the fitted partition function.

    Examples
    --------
    >>> out = repartition(df, 8, "user", strategy="mixed")                # doctest: +SKIP
    >>> out.rdd.getNumPartitions()                                        # doctest: +SKIP
    8
    """
    kc = key_columns(df, cols)
    placed, _ = _place(kc.df, num_partitions, kc.names, strategy, stats, sample_fraction,
                       partitioner, current, literal_limit, params)
    return placed.drop(PID_COL, *kc.hidden)


def _place(df, num_partitions, cols, strategy, stats, sample_fraction, partitioner, current,
           literal_limit, params) -> tuple["DataFrame", PartitionFunction]:
    n = check_num_partitions(num_partitions)
    cols = sqlhash.check_key_columns(df, cols)
    if partitioner is None:
        partitioner = fit_partitioner(df, n, *cols, strategy=strategy, stats=stats,
                                      sample_fraction=sample_fraction, current=current,
                                      **params)
    elif partitioner.num_partitions != n:
        raise ValueError(f"partitioner has {partitioner.num_partitions} partitions; expected "
                         f"num_partitions={n}")
    with_pid = with_partition_id(df, partitioner, *cols, literal_limit=literal_limit)
    return place(with_pid, n, PID_COL), partitioner


class BalancedGroupedData:
    """``GroupedData`` over balanced partitions: one exchange, the helper column dropped.

    Examples
    --------
    >>> g = group_by(df, "user", num_partitions=8)          # doctest: +SKIP
    >>> g.agg(F.sum("amount").alias("total"))                # doctest: +SKIP
    """

    def __init__(self, placed: "DataFrame", cols: Sequence[str], numeric: Sequence[str],
                 partitioner: PartitionFunction, source: dict[str, Any] | None = None,
                 keys: KeyColumns | None = None) -> None:
        self._placed = placed
        # Back-quoted references: a column named "k.x" is not field x of a struct k.
        self._grouped: "GroupedData" = placed.groupBy(
            PID_COL, *[sqlhash.column_ref(placed, c) for c in cols])
        # What the placement was made from; a cogroup re-places both sides by one function.
        self._source = source
        self._cols = list(cols)
        self._numeric = list(numeric)
        # Expression keys: helper columns renamed as Spark names the grouping expressions.
        self._keys = keys
        #: The fitted partition function (key -> partition).
        self.partitioner = partitioner

    def _done(self, out: "DataFrame") -> "DataFrame":
        out = out.drop(PID_COL)
        return self._keys.rename(out) if self._keys is not None else out

    def agg(self, *exprs: Any) -> "DataFrame":
        """Same as ``GroupedData.agg`` (Columns or a ``{column: function}`` dict)."""
        return self._done(self._grouped.agg(*exprs))

    def count(self) -> "DataFrame":
        return self._done(self._grouped.count())

    def _numeric_cols(self, cols: tuple[str, ...]) -> list[str]:
        # With no columns Spark aggregates every numeric column; name them so the helper
        # column is never one of them.
        return list(cols) if cols else list(self._numeric)

    def sum(self, *cols: str) -> "DataFrame":
        return self._done(self._grouped.sum(*self._numeric_cols(cols)))

    def avg(self, *cols: str) -> "DataFrame":
        return self._done(self._grouped.avg(*self._numeric_cols(cols)))

    mean = avg

    def min(self, *cols: str) -> "DataFrame":
        return self._done(self._grouped.min(*self._numeric_cols(cols)))

    def max(self, *cols: str) -> "DataFrame":
        return self._done(self._grouped.max(*self._numeric_cols(cols)))

    # Cogroup: both sides placed by one function (sparkbalance.spark.sql.grouped.co_place).
    def needs_stats(self) -> bool:
        """Whether this side's strategy is fitted on key statistics."""
        src = self._source
        return resolve_key_grouping(src["df"], src["strategy"], src["params"])[0].needs_stats

    def place_with(self, other: "BalancedGroupedData", stats: KeyStats | None
                   ) -> tuple["DataFrame", "DataFrame", PartitionFunction]:
        """Refit this side's strategy on ``stats`` (both sides' keys) and place both sides
        by it, the helper column kept (the grouping needs it)."""
        src = self._source
        n = self.partitioner.num_partitions
        spec, params = resolve_key_grouping(src["df"], src["strategy"], src["params"])
        f = fit_partitioner(src["df"], n, *self._cols, strategy=spec.name, stats=stats,
                            **params)
        placed = [_place(s._source["df"], n, s._cols, strategy=None, stats=None,
                         sample_fraction=None, partitioner=f, current=None,
                         literal_limit=s._source["literal_limit"], params={})[0]
                  for s in (self, other)]
        return placed[0], placed[1], f

    # Grouped-map functions: sparkbalance.spark.sql.grouped hides the helper columns (pid and
    # those of expression keys) from them.
    def applyInPandas(self, func: Any, schema: Any) -> "DataFrame":
        """Same as ``GroupedData.applyInPandas``; ``func`` never sees a helper column."""
        from sparkbalance.spark.sql.grouped import apply_in_pandas
        return apply_in_pandas(self, func, schema)

    def applyInArrow(self, func: Any, schema: Any) -> "DataFrame":
        """Same as ``GroupedData.applyInArrow`` (PySpark >= 4.0)."""
        from sparkbalance.spark.sql.grouped import apply_in_arrow
        return apply_in_arrow(self, func, schema)

    def cogroup(self, other: "BalancedGroupedData") -> Any:
        """Same as ``GroupedData.cogroup``: both sides placed by one partition function."""
        from sparkbalance.spark.sql.grouped import BalancedCogroupedData
        return BalancedCogroupedData(self, other)


@reported("group_by", "dataframe")
def group_by(df: "DataFrame", *cols: Any, num_partitions: int | None = None,
             strategy: str | None = None, **kwargs: Any) -> BalancedGroupedData:
    """Balanced ``df.groupBy(*cols)``: rows placed by a fitted function, one exchange.

    ``cols`` are names or ``Column`` objects, as for ``df.groupBy``; ``num_partitions``
    defaults to ``spark.sql.shuffle.partitions``; other keyword arguments are those of
    :func:`repartition`. With ``weights="time"`` (and ``listener=``, ``current=`` of a
    previous run of the same grouped step) each group costs what the fitted per-group
    model says (``t0 + alpha rows + beta groups``,
    :func:`sparkbalance.spark.sql.grouped.group_cost_stats`) rather than its rows.

    Examples
    --------
    >>> group_by(df, "user", num_partitions=8, strategy="mixed").count()   # doctest: +SKIP
    """
    from pyspark.sql.types import NumericType
    n = conf.default_partitions(df) if num_partitions is None else num_partitions
    numeric = [fld.name for fld in df.schema.fields if isinstance(fld.dataType, NumericType)]
    kc = key_columns(df, cols)
    df, cols = kc.df, kc.names
    source = {"df": df, "strategy": strategy, "stats": kwargs.pop("stats", None),
              "sample_fraction": kwargs.pop("sample_fraction", None),
              "literal_limit": kwargs.pop("literal_limit", None), "timed": None}
    if kwargs.get("weights") == "time":
        # A grouped-map call costs per group, not per row: price each group with the model
        # fitted on the measured run (sparkbalance.spark.sql.grouped.group_cost_stats).
        from sparkbalance.spark.sql.grouped import group_cost_stats
        kwargs.pop("weights")
        listener, current = kwargs.pop("listener", None), _check_measured(kwargs.get("current"))
        if listener is None:
            raise ValueError("weights='time' needs listener=<the TaskMetricsListener that "
                             "recorded the previous run placed by current=>")
        source["stats"] = group_cost_stats(df, *cols, listener=listener, current=current,
                                           stats=source["stats"])[0]
        source["timed"] = (listener, current)
    placed, f = _place(df, n, cols, strategy, source["stats"], source["sample_fraction"],
                       kwargs.pop("partitioner", None), kwargs.pop("current", None),
                       source["literal_limit"], kwargs)
    source["params"] = {k: v for k, v in kwargs.items()
                        if k not in ("weights", "listener")}
    return BalancedGroupedData(placed, list(cols), numeric, f, source, kc)
