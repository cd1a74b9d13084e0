"""The JVM bridge: find ``jvm_bridge``'s jar, put it on a session, ask what the JVM can load.

The jar (``sparkbalance-bridge.jar``, built by ``bash jvm_bridge/build.sh .venv/bin/python``)
is on the class path from launch when ``spark.jars`` names it (:func:`configure` on the
builder of the first session: there is one Spark JVM per Python process). A session started
without it gets it on first use: code that uses a bridge class asks
:func:`sparkbalance.spark.session.jvm_loader.bridge`, which brings the jar into the running
driver and executors when it can, and falls back to Python when not (the zero-pass
statistics in :mod:`sparkbalance.spark.rdd.mapstats`, the task recorder in
:mod:`sparkbalance.spark.metrics.jvm_recorder`, the keyed state's frame selection in
:mod:`sparkbalance.state.frames.rdds`). :func:`class_available` only asks, loads nothing.

:func:`configure` is the one way to start a session with everything sparkbalance has for the
JVM: the jar on ``spark.jars`` and, when the jar holds it, the Balance plugin on
``spark.plugins``, merged with what the user set.

This module also holds :func:`spark_context`, the one "SparkSession or SparkContext"
normaliser of the Spark adapters.
"""

from __future__ import annotations

import logging
import os
import zipfile
from pathlib import Path
from typing import Any

__all__ = [
    "BRIDGE_JAR_ENV",
    "BRIDGE_JAR_NAME",
    "RECORDER_CLASS",
    "STATE_FRAMES_CLASS",
    "PLUGIN_CLASS",
    "spark_context",
    "bridge_jar",
    "bridge_jar_path",
    "jar_has_class",
    "configure",
    "class_available",
    "bridge_available",
    "session_builder_with_bridge",
]

_LOG = logging.getLogger(__name__)

#: Environment variable naming the jar to use (e.g. a copy installed on a cluster).
BRIDGE_JAR_ENV = "SPARKBALANCE_BRIDGE_JAR"
#: File name of the jar, in ``jvm_bridge/build/`` and in the package's ``jars/``.
BRIDGE_JAR_NAME = "sparkbalance-bridge.jar"
#: The bridge's task recorder (jvm_bridge/src/main/java/io/sparkbalance/bridge/TaskRecorder.java).
RECORDER_CLASS = "io.sparkbalance.bridge.TaskRecorder"
#: The bridge's frame selection for the keyed state (.../bridge/StateFrames.java).
STATE_FRAMES_CLASS = "io.sparkbalance.bridge.StateFrames"
#: The bridge's Spark plugin (Balance tab and metrics), put on ``spark.plugins`` by
#: :func:`configure` when the jar holds it.
PLUGIN_CLASS = "io.sparkbalance.bridge.BalancePlugin"

_PACKAGE_DIR = Path(__file__).resolve().parents[2]  # .../sparkbalance


def spark_context(spark_or_sc: Any) -> Any:
    """The active (Python) ``SparkContext`` of a ``SparkSession`` or of itself.

    Parameters
    ----------
    spark_or_sc : SparkSession or SparkContext

    Raises
    ------
    ValueError
        When the argument has no live JVM context (a stopped context, or not Spark at all).

    Examples
    --------
    >>> spark_context(spark) is spark.sparkContext  # doctest: +SKIP
    True
    >>> spark_context(42)
    Traceback (most recent call last):
    ...
    ValueError: spark=42; expected an active SparkSession or SparkContext
    """
    sc = getattr(spark_or_sc, "sparkContext", spark_or_sc)
    if getattr(sc, "_jsc", None) is None:
        raise ValueError(f"spark={spark_or_sc!r}; expected an active SparkSession or SparkContext")
    return sc


def bridge_jar_path() -> str | None:
    """Absolute path of the bridge jar, or None when there is none.

    Looked up in this order: ``$SPARKBALANCE_BRIDGE_JAR``; ``<repo>/jvm_bridge/build/``
    next to the package (source checkout or editable install: the jar ``build.sh`` just
    built); ``sparkbalance/jars/`` inside the package (a jar shipped with a wheel).

    Examples
    --------
    >>> p = bridge_jar_path()
    >>> p is None or p.endswith("sparkbalance-bridge.jar")
    True
    """
    env = os.environ.get(BRIDGE_JAR_ENV)
    candidates = [Path(env)] if env else []
    candidates.append(_PACKAGE_DIR.parent / "jvm_bridge" / "build" / BRIDGE_JAR_NAME)
    candidates.append(_PACKAGE_DIR / "jars" / BRIDGE_JAR_NAME)
    for c in candidates:
        if c.is_file():
            return str(c)
    return None


def bridge_jar() -> str | None:
    """Path of the bridge jar this installation uses, or None when it has none.

    A wheel ships the jar as package data (``sparkbalance/jars/sparkbalance-bridge.jar``);
    a source checkout uses ``jvm_bridge/build/`` once ``build.sh`` ran; the environment
    variable ``$SPARKBALANCE_BRIDGE_JAR`` overrides both (:func:`bridge_jar_path` gives the
    order).

    Examples
    --------
    >>> import sparkbalance
    >>> jar = sparkbalance.bridge_jar()
    >>> jar is None or jar.endswith("sparkbalance-bridge.jar")
    True
    """
    return bridge_jar_path()


def jar_has_class(jar: str | os.PathLike[str] | None, name: str) -> bool:
    """True when the jar file ``jar`` holds the class ``name`` (read from its index, no JVM).

    Examples
    --------
    >>> jar_has_class(None, RECORDER_CLASS)
    False
    """
    if jar is None:
        return False
    try:
        with zipfile.ZipFile(jar) as z:
            z.getinfo(name.replace(".", "/") + ".class")
        return True
    except (KeyError, OSError, zipfile.BadZipFile):
        return False


def class_available(spark_or_sc: Any, name: str) -> bool:
    """True when the JVM of ``spark_or_sc`` can load the class ``name``.

    Uses ``org.apache.spark.util.Utils.classForName``, which looks through the context
    class loader that holds ``spark.jars`` (py4j's own lookup does too, but answers a
    missing class with a ``JavaPackage`` instead of failing). The class is not initialised.

    Examples
    --------
    >>> class_available(spark, "org.apache.spark.SparkContext")  # doctest: +SKIP
    True
    >>> class_available(spark, "io.sparkbalance.bridge.NoSuchClass")  # doctest: +SKIP
    False
    """
    sc = spark_context(spark_or_sc)
    try:
        sc._jvm.org.apache.spark.util.Utils.classForName(name, False, False)
        return True
    except Exception:  # noqa: BLE001 - py4j raises a Py4JJavaError (ClassNotFoundException)
        return False


def bridge_available(spark: Any) -> bool:
    """True when the bridge jar is loaded in the JVM of ``spark`` (its recorder class loads).

    Examples
    --------
    >>> bridge_available(spark)  # doctest: +SKIP
    True
    """
    return class_available(spark, RECORDER_CLASS)


def session_builder_with_bridge(builder: Any) -> Any:
    """Add the bridge jar to a ``SparkSession.Builder``'s ``spark.jars``, keeping the user's.

    Has an effect only if the builder then starts the JVM (the first session of the
    process). When there is no jar (:func:`bridge_jar_path` is None), logs one warning and
    returns the builder unchanged: the Python fallbacks are then used.

    Examples
    --------
    >>> from pyspark.sql import SparkSession  # doctest: +SKIP
    >>> b = SparkSession.builder.master("local[2]").config("spark.jars", "/opt/my.jar")  # doctest: +SKIP
    >>> spark = session_builder_with_bridge(b).getOrCreate()  # doctest: +SKIP
    >>> spark.conf.get("spark.jars")  # doctest: +SKIP
    '/opt/my.jar,/.../sparkbalance-bridge.jar'
    """
    jar = bridge_jar_path()
    if jar is None:
        _LOG.warning("sparkbalance bridge jar not found (install the wheel, or set $%s; "
                     "docs/troubleshooting.md, 'The jar is missing'), so sb.configure(builder) "
                     "cannot add it; the Python fallbacks will be used", BRIDGE_JAR_ENV)
        return builder
    options = getattr(builder, "_options", {})
    existing = [j for j in str(options.get("spark.jars", "")).split(",") if j]
    if jar not in existing:
        existing.append(jar)
    return builder.config("spark.jars", ",".join(existing))


def _csv_union(*lists: str | None) -> str:
    """Comma lists joined in order, each item once (``spark.jars``, ``spark.plugins``)."""
    out: list[str] = []
    for text in lists:
        for item in str(text or "").split(","):
            item = item.strip()
            if item and item not in out:
                out.append(item)
    return ",".join(out)


def _launch_default(key: str) -> str | None:
    """``key`` as the running driver JVM sees it (``spark-submit --conf``), if one runs.

    A builder's ``config(key, value)`` replaces the launch value; reading it first keeps
    ``--jars``/``--conf spark.plugins=`` of ``spark-submit`` in the merged list. Under
    ``spark-submit`` the JVM is already up (``$PYSPARK_GATEWAY_PORT``) and is connected to;
    otherwise no JVM is started here (the builder's own settings must reach its launch).
    """
    try:
        from pyspark import SparkConf, SparkContext
    except ImportError:  # pragma: no cover - configure() is called with a pyspark builder
        return None
    if SparkContext._gateway is None:
        if not os.environ.get("PYSPARK_GATEWAY_PORT"):
            return None  # no JVM yet: nothing was set at launch
        SparkContext._ensure_initialized()  # connects to spark-submit's JVM, starts none
    return SparkConf().get(key, None)


def configure(builder: Any) -> Any:
    """Put sparkbalance's JVM side on a ``SparkSession.Builder``; returns the builder.

    Adds the bridge jar (:func:`bridge_jar`) to ``spark.jars`` and, when the jar holds it,
    :data:`PLUGIN_CLASS` to ``spark.plugins``, keeping the values the builder or
    ``spark-submit`` already set (comma lists, each item once). Takes effect when the builder
    starts the driver JVM (the first session of the process). Without a jar it logs one
    warning and returns the builder unchanged: the Python fallbacks are then used.

    Parameters
    ----------
    builder : pyspark.sql.SparkSession.Builder

    Returns
    -------
    The same builder, configured.

    Examples
    --------
    >>> from pyspark.sql import SparkSession                                 # doctest: +SKIP
    >>> import sparkbalance
    >>> b = SparkSession.builder.master("local[2]").config("spark.jars", "/opt/a.jar")  # doctest: +SKIP
    >>> spark = sparkbalance.configure(b).getOrCreate()                      # doctest: +SKIP
    >>> spark.conf.get("spark.jars")                                         # doctest: +SKIP
    '/opt/a.jar,/.../sparkbalance/jars/sparkbalance-bridge.jar'
    """
    jar = bridge_jar()
    if jar is None and BRIDGE_JAR_NAME in str(_launch_default("spark.jars") or ""):
        # spark-submit --jars gave it (package from a --py-files zip, which holds no jar)
        return builder
    if jar is None:
        _LOG.warning("sparkbalance bridge jar not found (install the wheel, or set $%s; "
                     "docs/troubleshooting.md, 'The jar is missing'); the Python fallbacks "
                     "will be used", BRIDGE_JAR_ENV)
        return builder
    options = getattr(builder, "_options", {})
    items = [("spark.jars", jar)]
    if jar_has_class(jar, PLUGIN_CLASS):
        items.append(("spark.plugins", PLUGIN_CLASS))
    for key, item in items:
        merged = _csv_union(options.get(key), _launch_default(key), item)
        builder = builder.config(key, merged)
    return builder
