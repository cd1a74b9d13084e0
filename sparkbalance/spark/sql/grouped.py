"""Balanced grouped-map and cogrouped-map functions (``applyInPandas`` / ``applyInArrow``).

``df.groupBy(k).applyInPandas(fit_model, schema)`` runs one Python call per group; a huge
group (or a group whose call is slow) makes one task run for minutes, partial aggregation
cannot help (the function is not decomposable) and AQE does not split it. Here the groups
are placed by a key-grouping strategy instead of Spark's hash: the rows carry the target
partition in a helper column (:data:`~sparkbalance.spark.sql.route.PID_COL`), are placed by
``repartitionById`` and grouped by ``(pid, *keys)``. Since ``pid`` is a function of the key,
the groups are exactly the key groups, and the placement already clusters the rows on
``pid``, so Spark plans **one** exchange per side. The user's function is wrapped so that it
never sees the helper columns (``pid`` is dropped from every frame and from the grouping key
tuple of the two-argument forms; an expression key's helper column from every frame, its
value staying in the key tuple as plain Spark passes it); its output schema is the user's,
so nothing leaks out either.

A cogroup needs both sides placed by the *same* function (a key must meet itself): the
two sides' placements are replaced by one fitted on the sum of both sides' statistics,
unless both were given the same ``partitioner=``. With ``weights="time"`` on a side, the
summed rows are priced by the measured cogroup run instead.

:class:`BalancedGroupedData` (what ``sb.group_by`` returns: ``agg``, the grouped-map
functions, ``cogroup``) lives here whole; :mod:`sparkbalance.spark.sql.hidden_columns` wraps
the user's functions.

Per-group cost is often not proportional to rows: :func:`group_cost_stats` fits
``c(k) = alpha rows(k) + beta`` to the task times a listener measured on a previous (or a
sample) run, for ``group_by(..., stats=...)`` (model in :mod:`sparkbalance.stats.groupcost`).

Examples
--------
>>> import sparkbalance as sb                                                # doctest: +SKIP
>>> out = sb.group_by(df, "user", num_partitions=16).applyInPandas(fit, "user long, w double")
>>> both = sb.group_by(a, "k").cogroup(sb.group_by(b, "k")).applyInPandas(merge, schema)
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from sparkbalance.routing.base import PartitionFunction
from sparkbalance.stats.groupcost import GroupCost, group_cost_stats as _price
from sparkbalance.stats.keystats import KeyStats
from sparkbalance.spark.fit import fit_dataframe
from sparkbalance.spark.report.plan_report import reported
from sparkbalance.spark.sql import hash_columns as sqlhash
from sparkbalance.spark.sql.hidden_columns import (arrow_dropper, has_arrow_api, hidden_columns,
                                                   need_arrow, pandas_dropper, wrap_cogrouped,
                                                   wrap_grouped)
from sparkbalance.spark.sql.key_columns import KeyColumns
from sparkbalance.spark.sql.keystats import key_array, key_stats
from sparkbalance.spark.sql.placement import place
from sparkbalance.spark.sql.route import PID_COL, with_partition_id

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, GroupedData

    from sparkbalance.strategies import ResolvedStrategy

__all__ = ["BalancedGroupedData", "BalancedCogroupedData", "co_place", "group_cost_stats",
           "has_arrow_api", "COPARTITION_CONF"]


@reported("fit_partitioner", "dataframe")
def _refit(df: "DataFrame", num_partitions: int, *cols: str, strategy: "ResolvedStrategy",
           stats: KeyStats | None) -> PartitionFunction:
    """A cogroup's one function: the left side's resolved strategy fitted on both sides'
    statistics (reported as a ``fit_partitioner`` of its own, as a cogroup is not inside
    the ``group_by`` calls that made its sides)."""
    return fit_dataframe(df, num_partitions, cols, strategy, stats=stats)


# ------------------------------------------------------------------------- grouped data
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

    # Cogroup: both sides placed by one function (co_place).
    def needs_stats(self) -> bool:
        """Whether this side's strategy is fitted on key statistics."""
        return self._source["record"].needs_stats

    def place_with(self, other: "BalancedGroupedData", stats: KeyStats | None
                   ) -> tuple["DataFrame", "DataFrame", PartitionFunction]:
        """Refit this side's strategy (the record its ``group_by`` resolved) on ``stats``
        (both sides' keys) and place both sides by it, the helper column kept (the grouping
        needs it)."""
        f = _refit(self._source["df"], self.partitioner.num_partitions, *self._cols,
                   strategy=self._source["record"], stats=stats)
        placed = [place(with_partition_id(s._source["df"], f, *s._cols,
                                          literal_limit=s._source["literal_limit"]),
                        f.num_partitions, PID_COL) for s in (self, other)]
        return placed[0], placed[1], f

    # Grouped-map functions: the wrappers of hidden_columns hide the helper columns (pid and
    # those of expression keys) from them.
    def applyInPandas(self, func: Callable, schema: Any) -> "DataFrame":
        """``GroupedData.applyInPandas`` over balanced groups (one exchange, no helper column).

        ``func`` sees exactly the frames (and, in the two-argument form, the key tuples) that
        ``df.groupBy(*cols).applyInPandas(func, schema)`` would give it; the iterator forms
        (type hints ``Iterator[pd.DataFrame]``, Spark 4.1+) are kept.

        Examples
        --------
        >>> g = sb.group_by(df, "k", num_partitions=8)                           # doctest: +SKIP
        >>> g.applyInPandas(lambda pdf: pdf.head(1), df.schema)                  # doctest: +SKIP
        """
        drop = pandas_dropper(hidden_columns(self._keys))
        return self._grouped.applyInPandas(wrap_grouped(func, drop), schema)

    def applyInArrow(self, func: Callable, schema: Any) -> "DataFrame":
        """``GroupedData.applyInArrow`` over balanced groups (PySpark >= 4.0)."""
        need_arrow()
        drop = arrow_dropper(hidden_columns(self._keys))
        return self._grouped.applyInArrow(wrap_grouped(func, drop), schema)

    def cogroup(self, other: "BalancedGroupedData") -> "BalancedCogroupedData":
        """Same as ``GroupedData.cogroup``: both sides placed by one partition function."""
        return BalancedCogroupedData(self, other)



# ---------------------------------------------------------------------------- cogroup
def _side_stats(g: BalancedGroupedData) -> KeyStats:
    given = g._source["stats"]
    if given is not None:
        return given
    return key_stats(g._source["df"], *g._cols,
                     sample_fraction=g._source["sample_fraction"])


def _sum_stats(a: KeyStats, b: KeyStats) -> KeyStats:
    """Per key: counts and costs of both sides added (a cogroup call sees both frames)."""
    index: dict[Any, int] = {}
    keys: list = []
    for k in a.keys.tolist() + b.keys.tolist():
        if k not in index:
            index[k] = len(keys)
            keys.append(k)
    counts, cost = np.zeros(len(keys)), np.zeros(len(keys))
    for s in (a, b):
        at = [index[k] for k in s.keys.tolist()]
        np.add.at(counts, at, s.counts)
        np.add.at(cost, at, s.cost)
    return KeyStats(key_array(keys), counts, cost)


def co_place(left: "BalancedGroupedData", right: "BalancedGroupedData"
             ) -> tuple["DataFrame", "DataFrame", "PartitionFunction"]:
    """Both sides placed by one partition function: (left, right, function).

    Reuses the sides' placements when they share one partition function (the same
    ``partitioner=``); otherwise fits the left side's strategy and ``num_partitions`` on
    the sum of both sides' statistics (their ``stats=`` when given, else one aggregation
    per side) and places both by it.

    Examples
    --------
    >>> l, r, f = co_place(sb.group_by(a, "k"), sb.group_by(b, "id"))       # doctest: +SKIP
    """
    if len(left._cols) != len(right._cols):
        raise ValueError(f"cogroup keys {left._cols} and {right._cols} differ in length; "
                         "expected the same number of key columns on both sides")
    if left.partitioner is right.partitioner:
        return left._placed, right._placed, left.partitioner
    if not left.needs_stats():
        return left.place_with(right, None)
    timed = left._source.get("timed") or right._source.get("timed")
    if timed is None:
        return left.place_with(right, _sum_stats(_side_stats(left), _side_stats(right)))
    # A cogroup call sees both sides' rows of a key: the measured cogroup run's task times
    # are fitted on the rows of both (t0 + alpha (rows_l + rows_r) + beta groups).
    listener, current = timed
    rows = _sum_stats(_rows(_side_stats(left)), _rows(_side_stats(right)))
    priced = group_cost_stats(left._source["df"], *left._cols, listener=listener,
                              current=current, stats=rows)[0]
    return left.place_with(right, priced)


def _rows(s: KeyStats) -> KeyStats:
    """``s`` weighted by rows again (a side priced in seconds is summed as rows first)."""
    return KeyStats(s.keys, s.counts, s.counts)


#: Spark < 4.1 keeps a co-partitioned operator's placement only with this conf false.
COPARTITION_CONF = "spark.sql.requireAllClusterKeysForCoPartition"


def _check_copartition_conf(df: "DataFrame") -> None:
    """Refuse a balanced cogroup that Spark would re-shuffle (Spark 3.5 and 4.0).

    Without ``repartitionById`` both sides are hash-partitioned on the partition column
    alone (:mod:`sparkbalance.spark.sql.placement`); a cogroup clusters by (partition, key), and
    with ``spark.sql.requireAllClusterKeysForCoPartition`` true (Spark's default) Spark
    shuffles both sides again by its own hash of all of them, undoing the placement.
    """
    from sparkbalance.spark.sql.placement import has_repartition_by_id
    if has_repartition_by_id(df):
        return
    value = df.sparkSession.conf.get(COPARTITION_CONF, "true")
    if str(value).strip().lower() != "false":
        import pyspark
        raise RuntimeError(
            f"sparkbalance: a balanced cogroup on Spark {pyspark.__version__} needs "
            f"{COPARTITION_CONF}=false (with Spark's default true it re-shuffles both sides "
            "by its own hash, undoing the placement); set it on the session, or use Spark "
            "4.1+ (DataFrame.repartitionById), or plain df.groupBy(...).cogroup(...)")


class BalancedCogroupedData:
    """``PandasCogroupedOps`` over two sides placed by one partition function.

    Examples
    --------
    >>> cg = sb.group_by(a, "k").cogroup(sb.group_by(b, "k"))               # doctest: +SKIP
    >>> cg.applyInPandas(lambda l, r: l.merge(r, on="k"), schema)            # doctest: +SKIP
    """

    def __init__(self, left: "BalancedGroupedData", right: "BalancedGroupedData") -> None:
        from pyspark.sql import DataFrame  # noqa: F401  (fail early without pyspark)
        _check_copartition_conf(left._placed)
        pl, pr, f = co_place(left, right)
        # Back-quoted, as BalancedGroupedData groups: "k.x" is a column, not a struct field.
        self._ops = pl.groupBy(PID_COL, *[sqlhash.column_ref(pl, c) for c in left._cols]).cogroup(
            pr.groupBy(PID_COL, *[sqlhash.column_ref(pr, c) for c in right._cols]))
        self._hidden = (hidden_columns(left._keys), hidden_columns(right._keys))
        #: The partition function both sides are placed by.
        self.partitioner = f

    def applyInPandas(self, func: Callable, schema: Any) -> "DataFrame":
        """Same as ``PandasCogroupedOps.applyInPandas``; ``func`` never sees the helper."""
        drops = [pandas_dropper(h) for h in self._hidden]
        return self._ops.applyInPandas(wrap_cogrouped(func, *drops), schema)

    def applyInArrow(self, func: Callable, schema: Any) -> "DataFrame":
        """Same as ``PandasCogroupedOps.applyInArrow`` (PySpark >= 4.0)."""
        need_arrow()
        drops = [arrow_dropper(h) for h in self._hidden]
        return self._ops.applyInArrow(wrap_cogrouped(func, *drops), schema)


# ------------------------------------------------------------------------- time weights
def group_cost_stats(df: "DataFrame", *cols: str, listener: Any, current: "PartitionFunction",
                     measured: "DataFrame | None" = None, stage_id: int | None = None,
                     time: str = "run", stats: KeyStats | None = None
                     ) -> tuple[KeyStats, GroupCost]:
    """Key statistics of ``df`` priced by a grouped-map run the listener measured.

    The measured run placed its groups by ``current`` (e.g. ``g.partitioner`` of a previous
    balanced ``group_by``) over ``measured`` (default ``df``; a sample of it for a sample
    run); each partition's task time is fitted to ``t0 + alpha rows + beta groups``
    (:func:`sparkbalance.stats.groupcost.fit_group_cost`) and each key of ``df`` costs
    ``alpha rows(k) + beta`` seconds. Pass the result as ``group_by(..., stats=...)``.

    Parameters
    ----------
    df : the data to place next.
    cols : key columns.
    listener : a TaskMetricsListener that recorded the measured run.
    current : the key-grouping partition function the measured run was placed by.
    measured : the DataFrame the measured run processed (default ``df``).
    stage_id : the measured stage (default: the latest with ``current.num_partitions``
        tasks, :func:`sparkbalance.stats.timeweights.measured_stage`).
    time : which task time ("run", "duration", "cpu"; ``TIME_FIELDS``).
    stats : counts of ``df`` when already gathered (skips that aggregation).

    Examples
    --------
    >>> s, model = group_cost_stats(df, "k", listener=lst, current=g.partitioner)  # doctest: +SKIP
    >>> sb.group_by(df, "k", num_partitions=16, stats=s).applyInPandas(f, schema)  # doctest: +SKIP
    """
    from sparkbalance.stats.timeweights import measured_stage, partition_seconds
    from sparkbalance.spark.rdd.keystats import STATS_JOB_GROUP
    if current is None or current.splits_keys:
        raise ValueError("current= must be the key-grouping partition function the measured "
                         f"run was placed by; got {current!r}")
    tasks = [t for t in listener.tasks(successful_only=True)
             if getattr(t, "job_group", None) != STATS_JOB_GROUP]
    if not tasks:
        raise ValueError("the listener recorded no successful task; run the grouped-map "
                         "stage once with the listener attached first")
    n = current.num_partitions
    sid = measured_stage(tasks, n) if stage_id is None else stage_id
    seconds = partition_seconds(tasks, n, stage_id=sid, time=time)
    stats = key_stats(df, *cols) if stats is None else stats
    seen = stats if measured is None else key_stats(measured, *cols)
    return _price(stats, seconds, current.assign(seen.keys), measured=seen)
