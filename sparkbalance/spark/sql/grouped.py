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

import inspect
import typing
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from sparkbalance.stats.groupcost import GroupCost, group_cost_stats as _price
from sparkbalance.stats.keystats import KeyStats
from sparkbalance.spark.sql.keystats import key_array, key_stats
from sparkbalance.spark.sql.hash_columns import column_ref
from sparkbalance.spark.sql.route import PID_COL

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

    from sparkbalance.routing.base import PartitionFunction
    from sparkbalance.spark.sql.dataframe import BalancedGroupedData

__all__ = ["apply_in_pandas", "apply_in_arrow", "BalancedCogroupedData", "co_place",
           "group_cost_stats", "has_arrow_api"]


# -------------------------------------------------------------------- hiding the helpers
def _hidden(g: "BalancedGroupedData") -> tuple[str, ...]:
    """The columns of ``g``'s placed rows that plain Spark's function would not see: the
    partition id, and the helper column of each expression key. Plain Spark passes a
    grouping expression's value in the key tuple only (its frames are the DataFrame's own
    columns, ``FlatMapGroupsInPandas`` over ``Project(keys ++ child.output)``); the helper
    column holds that same value, so the key tuple needs no change beyond dropping ``pid``."""
    hidden = g._keys.hidden if g._keys is not None else []
    return (PID_COL, *hidden)


def _pandas_dropper(names: tuple[str, ...]) -> Callable[[Any], Any]:
    drop = list(names)

    def dropped(pdf: Any) -> Any:
        return pdf.drop(columns=drop)
    return dropped


def _arrow_dropper(names: tuple[str, ...]) -> Callable[[Any], Any]:
    drop = frozenset(names)

    def dropped(table: Any) -> Any:
        # Table and RecordBatch both have .select(indices); keeps the user's column order.
        return table.select([i for i, n in enumerate(table.schema.names) if n not in drop])
    return dropped


def _arity(func: Callable) -> int:
    # The Python worker decides the form by exactly this count (pyspark worker.py:
    # len(inspect.getfullargspec(func).args)); the wrapper must take the same number.
    return len(inspect.getfullargspec(func).args)


def _hints(func: Callable, names: list[str]) -> dict[str, Any]:
    """The user's type hints renamed to the wrapper's parameters (Spark infers the iterator
    forms from them), or none when the user gave none."""
    try:
        hints = typing.get_type_hints(func)
    except Exception:  # unresolvable string hints: Spark would see the raw ones too
        hints = dict(getattr(func, "__annotations__", {}))
    if not hints:
        return {}
    params = inspect.getfullargspec(func).args
    out = {new: hints[old] for old, new in zip(params, names) if old in hints}
    if "return" in hints:
        out["return"] = hints["return"]
    return out


def _wrap_grouped(func: Callable, drop: Callable[[Any], Any]) -> Callable:
    """``func`` over frames without the helper column and keys without ``pid``."""
    n = _arity(func)
    if n not in (1, 2):
        raise ValueError(f"func takes {n} positional arguments; expected 1 (data) or 2 "
                         "(key, data), as GroupedData.applyInPandas/applyInArrow")
    iterator = _is_iterator(func)
    if n == 2 and iterator:
        def call(key, data):
            return func(key[1:], (drop(b) for b in data))
    elif n == 2:
        def call(key, data):
            return func(key[1:], drop(data))
    elif iterator:
        def call(data):
            return func(drop(b) for b in data)
    else:
        def call(data):
            return func(drop(data))
    call.__annotations__ = _hints(func, ["key", "data"] if n == 2 else ["data"])
    call.__name__ = getattr(func, "__name__", "func")
    return call


def _is_iterator(func: Callable) -> bool:
    try:
        hints = typing.get_type_hints(func)
    except Exception:
        return False
    params = inspect.getfullargspec(func).args
    data = hints.get(params[-1]) if params else None
    name = getattr(data, "_name", getattr(data, "__name__", None))
    return name == "Iterator"


def _wrap_cogrouped(func: Callable, drop_left: Callable[[Any], Any],
                    drop_right: Callable[[Any], Any]) -> Callable:
    """``func`` over each side's frame without that side's helper columns."""
    n = _arity(func)
    if n == 3:
        def call(key, left, right):
            return func(key[1:], drop_left(left), drop_right(right))
    elif n == 2:
        def call(left, right):
            return func(drop_left(left), drop_right(right))
    else:
        raise ValueError(f"func takes {n} positional arguments; expected 2 (left, right) or "
                         "3 (key, left, right), as PandasCogroupedOps.applyInPandas")
    call.__name__ = getattr(func, "__name__", "func")
    return call


def has_arrow_api() -> bool:
    """Whether this PySpark has ``GroupedData.applyInArrow`` (Spark 4.0 and later).

    Examples
    --------
    >>> isinstance(has_arrow_api(), bool)                                   # doctest: +SKIP
    True
    """
    from pyspark.sql import GroupedData
    return hasattr(GroupedData, "applyInArrow")


def _need_arrow() -> None:
    if not has_arrow_api():
        import pyspark
        raise NotImplementedError(f"applyInArrow needs PySpark >= 4.0; this is "
                                  f"{pyspark.__version__} (use applyInPandas)")


# ------------------------------------------------------------------------- grouped map
def apply_in_pandas(g: "BalancedGroupedData", func: Callable, schema: Any) -> "DataFrame":
    """``GroupedData.applyInPandas`` over balanced groups (one exchange, no helper column).

    ``func`` sees exactly the frames (and, in the two-argument form, the key tuples) that
    ``df.groupBy(*cols).applyInPandas(func, schema)`` would give it; the iterator forms
    (type hints ``Iterator[pd.DataFrame]``, Spark 4.1+) are kept.

    Examples
    --------
    >>> g = sb.group_by(df, "k", num_partitions=8)                           # doctest: +SKIP
    >>> apply_in_pandas(g, lambda pdf: pdf.head(1), df.schema)               # doctest: +SKIP
    """
    return g._grouped.applyInPandas(_wrap_grouped(func, _pandas_dropper(_hidden(g))),
                                     schema)


def apply_in_arrow(g: "BalancedGroupedData", func: Callable, schema: Any) -> "DataFrame":
    """``GroupedData.applyInArrow`` over balanced groups (PySpark >= 4.0).

    Examples
    --------
    >>> apply_in_arrow(g, lambda t: t.slice(0, 1), df.schema)                # doctest: +SKIP
    """
    _need_arrow()
    return g._grouped.applyInArrow(_wrap_grouped(func, _arrow_dropper(_hidden(g))),
                                    schema)


# ---------------------------------------------------------------------------- cogroup
def _side_stats(g: "BalancedGroupedData") -> KeyStats:
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
        self._ops = pl.groupBy(PID_COL, *[column_ref(pl, c) for c in left._cols]).cogroup(
            pr.groupBy(PID_COL, *[column_ref(pr, c) for c in right._cols]))
        self._hidden = (_hidden(left), _hidden(right))
        #: The partition function both sides are placed by.
        self.partitioner = f

    def applyInPandas(self, func: Callable, schema: Any) -> "DataFrame":
        """Same as ``PandasCogroupedOps.applyInPandas``; ``func`` never sees the helper."""
        drops = [_pandas_dropper(h) for h in self._hidden]
        return self._ops.applyInPandas(_wrap_cogrouped(func, *drops), schema)

    def applyInArrow(self, func: Callable, schema: Any) -> "DataFrame":
        """Same as ``PandasCogroupedOps.applyInArrow`` (PySpark >= 4.0)."""
        _need_arrow()
        drops = [_arrow_dropper(h) for h in self._hidden]
        return self._ops.applyInArrow(_wrap_cogrouped(func, *drops), schema)


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
