"""Balanced DataFrame repartition and groupBy, routed inside the JVM (no Python UDF).

``repartition(df, n, "key")`` is a drop-in for ``df.repartition(n, "key")`` that balances
skewed keys: it gathers per-key counts with one aggregation (or a sample, or takes given
:class:`~sparkbalance.stats.KeyStats`; :mod:`sparkbalance.spark.sql.keystats`; the default
strategy "auto" reads only a bounded sample of the first rows), fits a
key-grouping strategy of the registry :mod:`sparkbalance.strategies`, turns the fitted
partition function into a Spark SQL expression (:mod:`sparkbalance.spark.sql.route`) and
places every row on the partition it names in one exchange (:func:`sparkbalance.spark.sql.placement.place`:
``repartitionById`` on Spark 4.1+, hash partitioning on a precomputed route value on Spark
3.5). The expression computes exactly what the Python partition function computes, so the
DataFrame path and the RDD path agree key by key. When strategy "auto" finds no key heavy
enough to unbalance a partition (uniform keys), nothing is routed: the rows take plain
Spark's own exchange, ``df.repartition(n, *cols)`` (:func:`~sparkbalance.spark.sql.placement.place_as_spark`),
so uniform keys cost only the bounded sample.

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

from sparkbalance.routing.base import PartitionFunction, check_num_partitions
from sparkbalance.stats.keystats import KeyStats
# "auto" reads a bounded sample, not a statistics pass (no harm on uniform keys).
from sparkbalance.strategies import bounded_auto
from sparkbalance.spark.fit import WEIGHTS, fit_dataframe, fit_partitioner
from sparkbalance.spark.session import conf
from sparkbalance.spark.sql import hash_columns as sqlhash
from sparkbalance.spark.sql.grouped import BalancedGroupedData, group_cost_stats
from sparkbalance.spark.sql.connect import require_classic
from sparkbalance.spark.sql.key_columns import key_columns
from sparkbalance.spark.sql.placement import place, place_as_spark, spark_places
from sparkbalance.spark.report.plan_report import reported
from sparkbalance.spark.sql.route import PID_COL, with_partition_id

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

    from sparkbalance.strategies import ResolvedStrategy

# fit_partitioner and WEIGHTS are sparkbalance.spark.fit's, named here for this module's
# readers (sb.fit_partitioner takes a DataFrame and its key columns).
__all__ = ["fit_partitioner", "repartition", "group_by", "BalancedGroupedData", "WEIGHTS"]

_TIME_ON_CONNECT = ("task timings come from the listener bus; use weights='count' (the "
                    "default), or give stats= measured on a classic session")


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
    (``NULL_PARTITION`` for null keys), where F is the fitted partition function; when
    "auto" fits plain hashing, Spark's own placement (``pmod(hash(cols), n)``, the plan of
    ``df.repartition(num_partitions, *cols)``).

    Examples
    --------
    >>> out = repartition(df, 8, "user", strategy="mixed")                # doctest: +SKIP
    >>> out.rdd.getNumPartitions()                                        # doctest: +SKIP
    8
    """
    kc = key_columns(df, cols)
    weights, listener = params.pop("weights", "count"), params.pop("listener", None)
    if weights == "time":
        require_classic(df, "weights='time'", _TIME_ON_CONNECT)
    record = bounded_auto(conf.resolve_record(kc.df, strategy, params,
                                              sample_fraction=sample_fraction,
                                              key_grouping=True))
    placed, f = _place(kc.df, num_partitions, kc.names, record, stats, partitioner, current,
                       literal_limit, weights, listener, pid_col=None)
    # Spark's own exchange ("auto" found no heavy key) carries no partition id column: the
    # query is df.repartition(n, *cols) as built, no column added to be dropped again
    drop = [*([] if partitioner is None and spark_places(record, f) else [PID_COL]),
            *kc.hidden]
    return placed.drop(*drop) if drop else placed


def _place(df: "DataFrame", num_partitions: int, cols: Sequence[str],
           record: "ResolvedStrategy", stats: KeyStats | None,
           partitioner: PartitionFunction | None, current: PartitionFunction | None,
           literal_limit: int | None, weights: str = "count", listener: Any = None,
           pid_col: str | None = PID_COL) -> tuple["DataFrame", PartitionFunction]:
    """Rows of ``df`` with the partition id column, placed on it: by ``partitioner`` when
    given, else by ``record`` fitted on the key columns ``cols``. When "auto" leaves the
    placement to Spark, the id column is ``pid_col`` = 0 (none when None)."""
    n = check_num_partitions(num_partitions)
    cols = sqlhash.check_key_columns(df, cols)
    if partitioner is None:
        partitioner = fit_dataframe(df, n, cols, record, weights=weights, listener=listener,
                                    stats=stats, current=current)
        if spark_places(record, partitioner):  # "auto" found no heavy key: plain Spark's
            return place_as_spark(df, n, cols, pid_col), partitioner   # exchange, no route
    elif partitioner.num_partitions != n:
        raise ValueError(f"partitioner has {partitioner.num_partitions} partitions; expected "
                         f"num_partitions={n}")
    with_pid = with_partition_id(df, partitioner, *cols, literal_limit=literal_limit)
    return place(with_pid, n, PID_COL), partitioner


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

    When "auto" finds no heavy key the rows take Spark's own exchange (as
    ``df.repartition(n, *cols).groupBy(*cols)``; one exchange) and ``.partitioner`` is the
    plain hashing "auto" fitted, not where Spark's hash put the keys: to measure a run for
    ``weights="time"``, place it by a named strategy (``strategy="mixed"``).

    Examples
    --------
    >>> group_by(df, "user", num_partitions=8, strategy="mixed").count()   # doctest: +SKIP
    """
    from pyspark.sql.types import NumericType
    n = conf.default_partitions(df) if num_partitions is None else num_partitions
    numeric = [fld.name for fld in df.schema.fields if isinstance(fld.dataType, NumericType)]
    kc = key_columns(df, cols)
    df, cols = kc.df, kc.names
    stats = kwargs.pop("stats", None)
    partitioner, current = kwargs.pop("partitioner", None), kwargs.pop("current", None)
    source = {"df": df, "literal_limit": kwargs.pop("literal_limit", None), "timed": None}
    weights, listener = kwargs.pop("weights", "count"), kwargs.pop("listener", None)
    if weights == "time":
        require_classic(df, "weights='time'", _TIME_ON_CONNECT)
        # A grouped-map call costs per group, not per row: price each group with the model
        # fitted on the measured run (sparkbalance.spark.sql.grouped.group_cost_stats).
        from sparkbalance.spark.fit import _check_measured
        _check_measured(current)
        if listener is None:
            raise ValueError("weights='time' needs listener=<the TaskMetricsListener that "
                             "recorded the previous run placed by current=>")
        stats = group_cost_stats(df, *cols, listener=listener, current=current,
                                 stats=stats)[0]
        source["timed"] = (listener, current)
    elif weights != "count":
        raise ValueError(f"weights={weights!r}; expected 'count' or 'time'")
    # Resolved once; a cogroup of this group refits the same record (grouped.co_place).
    fraction = kwargs.pop("sample_fraction", None)
    source["record"] = bounded_auto(conf.resolve_record(df, strategy, kwargs,
                                                        sample_fraction=fraction,
                                                        key_grouping=True))
    source["stats"], source["sample_fraction"] = stats, fraction
    placed, f = _place(df, n, cols, source["record"], stats, partitioner, current,
                       source["literal_limit"])
    return BalancedGroupedData(placed, list(cols), numeric, f, source, kc)
