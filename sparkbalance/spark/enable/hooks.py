"""The bodies that replace Spark's methods while the session-wide mode is installed.

Each hook first decides whether the call is one to consider; anything else reaches Spark's
own method at once, unchanged:

* **the caller is the user's code**: a call made from sparkbalance's own modules (its
  adapters call ``df.groupBy``, ``df.repartition``, ``rdd.partitionBy``...), from PySpark's
  (``reduceByKey`` calls ``combineByKey`` calls ``partitionBy``) or from py4j reaches the
  original, as does any call made while a hook is already deciding in this thread (a
  thread-local flag) — so nothing recurses;
* **the session is on**: ``spark.sparkbalance.enabled`` of the call's session, read at each
  call (a bad value raises, naming the key, before any job);
* **the call has keys sparkbalance can place**: ``repartition(n, *cols)`` with an int ``n``
  and at least one column; ``groupBy(*cols)`` of names or Columns; the pair-RDD methods
  with PySpark's default ``partitionFunc``; anything else (ordinals, rollups, a custom
  ``partitionFunc``, a Spark Connect DataFrame) stays plain.

Then Spark's own method runs first (its analysis, so a bad column fails exactly as Spark
fails), except where its result would be dropped: for ``repartition`` Spark's result is
built only when the call stays plain or its keys do not resolve (then Spark raises its own
error, as a non-positive ``numPartitions`` reaches Spark at once), and for
``applyInPandas``/``applyInArrow`` the checks Spark makes of the function and schema run
first instead, Spark's result built only when the call stays plain (a balanced call does
not analyse a Python UDF plan twice). Then the skew check (:mod:`.check`)
samples the input, and the plain result is returned unless balancing pays, in which case
the sparkbalance adapter's result is: a DataFrame adapter with strategy "auto" plans from
the check's sample (``stats=``: no second statistics job); an RDD adapter plans as it
always does (the user's shuffle counts the keys with the JVM bridge, at no extra pass).
Each decision is kept (:func:`decisions`, the last 100) and logged at INFO on
``sparkbalance.enable``.
"""
from __future__ import annotations

import collections
import contextlib
import logging
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from sparkbalance.spark.enable import check
from sparkbalance.spark.report.log_line import log_info
from sparkbalance.spark.session import conf
from sparkbalance.spark.session.conf_snapshot import kept_reads

__all__ = ["EnableDecision", "decisions", "dataframe_hooks", "grouped_hooks", "rdd_hooks",
           "KEYS_ATTR"]

_LOG = logging.getLogger("sparkbalance.enable")
_LOCAL = threading.local()
#: Attribute the groupBy hook leaves on the GroupedData it returns: the grouping keys.
KEYS_ATTR = "_sparkbalance_keys"
_OWN = ("sparkbalance", "pyspark", "py4j")


@dataclass(frozen=True)
class EnableDecision:
    """One intercepted call: what it was, what the check saw, which way it went."""

    call: str                 # "DataFrame.repartition", "GroupedData.applyInPandas", ...
    keys: tuple[str, ...]
    num_partitions: int
    balanced: bool
    gain: float | None        # predicted slowest-task ratio plain / balanced (None: no check)
    sampled_rows: int
    reason: str


_DECISIONS: collections.deque[EnableDecision] = collections.deque(maxlen=100)


def decisions() -> list[EnableDecision]:
    """The last 100 decisions of the session-wide mode, oldest first.

    Examples
    --------
    >>> isinstance(decisions(), list)
    True
    """
    return list(_DECISIONS)


def _record(d: EnableDecision) -> None:
    _DECISIONS.append(d)
    log_info(_LOG, "%s(%s, n=%d): %s (%s; gain %s over %d sampled rows)", d.call,
             ", ".join(d.keys), d.num_partitions, "balanced" if d.balanced else "plain",
             d.reason, "-" if d.gain is None else f"{d.gain:.2f}", d.sampled_rows)


def _from_user(depth: int = 2) -> bool:
    """Whether the hook's caller is user code (``depth`` frames up: the caller of the hook
    when the hook itself asks)."""
    if getattr(_LOCAL, "busy", False):
        return False
    module = sys._getframe(depth).f_globals.get("__name__", "") or ""
    return module.split(".", 1)[0] not in _OWN


@contextlib.contextmanager
def _busy() -> Iterator[None]:
    _LOCAL.busy = True
    try:
        yield
    finally:
        _LOCAL.busy = False


def _on(obj: Any) -> bool:
    return bool(conf.read(obj, "enabled"))


def _key_list(cols: tuple) -> tuple | None:
    """The grouping keys as given (names or Columns), or None when sparkbalance cannot
    place them (ordinals, none, other types)."""
    from pyspark.sql import Column
    if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
        cols = tuple(cols[0])
    if not cols or not all(isinstance(c, (str, Column)) and not isinstance(c, bool)
                           for c in cols):
        return None
    return cols


def _names(cols: Sequence[Any]) -> tuple[str, ...]:
    return tuple(c if isinstance(c, str) else str(c) for c in cols)


def _decide(data: Any, call: str, cols: Sequence[Any], n: int,
            sample: Callable[[int], check.Sample], plain: Callable[[], Any],
            balanced: Callable[[check.Sample], Any]) -> Any:
    """The plain result (``plain()``), or the balanced one (given the check's sample to plan
    from) when the check predicts it pays."""
    keys = _names(cols)
    rows = conf.resolve(data, "check.sample_rows")
    min_gain = conf.resolve(data, "check.min_gain")
    try:
        got = sample(rows)
        gain = got.gain(n)
    except Exception as exc:  # the check is an optimisation: never the reason a job fails
        _record(EnableDecision(call, keys, n, False, None, 0, f"check failed: {exc!r:.200}"))
        _LOG.warning("%s: the skew check failed (%r); running plain Spark", call, exc)
        return plain()
    if got.skipped is not None:
        _record(EnableDecision(call, keys, n, False, None, 0, check.skipped_reason(got.skipped)))
        return plain()
    if got.rows < check.MIN_SAMPLE_ROWS:
        _record(EnableDecision(call, keys, n, False, gain, got.rows, "too few rows to judge"))
        return plain()
    kept = " (the sample of an earlier call, same files)" if got.remembered else ""
    if gain < 1.0 + min_gain:
        _record(EnableDecision(call, keys, n, False, gain, got.rows,
                               f"gain below 1 + {min_gain:g}{kept}"))
        return plain()
    out = balanced(got)
    _record(EnableDecision(call, keys, n, True, gain, got.rows,
                           f"gain >= 1 + {min_gain:g}{kept}"))
    return out


def _dataframe_call(df: Any, call: str, cols: tuple, n: int, plain: Callable[[], Any],
                    balanced: Callable[[dict[str, Any]], Any]) -> Any:
    """:func:`_decide` for a DataFrame call (``plain()`` Spark's result); ``balanced(kwargs)``
    runs the adapter with
    ``stats=`` the check's sample when the session's DataFrame strategy is "auto" (the
    default: it then plans from that sample, no second statistics job), else with none
    (the strategy gathers what it needs)."""
    from sparkbalance.spark.sql import hash_columns as sqlhash
    from sparkbalance.spark.sql.key_columns import key_columns
    keys = _names(cols)
    try:  # key types the routing expression can hash (INT..., STRING, BINARY, BOOLEAN)
        kc = key_columns(df, cols)
        sqlhash.check_key_columns(kc.df, kc.names)
    except Exception as exc:    # a key Spark cannot resolve: Spark's own call raises
        out = plain()
        _record(EnableDecision(call, keys, n, False, None, 0, f"keys not placeable: {exc}"))
        return out
    auto = conf.strategy_for(df, "dataframe")[0] in (None, "auto")

    def run(got: check.Sample) -> Any:
        return balanced({"stats": got.stats} if auto and got.stats is not None else {})
    return _decide(df, call, cols, n,
                   lambda rows: check.sample_dataframe(kc.df, kc.names, n, rows,
                                                       refuse_shuffle=True), plain, run)


# --------------------------------------------------------------------------- DataFrame
def dataframe_hooks(originals: dict[str, Callable]) -> dict[str, Callable]:
    """Hooks of ``DataFrame.repartition`` and ``groupBy`` (and its alias ``groupby``)."""
    orig_repartition, orig_group_by = originals["repartition"], originals["groupBy"]

    def repartition(self: Any, numPartitions: Any, *cols: Any) -> Any:
        if not (isinstance(numPartitions, int) and not isinstance(numPartitions, bool)
                and numPartitions > 0 and cols and _from_user() and _on(self)):
            return orig_repartition(self, numPartitions, *cols)
        with kept_reads():    # the call's other settings: one read of the session's conf
            keys = _key_list(cols)
            if keys is None:
                return orig_repartition(self, numPartitions, *cols)
            from sparkbalance.spark.sql.dataframe import repartition as sb_repartition
            with _busy():
                # Spark's own result only when the call stays plain (or its keys cannot be
                # read, so that Spark raises its own error): a balanced call does not pay
                # for analysing a plan it drops (~9 driver round trips)
                return _dataframe_call(
                    self, "DataFrame.repartition", keys, numPartitions,
                    lambda: orig_repartition(self, numPartitions, *cols),
                    lambda kw: sb_repartition(self, numPartitions, *keys, **kw))

    def groupBy(self: Any, *cols: Any) -> Any:
        grouped = orig_group_by(self, *cols)
        if _from_user():
            keys = _key_list(cols)
            if keys is not None:
                setattr(grouped, KEYS_ATTR, keys)   # read by the GroupedData hooks
        return grouped

    return {"repartition": repartition, "groupBy": groupBy, "groupby": groupBy}


def grouped_hooks(originals: dict[str, Callable]) -> dict[str, Callable]:
    """Hooks of the ``GroupedData`` methods that end a ``groupBy``: ``agg``, the
    shorthands, ``applyInPandas`` and ``applyInArrow``."""
    return {name: _grouped_hook(name, fn) for name, fn in originals.items()}


def _grouped_hook(name: str, original: Callable) -> Callable:
    def hook(self: Any, *args: Any, **kwargs: Any) -> Any:
        keys = getattr(self, KEYS_ATTR, None)
        if keys is None or not _from_user():
            return original(self, *args, **kwargs)
        return _grouped_call(self, name, original, keys, args, kwargs)
    hook.__name__ = name
    hook.__doc__ = original.__doc__
    return hook


def _grouped_call(self: Any, name: str, original: Callable, keys: tuple, args: tuple,
                  kwargs: dict[str, Any]) -> Any:
    """The grouped hook's body for a call from user code."""
    df = self._df
    if name in _GROUPED_MAP and _grouped_map_checked(name, args, kwargs):
        if not _on(df):
            return original(self, *args, **kwargs)
        plain: Callable[[], Any] = lambda: original(self, *args, **kwargs)   # noqa: E731
    else:
        out = original(self, *args, **kwargs)   # Spark's analysis (and errors) first
        if not _on(df):
            return out
        plain = lambda: out                                                  # noqa: E731
    from sparkbalance.spark.sql.dataframe import group_by
    with kept_reads():    # the call's other settings: one read of the session's conf
        n = conf.default_partitions(df)

        def balanced(kw: dict[str, Any]) -> Any:
            return getattr(group_by(df, *keys, num_partitions=n, **kw), name)(*args, **kwargs)
        with _busy():
            return _dataframe_call(df, f"GroupedData.{name}", keys, n, plain, balanced)


#: Grouped-map methods and the UDF type Spark builds for their function: Spark's own result
#: is built only when the call stays plain (building it analyses a plan around a Python
#: UDF, ~40 driver round trips, that the balanced call would build again), once their
#: arguments passed the checks Spark makes first.
_GROUPED_MAP = {"applyInPandas": "SQL_GROUPED_MAP_PANDAS_UDF",
                "applyInArrow": "SQL_GROUPED_MAP_ARROW_UDF"}


def _grouped_map_checked(name: str, args: tuple, kwargs: dict[str, Any]) -> bool:
    """Whether ``(func, schema)`` of a grouped-map call pass the checks Spark's method makes
    before building its plan: its UDF of them (a function of one or two arguments, a struct
    schema, parsed). False when they do not or cannot be read here: Spark's method then
    runs first and raises its own error, before any job."""
    from pyspark.sql.functions import pandas_udf
    try:
        from pyspark.util import PythonEvalType          # PySpark 4
    except ImportError:                                  # PySpark 3.5
        from pyspark.rdd import PythonEvalType  # type: ignore[attr-defined,no-redef]
    params = dict(zip(("func", "schema"), args), **kwargs)
    if len(args) > 2 or set(params) != {"func", "schema"} or not callable(params["func"]):
        return False
    eval_type = getattr(PythonEvalType, _GROUPED_MAP[name], None)
    if eval_type is None:
        return False
    try:
        pandas_udf(params["func"], returnType=params["schema"], functionType=eval_type)
    except Exception:
        return False
    return True


# --------------------------------------------------------------------------------- RDD
def rdd_hooks(originals: dict[str, Callable]) -> dict[str, Callable]:
    """Hooks of ``RDD.partitionBy``, ``reduceByKey``, ``aggregateByKey``, ``groupByKey``."""
    from pyspark.rdd import portable_hash
    from sparkbalance.spark.rdd import adapters as sb

    def _n(rdd: Any, num_partitions: Any) -> int:
        return int(rdd._defaultReducePartitions() if num_partitions is None else num_partitions)

    def _go(rdd: Any, call: str, pf: Any, num_partitions: Any, plain: Callable[[], Any],
            balanced: Callable[[int], Any]) -> Any:
        if pf is not portable_hash or not _from_user(3) or not _on(rdd):
            return plain()
        with kept_reads():    # the call's other settings: one read of the session's conf
            n = _n(rdd, num_partitions)
            out = plain()        # PySpark's own checks first (lazy: no job runs)
            with _busy():
                return _decide(rdd, call, ("key",), n, lambda rows: check.sample_rdd(
                                   rdd, n, min(rows, check.RDD_DECISION_ROWS)),
                               lambda: out, lambda _sample: balanced(n))

    def partitionBy(self: Any, numPartitions: Any, partitionFunc: Any = portable_hash) -> Any:
        return _go(self, "RDD.partitionBy", partitionFunc, numPartitions,
                   lambda: originals["partitionBy"](self, numPartitions, partitionFunc),
                   lambda n: sb.partition_by(self, n, _key_grouping_strategy(self)))

    def reduceByKey(self: Any, func: Any, numPartitions: Any = None,
                    partitionFunc: Any = portable_hash) -> Any:
        return _go(self, "RDD.reduceByKey", partitionFunc, numPartitions,
                   lambda: originals["reduceByKey"](self, func, numPartitions, partitionFunc),
                   lambda n: sb.reduce_by_key(self, func, n))

    def aggregateByKey(self: Any, zeroValue: Any, seqFunc: Any, combFunc: Any,
                       numPartitions: Any = None, partitionFunc: Any = portable_hash) -> Any:
        return _go(self, "RDD.aggregateByKey", partitionFunc, numPartitions,
                   lambda: originals["aggregateByKey"](self, zeroValue, seqFunc, combFunc,
                                                       numPartitions, partitionFunc),
                   lambda n: sb.aggregate_by_key(self, zeroValue, seqFunc, combFunc, n))

    def groupByKey(self: Any, numPartitions: Any = None, partitionFunc: Any = portable_hash
                   ) -> Any:
        return _go(self, "RDD.groupByKey", partitionFunc, numPartitions,
                   lambda: originals["groupByKey"](self, numPartitions, partitionFunc),
                   lambda n: sb.group_by_key(self, n))

    return {"partitionBy": partitionBy, "reduceByKey": reduceByKey,
            "aggregateByKey": aggregateByKey, "groupByKey": groupByKey}


def _key_grouping_strategy(rdd: Any) -> str | None:
    """partitionBy keeps Spark's contract (each key on one partition): a splitting strategy
    of the session's RDD keys does not apply to it (None: the session's, else "auto")."""
    from sparkbalance import strategies
    name, _ = conf.strategy_for(rdd, "rdd")
    return "auto" if name is not None and strategies.get(name).splits_keys else None
