"""The ``spark.sparkbalance.*`` configuration keys: names, defaults, parsing and resolution.

One small table (:data:`KEYS`) maps a short name to its Spark conf key and default; every
adapter (RDD, DataFrame, keyed state) resolves a setting the same way:

    explicit argument  >  the session's conf key  >  the default of the table

* ``strategy``: ``spark.sparkbalance.strategy``, default
  :data:`sparkbalance.strategies.DEFAULT_STRATEGY` (RDD and DataFrame adapters);
* ``planner``: ``spark.sparkbalance.planner``, the keyed state's planner, same default;
* ``theta``: ``spark.sparkbalance.theta``, θ_max (Fang et al. §3), default
  :data:`sparkbalance.planning.base.DEFAULT_THETA` (0.08);
* ``max_table``: ``spark.sparkbalance.maxTable``, A_max (Fang et al. §4), default
  :data:`sparkbalance.planning.base.DEFAULT_MAX_TABLE` (3000);
* ``sample_fraction``: ``spark.sparkbalance.sampleFraction``, unset: exact statistics;
* ``window``: ``spark.sparkbalance.window``, batches of state kept per key, unset: all;
* ``max_keys``: ``spark.sparkbalance.maxKeys``, keys the statistics list with exact counts
  (the rest are summed in totals), default 100,000; ``all`` lists every distinct key;
* ``rdd.strategy`` / ``dataframe.strategy``: ``spark.sparkbalance.rdd.strategy`` and
  ``spark.sparkbalance.dataframe.strategy``, one API's strategy (wins over the general key);
* ``enabled``: ``spark.sparkbalance.enabled``, the session-wide mode of
  :mod:`sparkbalance.spark.enable` (``true``/``false``, read at each intercepted call);
* ``check.sample_rows`` / ``check.min_gain``: ``spark.sparkbalance.check.sampleRows`` and
  ``spark.sparkbalance.check.minGain``, the budget and the threshold of its skew check;
* ``window.split`` / ``window.cores``: ``spark.sparkbalance.window.split`` (``auto``,
  ``always``, ``never``) and ``spark.sparkbalance.window.cores`` (an int >= 1, unset: the
  session's slots), the payoff rule of ``with_window_columns``.

**Keys for all APIs and keys for one.** ``spark.sparkbalance.strategy`` applies to every
adapter that can run its value; the per-API key wins over it. A splitting strategy (``pkg``,
``dchoices``, ``wchoices``, ``tag``) in the general key applies to the RDD adapters only: the
DataFrame adapters (which need one partition per key) then use the default, ``auto``, and
say so once in the log. The same value in ``spark.sparkbalance.dataframe.strategy`` is an
error. Every error about a value read from the conf names its key, before any job runs.

The parsers of the values are :mod:`sparkbalance.spark.session.conf_values`.

``theta`` and ``max_table`` apply to strategies of kind ``"table"`` (Fang et al.'s
routing-table planners) and to the keyed state; :func:`resolve_record` adds them to those
strategies' parameters and refuses unknown parameters (``TypeError``) before any Spark job
runs. ``docs/configuration.md`` has the table for users.

Examples
--------
>>> resolve(None, "strategy", "hash")      # explicit wins, no session needed
'hash'
>>> resolve(None, "sample_fraction", None) is None
True
"""
from __future__ import annotations

import logging
import numbers
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from sparkbalance import strategies
from sparkbalance.planning.base import DEFAULT_MAX_TABLE, DEFAULT_THETA
from sparkbalance.spark.session import conf_values as values
from sparkbalance.spark.session.conf_snapshot import NOT_KEPT, kept_value
from sparkbalance.spark.session.conf_values import WINDOW_MODES

__all__ = ["ConfKey", "KEYS", "CONF_STRATEGY", "CONF_PLANNER", "CONF_THETA", "CONF_MAX_TABLE",
           "CONF_SAMPLE_FRACTION", "CONF_WINDOW", "CONF_MAX_KEYS", "CONF_ENABLED",
           "CONF_WINDOW_SPLIT", "CONF_WINDOW_CORES", "WINDOW_MODES",
           "DEFAULT_MAX_KEYS", "APIS", "FROM_CONF", "read", "resolve", "resolve_record",
           "resolve_strategy", "strategy_for", "resolve_sample_fraction", "resolve_max_keys",
           "default_partitions"]

#: Keys the statistics list with exact counts unless told otherwise; the rest are summed,
#: so the driver's memory is bounded whatever the number of distinct keys.
DEFAULT_MAX_KEYS: int = 100_000


#: The APIs a per-API key names: the RDD adapters and the DataFrame adapters.
APIS = ("rdd", "dataframe")
_LOG = logging.getLogger("sparkbalance.conf")


class _FromConf:
    """The default of a ``max_keys`` argument: the conf key, else :data:`DEFAULT_MAX_KEYS`."""

    def __repr__(self) -> str:
        return "FROM_CONF"


#: Sentinel default: "read ``spark.sparkbalance.maxKeys``" (None already means every key).
FROM_CONF: Any = _FromConf()


@dataclass(frozen=True)
class ConfKey:
    """One ``spark.sparkbalance.*`` setting: its conf key, default and parser of the text."""

    key: str
    default: Any          # a value, or a zero-argument callable read at resolve time
    parse: Callable[[str], Any]
    doc: str


#: The skew check of the session-wide mode reads at most this many input rows (spread over
#: up to 16 input partitions), and a DataFrame call plans from them: a plan's task loads
#: are off by ~sqrt(n / rows) of the mean (2048 rows: slowest/mean 1.09 at n = 8 on the
#: NYC flights' destinations, 16384: 1.02; sparkbalance.spark.enable.check).
DEFAULT_CHECK_ROWS: int = 16384
#: ... and balances when it predicts the slowest task at least this much shorter (25 %).
DEFAULT_CHECK_MIN_GAIN: float = 0.25

KEYS: Mapping[str, ConfKey] = {
    "strategy": ConfKey("spark.sparkbalance.strategy", lambda: strategies.DEFAULT_STRATEGY,
                        values.strategy_name, "strategy of every adapter that can run it when the "
                        "caller names none (a splitting one: the RDD adapters only)"),
    "rdd.strategy": ConfKey("spark.sparkbalance.rdd.strategy", None, values.strategy_name,
                            "strategy of the RDD adapters (wins over spark.sparkbalance."
                            "strategy)"),
    "dataframe.strategy": ConfKey("spark.sparkbalance.dataframe.strategy", None,
                                  values.strategy_name, "key-grouping strategy of the DataFrame "
                                  "adapters (wins over spark.sparkbalance.strategy)"),
    "planner": ConfKey("spark.sparkbalance.planner", "mixed", values.planner_name,
                       "planner of the keyed state (KeyedStateOperator) when not given"),
    "theta": ConfKey("spark.sparkbalance.theta", DEFAULT_THETA, values.non_negative,
                     "θ_max, the imbalance tolerated before re-planning (Fang et al. §3)"),
    "max_table": ConfKey("spark.sparkbalance.maxTable", DEFAULT_MAX_TABLE,
                         values.non_negative_count,
                         "A_max, the routing-table size bound (Fang et al. §4)"),
    "sample_fraction": ConfKey("spark.sparkbalance.sampleFraction", None, values.fraction,
                               "statistics on a Bernoulli sample of this fraction "
                               "(unset: exact)"),
    "window": ConfKey("spark.sparkbalance.window", None, values.positive_count,
                      "keyed state: batches of state kept per key (unset: all batches)"),
    "enabled": ConfKey("spark.sparkbalance.enabled", False, values.boolean,
                       "the session-wide mode (sb.enable): the DataFrame and RDD calls users "
                       "write go through sparkbalance when the skew check says it pays"),
    "check.sample_rows": ConfKey("spark.sparkbalance.check.sampleRows", DEFAULT_CHECK_ROWS,
                                 values.positive_count, "session-wide mode: input rows the skew "
                                 "check reads at most"),
    "check.min_gain": ConfKey("spark.sparkbalance.check.minGain", DEFAULT_CHECK_MIN_GAIN,
                              values.non_negative, "session-wide mode: balance when the check "
                              "predicts the slowest task cut by at least this fraction"),
    "window.split": ConfKey("spark.sparkbalance.window.split", "auto", values.window_mode,
                            "with_window_columns: split a hot key's window when the payoff "
                            "rule says it pays (auto), always, or never"),
    "window.cores": ConfKey("spark.sparkbalance.window.cores", None, values.positive_count,
                            "with_window_columns: the cores the payoff rule assumes (unset: "
                            "the session's slots, capped by this machine's on a local master)"),
    "max_keys": ConfKey("spark.sparkbalance.maxKeys", DEFAULT_MAX_KEYS, values.max_keys,
                        "statistics: the heaviest keys listed with exact counts, the rest "
                        "summed ('all': every distinct key)"),
}
CONF_STRATEGY: str = KEYS["strategy"].key
CONF_PLANNER: str = KEYS["planner"].key
CONF_THETA: str = KEYS["theta"].key
CONF_MAX_TABLE: str = KEYS["max_table"].key
CONF_SAMPLE_FRACTION: str = KEYS["sample_fraction"].key
CONF_WINDOW: str = KEYS["window"].key
CONF_MAX_KEYS: str = KEYS["max_keys"].key
CONF_ENABLED: str = KEYS["enabled"].key
CONF_WINDOW_SPLIT: str = KEYS["window.split"].key
CONF_WINDOW_CORES: str = KEYS["window.cores"].key


def _raw(spark_or_df: Any, key: str) -> str | None:
    """The conf value of ``key`` (None when unset or empty, or when there is no session).

    Accepts a DataFrame, a SparkSession, an RDD or a SparkContext; for the last two the
    active session's runtime conf is read (``spark.conf.set`` lands there), else the
    context's launch conf.
    """
    obj = spark_or_df
    if obj is None:
        return None
    session = getattr(obj, "sparkSession", None)  # DataFrame
    if session is None and hasattr(obj, "conf") and hasattr(obj, "sparkContext"):
        session = obj  # SparkSession
    try:
        if session is None:
            from pyspark.sql import SparkSession
            session = SparkSession.getActiveSession()
        if session is not None:
            value = kept_value(session, key)           # one call's snapshot, if any
            if value is NOT_KEPT:
                value = session.conf.get(key, None)
        else:
            sc = getattr(obj, "context", obj)  # RDD -> SparkContext
            value = sc.getConf().get(key, None)
    except Exception:  # pragma: no cover - conf access failures mean "unset"
        return None
    return None if value in (None, "") else value


def _entry(name: str) -> ConfKey:
    try:
        return KEYS[name]
    except KeyError:
        raise ValueError(f"conf setting {name!r}; expected one of {', '.join(KEYS)}") from None


def read(spark_or_df: Any, name: str) -> Any:
    """The parsed conf value of setting ``name`` (see :data:`KEYS`), or None when unset.

    Examples
    --------
    >>> spark.conf.set("spark.sparkbalance.theta", "0.1")   # doctest: +SKIP
    >>> read(spark, "theta")                                # doctest: +SKIP
    0.1
    """
    entry = _entry(name)
    text = _raw(spark_or_df, entry.key)
    if text is None:
        return None
    try:
        return entry.parse(text)
    except ValueError as exc:
        why = str(exc)
        if not why.startswith("expected"):   # float("abc"), or the registry's own words
            why = "expected a number" if entry.parse in values.NUMERIC else why
        raise ValueError(f"{entry.key}={text!r}; {why}") from None


def resolve(spark_or_df: Any, name: str, explicit: Any = None) -> Any:
    """``explicit`` if given, else the conf value of ``name``, else its default.

    Examples
    --------
    >>> resolve(None, "strategy", None)     # no session: the registry default
    'auto'
    """
    if explicit is not None:
        return explicit
    value = read(spark_or_df, name)
    if value is None:
        default = _entry(name).default
        return default() if callable(default) else default   # the registry's, read now
    return value


def resolve_record(spark_or_df: Any, strategy: Any, params: Mapping[str, Any], *,
                   sample_fraction: float | None = None, key_grouping: bool = False,
                   map_output: Callable[[], bool] | None = None, asked: bool = False
                   ) -> strategies.ResolvedStrategy:
    """The strategy of one adapter call, resolved once with the session's settings.

    Every adapter (RDD, DataFrame, ``fit_partitioner``, ``diagnose``) calls this once per
    call, before any Spark job, and passes the record down:
    :func:`sparkbalance.strategies.resolve` with ``spark.sparkbalance.*`` read from the
    session of ``spark_or_df`` (the strategy when ``strategy`` is None; θ and A_max of
    routing-table strategies unless given; the sample fraction, checked here).

    Parameters
    ----------
    spark_or_df : a DataFrame, SparkSession, RDD or SparkContext (None: no session).
    strategy, params : the caller's strategy (a name, None or a fitted function) and its
        parameters.
    sample_fraction : the caller's statistics sample fraction (None: the conf's).
    key_grouping, map_output, asked : see :func:`sparkbalance.strategies.resolve`.

    Examples
    --------
    >>> r = resolve_record(None, "mintable", {"theta": 0.1})
    >>> r.kind, dict(r.params), r.sample_fraction
    ('table', {'theta': 0.1}, None)
    """
    from sparkbalance.routing.base import PartitionFunction
    fraction = None
    if not isinstance(strategy, PartitionFunction):
        fraction = resolve_sample_fraction(spark_or_df, sample_fraction)
    used: dict[str, str] = {}   # short name -> conf key, for the settings the conf supplied
    if strategy is None:
        strategy, key = strategy_for(spark_or_df, "dataframe" if key_grouping else "rdd")
        if key is not None:
            used["strategy"] = key

    def setting(name: str) -> Any:
        if name == "strategy":
            return None       # strategy_for above applied the per-API rule
        value = read(spark_or_df, name)
        if value is not None:
            used[name] = KEYS[name].key
        return value

    try:
        return strategies.resolve(strategy, params, setting=setting, sample_fraction=fraction,
                                  key_grouping=key_grouping, map_output=map_output,
                                  asked=asked)
    except (ValueError, TypeError) as exc:
        named = [k for name, k in used.items() if name == "strategy" or name in str(exc)]
        if not named:
            raise
        raise type(exc)(f"{exc} (from the session's {', '.join(named)})") from None


def strategy_for(spark_or_df: Any, api: str) -> tuple[str | None, str | None]:
    """``(strategy name, conf key it came from)`` the session gives one API, or
    ``(None, None)`` when the API's default applies.

    ``api`` is ``"rdd"`` or ``"dataframe"``. The per-API key wins; else the general
    ``spark.sparkbalance.strategy``, unless its value cannot run on this API (a splitting
    strategy on the DataFrame adapters, which need one partition per key): then the API's
    default, and one log line naming the key.

    Examples
    --------
    >>> strategy_for(None, "dataframe")
    (None, None)
    """
    if api not in APIS:
        raise ValueError(f"api={api!r}; expected one of {', '.join(APIS)}")
    own = read(spark_or_df, f"{api}.strategy")
    if own is not None:
        return own, KEYS[f"{api}.strategy"].key
    general = read(spark_or_df, "strategy")
    if general is None:
        return None, None
    if api == "dataframe" and strategies.get(general).splits_keys:
        if general not in _SKIPPED:
            _SKIPPED.add(general)
            _LOG.warning("%s=%s splits keys: it applies to the RDD adapters; the DataFrame "
                         "adapters use %r (set %s to choose theirs)", CONF_STRATEGY, general,
                         strategies.DEFAULT_STRATEGY, KEYS["dataframe.strategy"].key)
        return None, None
    return general, CONF_STRATEGY


#: General strategies already reported as not applying to the DataFrame adapters.
_SKIPPED: set[str] = set()


def resolve_strategy(spark_or_df: Any, strategy: str | None, params: Mapping[str, Any]
                     ) -> tuple[strategies.Strategy, dict[str, Any]]:
    """``(registry record, parameters)`` of :func:`resolve_record` (the session's θ and
    A_max merged into a routing-table strategy's parameters), for callers that show them.

    Examples
    --------
    >>> spec, params = resolve_strategy(None, "mintable", {"theta": 0.1})
    >>> spec.kind, params
    ('table', {'theta': 0.1})
    """
    record = resolve_record(spark_or_df, strategy, params)
    return record.spec, dict(record.params)


def resolve_sample_fraction(spark_or_df: Any, explicit: float | None) -> float | None:
    """The statistics sample fraction in ``(0, 1)``, or None for exact statistics.

    Examples
    --------
    >>> resolve_sample_fraction(None, 0.25), resolve_sample_fraction(None, 1.0)
    (0.25, None)
    """
    fraction = resolve(spark_or_df, "sample_fraction", explicit)
    if fraction is None:
        return None
    if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real) \
            or not 0.0 < float(fraction) <= 1.0:
        raise ValueError(f"sample_fraction={fraction!r}; expected 0 < fraction <= 1")
    return None if float(fraction) == 1.0 else float(fraction)


def resolve_max_keys(spark_or_df: Any, explicit: Any = FROM_CONF) -> int | None:
    """``max_keys`` for a statistics call: ``explicit`` unless it is :data:`FROM_CONF`, else
    ``spark.sparkbalance.maxKeys`` (``all``: None, every key), else the default.

    Examples
    --------
    >>> resolve_max_keys(None, 50), resolve_max_keys(None, None), resolve_max_keys(None)
    (50, None, 100000)
    """
    if explicit is not FROM_CONF:
        return explicit
    value = resolve(spark_or_df, "max_keys")
    return None if value == 0 else value


def default_partitions(spark_or_df: Any) -> int:
    """``spark.sql.shuffle.partitions`` (Spark's default 200 when unset)."""
    return int(_raw(spark_or_df, "spark.sql.shuffle.partitions") or 200)
