"""The ``spark.sparkbalance.*`` configuration keys: names, defaults, parsing and resolution.

One small table (:data:`KEYS`) maps a short name to its Spark conf key and default; every
adapter (DataFrame, RDD, keyed state) resolves a setting the same way:

    explicit argument  >  the session's conf key  >  the default of the table

* ``strategy``: ``spark.sparkbalance.strategy``, default
  :data:`sparkbalance.strategies.DEFAULT_STRATEGY`;
* ``theta``: ``spark.sparkbalance.theta``, unset: the planner's θ_max;
* ``max_table``: ``spark.sparkbalance.maxTable``, unset: the planner's A_max;
* ``sample_fraction``: ``spark.sparkbalance.sampleFraction``, unset: exact statistics.

``theta`` and ``max_table`` apply only to strategies of kind ``"table"`` (Fang et al.'s
routing-table planners); :func:`resolve_strategy` adds them to those strategies' parameters
and refuses unknown parameters (``TypeError``) before any Spark job runs.

Example
-------
>>> resolve(None, "strategy", "hash")      # explicit wins, no session needed
'hash'
>>> resolve(None, "sample_fraction", None) is None
True
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from .. import strategies

__all__ = ["ConfKey", "KEYS", "CONF_STRATEGY", "CONF_THETA", "CONF_MAX_TABLE",
           "CONF_SAMPLE_FRACTION", "read", "resolve", "resolve_strategy",
           "resolve_sample_fraction", "default_partitions"]


def _number(value: str) -> float:
    return float(value)


def _count(value: str) -> int:
    # "3000" and "3e3" both mean 3000 entries
    return int(float(value))


@dataclass(frozen=True)
class ConfKey:
    """One ``spark.sparkbalance.*`` setting: its conf key, default and parser of the text."""

    key: str
    default: Any
    parse: Callable[[str], Any]
    doc: str


KEYS: Mapping[str, ConfKey] = {
    "strategy": ConfKey("spark.sparkbalance.strategy", strategies.DEFAULT_STRATEGY, str,
                        "strategy when the caller names none"),
    "theta": ConfKey("spark.sparkbalance.theta", None, _number,
                     "θ_max of the routing-table planners (Fang et al.)"),
    "max_table": ConfKey("spark.sparkbalance.maxTable", None, _count,
                         "A_max, the routing-table size bound (Fang et al.)"),
    "sample_fraction": ConfKey("spark.sparkbalance.sampleFraction", None, _number,
                               "statistics on a Bernoulli sample of this fraction"),
}
CONF_STRATEGY: str = KEYS["strategy"].key
CONF_THETA: str = KEYS["theta"].key
CONF_MAX_TABLE: str = KEYS["max_table"].key
CONF_SAMPLE_FRACTION: str = KEYS["sample_fraction"].key
#: Strategy parameters a table-kind strategy takes from the conf (parameter -> KEYS name).
_TABLE_PARAMS = ("theta", "max_table")


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

    Example
    -------
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
    except ValueError:
        raise ValueError(f"{entry.key}={text!r}; expected a number") from None


def resolve(spark_or_df: Any, name: str, explicit: Any = None) -> Any:
    """``explicit`` if given, else the conf value of ``name``, else its default.

    Example
    -------
    >>> resolve(None, "strategy", None)     # no session: the registry default
    'auto'
    """
    if explicit is not None:
        return explicit
    value = read(spark_or_df, name)
    return _entry(name).default if value is None else value


def resolve_strategy(spark_or_df: Any, strategy: str | None, params: Mapping[str, Any]
                     ) -> tuple[strategies.Strategy, dict[str, Any]]:
    """The strategy record and its parameters, conf included, checked before any job.

    Table-kind strategies take ``theta`` / ``max_table`` from the conf unless given;
    unknown parameters raise ``TypeError`` (:func:`sparkbalance.strategies.check_params`),
    unknown names ``ValueError``.

    Example
    -------
    >>> spec, params = resolve_strategy(None, "mintable", {"theta": 0.1})
    >>> spec.kind, params
    ('table', {'theta': 0.1})
    """
    spec = strategies.get(resolve(spark_or_df, "strategy", strategy))
    params = dict(params)
    if spec.kind == "table":
        for name in _TABLE_PARAMS:
            if name not in params:
                value = read(spark_or_df, name)
                if value is not None:
                    params[name] = value
    strategies.check_params(spec.name, params)
    return spec, params


def resolve_sample_fraction(spark_or_df: Any, explicit: float | None) -> float | None:
    """The statistics sample fraction in ``(0, 1)``, or None for exact statistics.

    Example
    -------
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


def default_partitions(spark_or_df: Any) -> int:
    """``spark.sql.shuffle.partitions`` (Spark's default 200 when unset)."""
    return int(_raw(spark_or_df, "spark.sql.shuffle.partitions") or 200)
