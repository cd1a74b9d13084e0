"""The bridge on first use: one entry point that finds the bridge jar's classes in a running
session, or brings the jar in without a restart.

``spark.jars`` only takes effect when the driver JVM starts, and a session built the plain
way (``SparkSession.builder...getOrCreate()``, no :func:`sparkbalance.configure`) has no
bridge. Every feature that wants a bridge class asks :func:`bridge` instead of the class
path; when the running session lacks the jar, :func:`bridge` loads it, once per session:

* **driver**: PySpark's JVM is started by ``spark-submit``, whose context class loader is
  Spark's ``MutableURLClassLoader`` (public ``addURL``), inherited by py4j's threads, the
  scheduler's threads and, as the parent of the executor's loader, by local-mode tasks.
  The jar's URL is added to the outermost such loader of the chain, so every thread that
  resolves classes through it (py4j's ``CurrentThreadClassLoadingStrategy``, Spark's
  ``Utils.classForName``) sees the classes, and local-mode tasks get the same ``Class``
  objects as the driver. When the chain has no such loader, the SQL session's ``ADD JAR``
  is the fallback (it puts its own jar loader on the calling thread only).
* **executors**: ``SparkContext.addJar``; each executor fetches the jar before its next
  task and adds it to its own class loader (Spark's ``Executor.updateDependencies``), on
  ``local``, ``local-cluster`` and cluster masters alike.

Where none of that can run (Spark Connect has no driver JVM to reach; a platform may forbid
adding class paths; ``spark.sparkbalance.bridge=off`` at launch or ``$SPARKBALANCE_BRIDGE=off``,
which also simulate those) :func:`bridge` returns None and the callers run their Python
paths. Each outcome is logged once per session, in one line that says what runs instead
(strategy "auto" plans from a bounded sample of the input, :mod:`sparkbalance.spark.rdd.bounded`)
and how to have the bridge (``sb.configure``). The Balance UI plugin cannot come this way: Spark
starts plugins with the context, so it needs :func:`sparkbalance.configure` on the builder.

Examples
--------
>>> b = bridge(spark)                                      # doctest: +SKIP
>>> b.loaded, b.has("io.sparkbalance.bridge.MapStats")     # doctest: +SKIP
('on demand', True)
"""
from __future__ import annotations

import logging
import os
from typing import Any

from sparkbalance.spark.session.bridge import (
    RECORDER_CLASS,
    bridge_jar_path,
    class_available,
    spark_context,
)
from sparkbalance.spark.session.executor_python import ensure_executor_python
from sparkbalance.spark.session.memo import SessionMemo

__all__ = ["Bridge", "bridge", "bridge_has", "bridge_class", "CONF_BRIDGE", "BRIDGE_SWITCH_ENV",
           "PYTHON_PATHS"]

_LOG = logging.getLogger(__name__)
#: Spark's class loader with a public ``addURL`` (spark-submit's, the executors').
_MUTABLE_LOADER = "org.apache.spark.util.MutableURLClassLoader"
_PREFIX = "io.sparkbalance.bridge."
#: ``off``: never use the bridge in this session, even with the jar at launch (the Python
#: paths run, as on Spark Connect); read once per session, at its first bridge question.
CONF_BRIDGE = "spark.sparkbalance.bridge"
#: The same switch for the process (read at every question: tests and benchmarks flip it).
BRIDGE_SWITCH_ENV = "SPARKBALANCE_BRIDGE"
#: What runs without the bridge, for the one line that says so.
PYTHON_PATHS = ("the Python paths run: strategy 'auto' plans from a bounded sample of the "
                "input instead of the shuffle's own counts, keyed-state migrations select "
                "frames in Python")


class Bridge:
    """Handle to the bridge's classes in one session's JVM.

    Attributes
    ----------
    jar : str or None
        The jar loaded on demand (None when it came with ``spark.jars`` at launch).
    loaded : {"at launch", "on demand"}

    Examples
    --------
    >>> b = bridge(spark)                           # doctest: +SKIP
    >>> b.cls("MapStats").protocol()                # doctest: +SKIP
    2
    """

    def __init__(self, sc: Any, jar: str | None, loaded: str) -> None:
        self.sc = sc
        self.jar = jar
        self.loaded = loaded
        self._has: dict[str, bool] = {}

    def _name(self, name: str) -> str:
        return name if "." in name else _PREFIX + name

    def has(self, name: str) -> bool:
        """True when the class ``name`` (full, or short for a bridge class) loads.

        An older jar may lack a newer class, so each is asked once.
        """
        full = self._name(name)
        if full not in self._has:
            self._has[full] = class_available(self.sc, full)
        return self._has[full]

    def cls(self, name: str) -> Any:
        """The py4j class ``name`` (full, or short for a bridge class): call its statics."""
        from py4j.java_gateway import JavaClass
        return JavaClass(self._name(name), self.sc._gateway._gateway_client)

    def __repr__(self) -> str:
        return f"Bridge(loaded={self.loaded!r}, jar={self.jar!r})"


_MEMO = SessionMemo()


def bridge(spark_or_sc: Any) -> Bridge | None:
    """The bridge of a session: there already, brought in now, or None (Python paths run).

    The one question every JVM feature asks. The first call of a session does the work (at
    most a few py4j calls and ``addJar``) and logs one line when it loads the jar or cannot;
    later calls return the kept answer.

    Parameters
    ----------
    spark_or_sc : SparkSession or SparkContext

    Returns
    -------
    Bridge or None
        None on Spark Connect, without a jar (:func:`~sparkbalance.spark.session.bridge.
        bridge_jar_path`), or when the JVM refuses the jar.

    Examples
    --------
    >>> bridge(spark).loaded                        # doctest: +SKIP
    'on demand'
    >>> bridge(42) is None                          # not a session: nothing to load into
    True
    """
    try:
        sc = spark_context(spark_or_sc)
    except Exception:  # noqa: BLE001 - Spark Connect refuses .sparkContext; a stopped context
        return None    # no driver JVM to reach
    # A bridge feature runs sparkbalance's Python in its tasks too: the executors must
    # import it (the same once-per-session check a balanced operation starts with).
    ensure_executor_python(sc)
    if os.environ.get(BRIDGE_SWITCH_ENV, "").strip().lower() == "off":
        return _OFF.get(sc, lambda: _switched_off(f"${BRIDGE_SWITCH_ENV}=off"))
    return _MEMO.get(sc, lambda: _find_or_load(sc))


_OFF = SessionMemo()


def _switched_off(how: str) -> None:
    _LOG.warning("sparkbalance: the JVM bridge is switched off (%s); %s", how, PYTHON_PATHS)
    return None


def bridge_has(spark_or_sc: Any, name: str) -> bool:
    """True when the session's bridge (brought in if it can be) holds class ``name``.

    Examples
    --------
    >>> bridge_has(spark, "io.sparkbalance.bridge.MapStats")   # doctest: +SKIP
    True
    >>> bridge_has(None, "io.sparkbalance.bridge.MapStats")
    False
    """
    b = bridge(spark_or_sc)
    return b is not None and b.has(name)


def bridge_class(spark_or_sc: Any, name: str) -> Any:
    """The py4j class ``name`` of the session's bridge, brought in if it can be.

    For code that has no Python path to fall back to (asked for the JVM feature by name).

    Raises
    ------
    RuntimeError
        When the class cannot be had; the message says how to have it from launch.

    Examples
    --------
    >>> bridge_class(spark, "io.sparkbalance.bridge.MapStats").protocol()   # doctest: +SKIP
    2
    >>> bridge_class(None, "io.sparkbalance.bridge.MapStats")
    Traceback (most recent call last):
    ...
    RuntimeError: io.sparkbalance.bridge.MapStats is not loadable in this session (jar=...); start it with sparkbalance.configure(SparkSession.builder)
    """
    b = bridge(spark_or_sc)
    if b is None or not b.has(name):
        jar = bridge_jar_path() if b is None else b.jar
        raise RuntimeError(f"{name} is not loadable in this session (jar={jar!r}); start it "
                           f"with sparkbalance.configure(SparkSession.builder)")
    return b.cls(name)


def _find_or_load(sc: Any) -> Bridge | None:
    if _launch_switch(sc) == "off":
        return _switched_off(f"{CONF_BRIDGE}=off")
    if class_available(sc, RECORDER_CLASS):
        return Bridge(sc, None, "at launch")
    jar = bridge_jar_path()
    if jar is None:
        _LOG.warning("sparkbalance: no bridge jar in this installation; %s. Install the "
                     "wheel (it carries the jar; a checkout: `bash jvm_bridge/build.sh "
                     "PYTHON`), then sb.configure(SparkSession.builder) or first use brings "
                     "it in", PYTHON_PATHS)
        return None
    try:
        how = _load(sc, jar)
    except Exception as exc:  # noqa: BLE001 - py4j errors, a security manager, an old Spark
        how, why = None, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    else:
        why = "its classes do not load after adding it"
    if how is None or not class_available(sc, RECORDER_CLASS):
        _LOG.warning("sparkbalance: could not load the bridge jar %s into the running session "
                     "(%s); %s. Build the session with sb.configure(SparkSession.builder) "
                     "(sparkbalance.configure) to have it from launch", jar, why, PYTHON_PATHS)
        return None
    _LOG.info("sparkbalance: loaded the bridge jar %s into the running session (driver: %s; "
              "executors: SparkContext.addJar); sparkbalance.configure(builder) also adds "
              "the Balance UI tab", jar, how)
    return Bridge(sc, jar, "on demand")


def _launch_switch(sc: Any) -> str:
    """``spark.sparkbalance.bridge`` as the context was launched with it ("" when unset)."""
    conf = getattr(sc, "_conf", None)
    try:
        return str(conf.get(CONF_BRIDGE, "") or "").strip().lower() if conf is not None else ""
    except Exception:  # noqa: BLE001 - a conf that cannot be read means "unset"
        return ""


def _load(sc: Any, jar: str) -> str | None:
    """Add ``jar`` to the driver's class path and to the executors'; how the driver got it.

    Driver first: ``addJar`` makes local-mode executors fetch the jar into their own loader,
    a child of the driver's, which then finds the driver's copy first (parent first).
    """
    jvm = sc._jvm
    url = jvm.java.io.File(jar).getAbsoluteFile().toURI().toURL()
    how = None
    loader = _outer_mutable_loader(jvm)
    if loader is not None:
        loader.addURL(url)
        how = f"{loader.getClass().getSimpleName()}.addURL"
    else:
        # The SQL session's ADD JAR: its jar loader becomes this thread's context loader
        # (and it calls addJar itself).
        from pyspark.sql import SparkSession
        session = SparkSession.getActiveSession() or SparkSession(sc)
        session._jsparkSession.sessionState().resourceLoader().addJar(jar)
        return "the SQL session's ADD JAR (this thread only)"
    sc._jsc.addJar(jar)
    return how


def _outer_mutable_loader(jvm: Any) -> Any:
    """The outermost ``MutableURLClassLoader`` above the calling thread's context loader
    (the one every thread shares), or None when the chain has none."""
    mutable = jvm.java.lang.Class.forName(_MUTABLE_LOADER)
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    found = None
    while loader is not None:
        if mutable.isInstance(loader):
            found = loader
        loader = loader.getParent()
    return found
