"""``sb.enable`` / ``sb.disable``: put the hooks of :mod:`.hooks` on Spark's classes and take
them off again, exactly.

What is patched (classic PySpark 3.5 and 4.x; the classes are looked up where each line
keeps them):

* the classic ``DataFrame`` (``pyspark.sql.classic.dataframe.DataFrame`` on 4.x,
  ``pyspark.sql.DataFrame`` on 3.5): ``repartition``, ``groupBy``, ``groupby``, and
  ``withColumn``, ``withColumns`` for window functions (:mod:`.windows`);
* ``pyspark.sql.group.GroupedData``: ``agg``, ``count``, ``sum``, ``avg``, ``mean``, ``min``,
  ``max``, ``applyInPandas`` and ``applyInArrow`` (where PySpark has it);
* ``pyspark.RDD``: ``partitionBy``, ``reduceByKey``, ``aggregateByKey``, ``groupByKey``.

Spark Connect's classes are left alone: a Connect DataFrame has no RDD to sample and runs
plain (``sb.group_by`` and friends still work there when called by name).

For every patched name the class's own attribute (or its absence, when the method is
inherited, e.g. ``applyInPandas`` from PySpark's mixin) is saved, and :func:`disable` puts
exactly that back. Both take one lock; :func:`enable` twice patches once.

Examples
--------
>>> import sparkbalance as sb
>>> sb.enable(spark)            # doctest: +SKIP
>>> df.groupBy("user").applyInPandas(fit, schema)   # doctest: +SKIP
>>> sb.disable()                # doctest: +SKIP
"""
from __future__ import annotations

import threading
import weakref
from typing import Any, Callable

from sparkbalance.spark.enable import hooks, windows
from sparkbalance.spark.session import conf

__all__ = ["enable", "disable", "is_installed", "is_enabled", "patched_targets"]

_LOCK = threading.RLock()
#: (class, name) -> (the class had its own attribute, that attribute), while installed.
_SAVED: dict[tuple[type, str], tuple[bool, Any]] = {}
#: Sessions enable() switched on, to switch off again in disable().
_SESSIONS: "weakref.WeakSet[Any]" = weakref.WeakSet()
_MARK = "_sparkbalance_enable"

_GROUPED = ("agg", "count", "sum", "avg", "mean", "min", "max", "applyInPandas",
            "applyInArrow")
_RDD = ("partitionBy", "reduceByKey", "aggregateByKey", "groupByKey")
_DATAFRAME = ("repartition", "groupBy", "groupby")
_WINDOWS = ("withColumn", "withColumns")


def _dataframe_class() -> type:
    try:
        from pyspark.sql.classic.dataframe import DataFrame   # PySpark 4.x
    except ImportError:
        from pyspark.sql.dataframe import DataFrame           # PySpark 3.5
    return DataFrame


def patched_targets() -> list[tuple[type, tuple[str, ...], Callable]]:
    """``(class, method names, hook factory)`` of everything :func:`enable` patches."""
    from pyspark import RDD
    from pyspark.sql.group import GroupedData
    return [(_dataframe_class(), _DATAFRAME, hooks.dataframe_hooks),
            (_dataframe_class(), _WINDOWS, windows.window_hooks),
            (GroupedData, _GROUPED, hooks.grouped_hooks),
            (RDD, _RDD, hooks.rdd_hooks)]


def _install() -> None:
    for cls, names, factory in patched_targets():
        present = [n for n in names if callable(getattr(cls, n, None))]
        originals = {n: getattr(cls, n) for n in present}
        if any(getattr(f, _MARK, False) for f in originals.values()):
            raise RuntimeError(f"{cls.__name__} already carries sparkbalance hooks that this "
                               "process did not record; refusing to stack them")
        for name, hook in factory(originals).items():
            if name not in originals:
                continue
            setattr(hook, _MARK, True)
            _SAVED[(cls, name)] = (name in cls.__dict__, cls.__dict__.get(name))
            setattr(cls, name, hook)


def enable(spark: Any = None) -> None:
    """Route the DataFrame and RDD calls users already write through sparkbalance when skew
    makes it pay (the session-wide mode; ``docs/enable.md``).

    Installs the hooks (once; idempotent, thread-safe) and, given a session, sets its
    ``spark.sparkbalance.enabled`` to ``true``. Without a session the hooks follow that
    key in each call's session (``--conf spark.sparkbalance.enabled=true`` for a whole
    application); ``spark.conf.set("spark.sparkbalance.enabled", "false")`` turns a session
    back to plain Spark at run time. Results always equal plain Spark's.

    Examples
    --------
    >>> import sparkbalance as sb
    >>> sb.enable(spark)                                          # doctest: +SKIP
    >>> df.repartition(16, "user").mapInPandas(score, schema)     # doctest: +SKIP
    """
    with _LOCK:
        if not _SAVED:
            try:
                _install()
            except BaseException:
                _uninstall()
                raise
        if spark is not None:
            spark.conf.set(conf.CONF_ENABLED, "true")
            _SESSIONS.add(spark)


def _uninstall() -> None:
    for (cls, name), (own, value) in list(_SAVED.items()):
        if own:
            setattr(cls, name, value)
        elif name in cls.__dict__:
            delattr(cls, name)
    _SAVED.clear()


def disable(spark: Any = None) -> None:
    """Take every hook off (Spark's classes exactly as before :func:`enable`) and switch the
    sessions :func:`enable` switched on (and ``spark``, if given) back off.

    Examples
    --------
    >>> import sparkbalance as sb
    >>> sb.disable()      # safe when not enabled
    """
    with _LOCK:
        _uninstall()
        sessions = list(_SESSIONS) + ([spark] if spark is not None else [])
        _SESSIONS.clear()
    for s in sessions:
        try:
            s.conf.unset(conf.CONF_ENABLED)
        except Exception:  # pragma: no cover - a stopped session has nothing to switch off
            pass


def is_installed() -> bool:
    """Whether the hooks are on Spark's classes."""
    return bool(_SAVED)


def is_enabled(spark: Any) -> bool:
    """Whether calls of ``spark`` (a session, DataFrame or RDD) are considered for balancing:
    the hooks installed and its ``spark.sparkbalance.enabled`` true."""
    return is_installed() and bool(conf.read(spark, "enabled"))
