"""One balance record and one log line per RDD or DataFrame plan.

A balanced operation (``sb.repartition``, ``sb.group_by``, ``sb.join_df``, the RDD
adapters, ``sb.fit_partitioner``) is wrapped by :func:`reported`: its Spark jobs carry a
description naming it (:func:`sparkbalance.spark.session.jobs.operation_jobs`), and when it planned
(:func:`fit` or :func:`plan_groups`, called where the adapters fit) one record goes to
:func:`sparkbalance.spark.report.balance_log.post` (the Spark UI's "Balance" tab when the plugin
runs) and one INFO line to the ``sparkbalance`` logger::

    sparkbalance: repartition(user_id, 8, mixed): mixed (RoutingTablePartitioner),
    imbalance 3.41 -> 1.02 (LB 1.00), table 17, 0 keys rerouted, plan 0.004 s, 0.9 s in all,
    jobs [3]

Loads are the planner's cost per key (records, or seconds with ``weights="time"``) summed
per partition: *before* under the partition function in use (``current``, else Spark's
stable hash), *after* under the fitted function. LB, the lower bound of Fang et al. §3
for key grouping, is ``max(total / n, largest key cost)``: no plan that keeps a key on one
partition can do better. A splitting strategy (Nasir et al.) routes records, not keys, so
its record has no loads after and LB ``total / n``. Nested operations report once (the
outermost). Keys rerouted (``keys_rerouted``) are the keys ``current`` and the new function
place differently; they are not a state migration (no ``keys_moved``).
"""
from __future__ import annotations

import contextvars
import functools
import inspect
import logging
import time
from typing import Any, Callable

import numpy as np

from sparkbalance import strategies
from sparkbalance.routing.base import PartitionFunction
from sparkbalance.spark.report.balance_log import post
from sparkbalance.spark.report.log_line import log_info, plan_log_line
from sparkbalance.spark.report.hot_keys import hot_keys, split_fields
from sparkbalance.spark.report.spark_placement import before_placement, spark_partitions
from sparkbalance.spark.session.jobs import DESCRIPTION_PREFIX, current_operation, next_job_id, operation_jobs
from sparkbalance.spark.session.conf_snapshot import kept_reads

__all__ = ["reported", "fit", "plan_groups", "plan_split", "plan_record", "plan_log_line"]

_LOG = logging.getLogger("sparkbalance")

# What the running operation planned (filled by fit / plan_groups), None outside one.
_FACTS: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "sparkbalance_plan_facts", default=None)


# ----------------------------------------------------------------------- planning hooks
def fit(strategy: Any, stats: Any, num_partitions: int, *,
        current: PartitionFunction | None = None, **params: Any) -> PartitionFunction:
    """Fit ``strategy`` (a resolved :class:`~sparkbalance.strategies.ResolvedStrategy`, as
    the adapters pass it, or a registry name with its ``params``), timed and noted for the
    running operation's record. With a record, ``params`` are measured inputs of the fit
    (:meth:`~sparkbalance.strategies.ResolvedStrategy.fit`).

    Examples
    --------
    >>> from sparkbalance.stats.keystats import KeyStats
    >>> fit("mixed", KeyStats.from_counts({"a": 5, "b": 1}), 2).num_partitions
    2
    """
    t0 = time.perf_counter()
    if isinstance(strategy, strategies.ResolvedStrategy):
        record = strategy
    else:
        record, params = strategies.resolve(strategy, params), {}
    f = record.fit(stats, num_partitions, current=current, **params)
    facts = _FACTS.get()
    if facts is not None:
        facts.update(strategy=record.name, f=f, stats=stats, current=current,
                     plan_seconds=time.perf_counter() - t0)
    return f


def plan_groups(sizes: Any, num_partitions: int, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
    """:func:`sparkbalance.strategies.auto.plan_groups` (the zero-pass plan of key groups
    from map-output sizes), timed and noted for the running operation's record.

    Examples
    --------
    >>> f, d = plan_groups([6, 6, 1, 1], 2)
    >>> f.owner_of_group.tolist(), d["balanced"]
    ([0, 1, 0, 1], True)
    """
    from sparkbalance.strategies.auto import plan_groups as plan

    t0 = time.perf_counter()
    f, info = plan(sizes, num_partitions, **kwargs)
    facts = _FACTS.get()
    if facts is not None:
        facts.update(strategy="auto", f=f, group_sizes=np.asarray(sizes, dtype=np.float64),
                     plan_seconds=time.perf_counter() - t0,
                     extra={"balanced": bool(info.get("balanced")),
                            "predicted_gain": info.get("gain")})
    return f, info


def plan_split(stats: Any, num_partitions: int, **kwargs: Any) -> Any:
    """:func:`sparkbalance.planning.split.plan_split` (the join's hot-key split), timed and
    noted for the running operation's record: loads before under Spark's stable hash of the
    same keys, loads after as planned, LB ``total / n`` (pieces of a key spread).

    Examples
    --------
    >>> from sparkbalance.stats.keystats import KeyStats
    >>> p = plan_split(KeyStats.from_counts({"a": 6, "b": 1, "c": 1}), 2, threshold=0.5)
    >>> sorted(len(v) for v in p.pieces.values())[-1] > 1   # "a" is cut into pieces
    True
    """
    from sparkbalance.planning.split import plan_split as plan

    t0 = time.perf_counter()
    p = plan(stats, num_partitions, **kwargs)
    facts = _FACTS.get()
    if facts is not None:
        n = int(num_partitions)
        cost = np.asarray(p.cost, dtype=np.float64)
        split = sum(1 for v in p.pieces.values() if len(v) > 1)
        facts.update(strategy="split", f=p.base, plan_seconds=time.perf_counter() - t0,
                     record={"num_partitions": n, "planner": type(p).__name__,
                             "table_size": len(p.pieces), "layout": p.summary(),
                             "loads_before": _loads(p.base.assign(p.keys), cost, n),
                             "loads_after": np.asarray(p.loads, dtype=np.float64).tolist(),
                             "lower_bound": float(cost.sum()) / n,
                             "keys_split": split})
    return p


# ----------------------------------------------------------------------- the record
def _loads(assign: np.ndarray, cost: np.ndarray, n: int) -> list[float]:
    return np.bincount(assign, weights=cost, minlength=n)[:n].tolist()


def _table_size(f: Any) -> tuple[int, str | None]:
    table = getattr(f, "table", None)
    if table is not None:
        return len(table), f"routing table, {len(table)} entries"
    groups = getattr(f, "owner_of_group", None)
    if groups is not None:
        return len(groups), f"{len(groups)} key groups"
    return 0, None


def plan_record(f: PartitionFunction, num_partitions: int, *, stats: Any = None,
                current: PartitionFunction | None = None,
                group_sizes: np.ndarray | None = None,
                spark_where: np.ndarray | None = None,
                placement: str | None = None) -> dict[str, Any]:
    """Loads before/after, LB, table size and rerouted keys of a fitted ``f`` (record fields).

    Parameters
    ----------
    f : the fitted partition function.
    num_partitions : n.
    stats : the KeyStats it was fitted on (None: a plan without statistics).
    current : the partition function in use before (None: stable hash).
    group_sizes : for a zero-pass plan, the measured size of each key group of ``f``.
    spark_where : where plain Spark puts each key of ``stats``
        (:func:`~sparkbalance.spark.report.spark_placement.spark_partitions`), the "before"
        when there is no ``current``; None: sparkbalance's stable hash stands in.
    placement : how ``spark_where`` was computed (or why it could not be), for the record.

    Examples
    --------
    >>> from sparkbalance.stats.keystats import KeyStats
    >>> s = KeyStats.from_counts({"a": 6, "b": 2, "c": 2})
    >>> from sparkbalance.routing.table import RoutingTablePartitioner
    >>> r = plan_record(RoutingTablePartitioner(2, {"a": 0, "b": 1, "c": 1}), 2, stats=s)
    >>> r["loads_after"], r["lower_bound"], r["table_size"]
    ([6.0, 4.0], 6.0, 3)
    """
    n = int(num_partitions)
    size, layout = _table_size(f)
    rec: dict[str, Any] = {"num_partitions": n, "planner": type(f).__name__,
                           "table_size": size}
    if layout is not None:
        rec["layout"] = layout
    if group_sizes is not None:  # zero-pass: records per key group, counted by the map tasks
        w = np.asarray(group_sizes, dtype=np.float64)
        from sparkbalance.strategies.auto import plain_owner
        rec["loads_before"] = _loads(plain_owner(w.shape[0], n), w, n)  # hash placement
        rec["loads_after"] = _loads(np.asarray(f.owner_of_group, dtype=np.int64), w, n)
        rec["lower_bound"] = max(float(w.sum()) / n, float(w.max(initial=0.0)))
        rec["before_placement"] = ("key groups on their hash home (the records per group "
                                   "were counted in the shuffle itself, not per key)")
        return rec
    if stats is None or len(stats) == 0:
        if f.splits_keys:  # PKG gathers nothing: its loads exist only once the job ran
            rec["loads_note"] = (f"{type(f).__name__} gathers no key statistics: records are "
                                 f"routed as they arrive, so loads are not known when it plans; "
                                 f"see the stage skew view for the tasks as they ran")
        return rec
    cost = np.asarray(stats.cost, dtype=np.float64)
    counts = np.asarray(stats.counts, dtype=np.float64)
    where_before, n_before, rec["before_placement"] = before_placement(
        stats.keys, n, current, spark_where, placement)
    rec["loads_before"] = _loads(where_before, cost, n_before)
    total = float(stats.data_count)
    if f.splits_keys:  # records of one key spread at run time: LB of a perfect split
        rec["lower_bound"] = float(cost.sum()) / n
        rec.update(split_fields(f, stats.keys, counts, cost, total, where_before))
        return rec
    where_after = f.assign(stats.keys)
    rec["loads_after"] = _loads(where_after, cost, n)
    rec["lower_bound"] = max(float(cost.sum()) / n, float(cost.max(initial=0.0)))
    rec["hot_keys"] = hot_keys(stats.keys, counts, cost, total, where_before, where_after)
    if current is not None and not current.splits_keys:
        rec["keys_rerouted"] = int(np.count_nonzero(where_before != where_after))
    return rec


# ----------------------------------------------------------------------- the wrapper
def _context(data: Any) -> Any:
    for get in (lambda d: d.context, lambda d: d.sparkSession.sparkContext):
        try:
            sc = get(data)
        except Exception:  # not an RDD / no SparkContext (Spark Connect)
            continue
        if getattr(sc, "_jsc", None) is not None:
            return sc
    return None


def _strategy_name(data: Any, strategy: Any) -> str:
    if isinstance(strategy, (PartitionFunction, strategies.ResolvedStrategy)):
        return strategy.name if not isinstance(strategy, PartitionFunction) \
            else type(strategy).__name__
    try:
        from sparkbalance.spark.session import conf
        return str(conf.resolve(data, "strategy", strategy))
    except Exception:  # a bad name is the adapter's error to raise, with its message
        return str(strategy)


def _column_label(c: Any) -> str:
    """A key column as the user wrote it: a name, or a ``Column``'s expression."""
    if isinstance(c, str):
        return c
    jc = getattr(c, "_jc", None)
    try:
        return str(jc.toString()) if jc is not None else str(c)
    except Exception:  # a Connect column has no _jc; its repr names it
        return str(c)


def _label(operation: str, kind: str, bound: inspect.BoundArguments) -> tuple[str, str, str]:
    args = bound.arguments
    data = next(iter(args.values()))
    cols = args.get("cols") or args.get("on")
    key = (", ".join(map(_column_label, cols)) if isinstance(cols, (list, tuple))
           else _column_label(cols)) if cols else "key"
    n = args.get("num_partitions")
    if n is None and isinstance(args.get("strategy"), PartitionFunction):
        n = args["strategy"].num_partitions
    if n is None:
        try:
            from sparkbalance.spark.session import conf
            n = (conf.default_partitions(data) if kind == "dataframe"
                 else data._defaultReducePartitions())
        except Exception:
            n = "default"
    strategy = _strategy_name(data, args.get("strategy"))
    return f"{operation}({key}, {n}, {strategy})", key, strategy


def reported(operation: str, kind: str | None = "rdd") -> Callable[[Callable], Callable]:
    """Decorate a balanced operation: label its jobs, post its plan's record, log one line.

    The decorated function's first argument is the RDD or DataFrame; its ``num_partitions``,
    ``strategy`` and key columns (``cols`` or ``on``) name the operation. A call inside
    another reported operation is that operation's part (no record, no label of its own).

    Parameters
    ----------
    operation : the name shown ("repartition", "reduce_by_key", ...).
    kind : record kind, "rdd" or "dataframe"; None: by the first argument's type.

    Examples
    --------
    >>> @reported("partition_by")
    ... def partition_by(rdd, num_partitions, strategy=None):
    ...     return rdd
    >>> partition_by([("a", 1)], 2, "hash")
    [('a', 1)]
    """
    def decorate(fn: Callable) -> Callable:
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            if current_operation() is not None:
                return fn(*args, **kwargs)
            try:
                label, key, strategy = _label(operation, kind or "rdd",
                                              sig.bind(*args, **kwargs))
            except TypeError:  # bad arguments: the function raises its own error
                return fn(*args, **kwargs)
            sc = _context(args[0]) if args else None
            arguments = sig.bind(*args, **kwargs).arguments
            cols = arguments.get("cols") or arguments.get("on")
            kind_ = kind if kind is not None else (
                "dataframe" if hasattr(args[0], "sparkSession") else "rdd")
            first = next_job_id(sc) if sc is not None else None
            facts: dict[str, Any] = {}
            token = _FACTS.set(facts)
            t0 = time.perf_counter()
            description = f"{DESCRIPTION_PREFIX}key statistics for {label}"
            try:
                # the operation's conf reads (strategy, theta, budgets...) from one snapshot
                with operation_jobs(sc, label, description), kept_reads():
                    out = fn(*args, **kwargs)
            finally:
                _FACTS.reset(token)
            if "f" in facts:
                facts["data"], facts["cols"], facts["out"] = args[0], cols, out
                _report(sc, kind_, operation, label, key, facts, first, description,
                        time.perf_counter() - t0)
            return out
        return run
    return decorate


def _rdd_id(out: Any) -> int | None:
    """The id of the JVM RDD a returned RDD's stage computes (its jobs run later, under the
    user's action), else None. A PipelinedRDD's own JVM RDD is skipped when an action
    pipelines more Python onto it, so its source (``_prev_jrdd``) is the one in the stage.
    A DataFrame is no RDD: asked for an attribute it lacks, it would resolve its schema
    (driver round trips) to look for a column of that name."""
    from pyspark import RDD
    if not isinstance(out, RDD):
        return None
    try:
        prev = getattr(out, "_prev_jrdd", None)
        if prev is not None:
            return int(prev.id())
        return int(out.id()) if hasattr(out, "_jrdd") else None
    except Exception:  # not an RDD, or no JVM behind it
        return None


def _report(sc: Any, kind: str, operation: str, label: str, key: str, facts: dict[str, Any],
            first: int | None, description: str, seconds: float) -> None:
    f = facts["f"]
    try:
        stats = facts.get("stats")
        where, placement = None, None
        if "record" not in facts and stats is not None and len(stats) and \
                facts.get("current") is None:
            where, placement = spark_partitions(facts.get("data"), facts.get("cols"),
                                                stats.keys, f.num_partitions)
        rec = dict(facts["record"]) if "record" in facts else plan_record(
            f, f.num_partitions, stats=stats, current=facts.get("current"),
            group_sizes=facts.get("group_sizes"), spark_where=where, placement=placement)
    except Exception as exc:  # reporting must never fail the user's operation
        _LOG.debug("no loads for the %s record: %r", label, exc)
        rec = {"num_partitions": f.num_partitions, "planner": type(f).__name__}
    last = next_job_id(sc) if first is not None else None
    rec.update(facts.get("extra") or {})
    rec.update(kind=kind, operation=operation, label=label, key=key,
               strategy=facts["strategy"], plan_seconds=facts["plan_seconds"],
               seconds=seconds, description=description,
               job_ids=list(range(first, last)) if last is not None else [])
    rdd_id = _rdd_id(facts.get("out"))
    if rdd_id is not None:  # the lazy result's stage links here in the stage skew view
        rec["rdd_ids"] = [rdd_id]
    rec = post(sc, rec)
    log_info(_LOG, "%s", plan_log_line(rec))
    if "rdd_ids" in rec and not rec.get("loads_after"):   # pkg & co.: measured when run
        from sparkbalance.spark.report.stage_loads import watch
        watch(sc, rec)
