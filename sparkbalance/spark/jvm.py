"""The JVM side of sparkbalance: locate and load ``jvm_bridge``'s jar, wrap its recorder.

The jar (``jvm_bridge/build/sparkbalance-bridge.jar``, built by
``bash jvm_bridge/build.sh .venv/bin/python``) must be on ``spark.jars`` before the
driver JVM starts: one Spark JVM per Python process, so set it on the first session
(:func:`session_builder_with_bridge`). :class:`JvmTaskMetricsListener` then records
in the JVM (``io.sparkbalance.bridge.TaskRecorder``) and reads a snapshot as one
tab-separated string, so reading N tasks costs one py4j round trip instead of ~25 N.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

from sparkbalance.spark.listener import (
    ExecutorRecord,
    StageRecord,
    TaskRecord,
    _RecorderBase,
    _add_listener,
    _spark_context,
)

__all__ = [
    "RECORDER_CLASS",
    "BRIDGE_JAR_ENV",
    "bridge_jar_path",
    "session_builder_with_bridge",
    "bridge_available",
    "JvmTaskMetricsListener",
]

_LOG = logging.getLogger(__name__)

#: Fully-qualified name of the recorder in jvm_bridge/src/main/java.
RECORDER_CLASS = "io.sparkbalance.bridge.TaskRecorder"
#: Environment variable overriding the jar location (e.g. an installed copy).
BRIDGE_JAR_ENV = "SPARKBALANCE_BRIDGE_JAR"
_JAR_NAME = "sparkbalance-bridge.jar"
_NULL = "\\N"  # TaskRecorder.NULL


def bridge_jar_path() -> str | None:
    """Absolute path of the built bridge jar, or None when it has not been built.

    Looks at ``$SPARKBALANCE_BRIDGE_JAR`` first, then ``<repo>/jvm_bridge/build/``
    next to the package (editable install / source checkout).

    Examples
    --------
    >>> p = bridge_jar_path()
    >>> p is None or p.endswith("sparkbalance-bridge.jar")
    True
    """
    env = os.environ.get(BRIDGE_JAR_ENV)
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[2] / "jvm_bridge" / "build" / _JAR_NAME)
    for c in candidates:
        if c.is_file():
            return str(c)
    return None


def session_builder_with_bridge(builder: Any) -> Any:
    """Add the bridge jar to a ``SparkSession.Builder``'s ``spark.jars`` (kept if set).

    Has an effect only if the builder then starts the JVM (the first session of the
    process). When the jar is not built, logs one warning and returns the builder
    unchanged (the py4j listener is the fallback).

    Examples
    --------
    >>> from pyspark.sql import SparkSession  # doctest: +SKIP
    >>> spark = session_builder_with_bridge(SparkSession.builder.master("local[2]")).getOrCreate()  # doctest: +SKIP
    """
    jar = bridge_jar_path()
    if jar is None:
        _LOG.warning("sparkbalance bridge jar not built (run `bash jvm_bridge/build.sh "
                     ".venv/bin/python`); the pure-py4j listener will be used")
        return builder
    options = getattr(builder, "_options", {})
    existing = [j for j in str(options.get("spark.jars", "")).split(",") if j]
    if jar not in existing:
        existing.append(jar)
    return builder.config("spark.jars", ",".join(existing))


def bridge_available(spark: Any) -> bool:
    """True when the JVM of ``spark`` can load :data:`RECORDER_CLASS`.

    Uses ``Utils.classForName``, which looks through the context class loader that
    holds ``spark.jars`` (py4j's own lookup does too, but answers a missing class with
    a ``JavaPackage`` instead of failing).
    """
    sc = _spark_context(spark)
    try:
        sc._jvm.org.apache.spark.util.Utils.classForName(RECORDER_CLASS, False, False)
        return True
    except Exception:
        return False


def _unesc(s: str) -> str | None:
    if s == _NULL:
        return None
    if "\\" not in s:
        return s
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            out.append({"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}.get(s[i + 1], s[i + 1]))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _opt_int(s: str) -> int | None:
    return None if s == _NULL else int(s)


def parse_task_rows(tsv: str) -> list[TaskRecord]:
    """Parse ``TaskRecorder.tasksSince`` output (column order = TaskRecord fields)."""
    out = []
    for line in tsv.splitlines():
        f = line.split("\t")
        out.append(TaskRecord(
            int(f[0]), int(f[1]), int(f[2]), int(f[3]), int(f[4]),
            _unesc(f[5]) or "", _unesc(f[6]) or "",
            *(int(x) for x in f[7:18]),
            f[18] == "1", f[19] == "1", _unesc(f[20])))
    return out


def parse_stage_rows(tsv: str) -> list[StageRecord]:
    """Parse ``TaskRecorder.stagesTsv`` output."""
    out = []
    for line in tsv.splitlines():
        f = line.split("\t")
        out.append(StageRecord(int(f[0]), int(f[1]), _unesc(f[2]) or "", int(f[3]),
                               _opt_int(f[4]), _opt_int(f[5]), f[6] == "1", _unesc(f[7])))
    return out


def parse_executor_rows(tsv: str) -> list[ExecutorRecord]:
    """Parse ``TaskRecorder.executorsTsv`` output."""
    out = []
    for line in tsv.splitlines():
        f = line.split("\t")
        out.append(ExecutorRecord(_unesc(f[0]) or "", _unesc(f[1]) or "", int(f[2]), int(f[3]),
                                  _opt_int(f[4]), _unesc(f[5])))
    return out


class JvmTaskMetricsListener(_RecorderBase):
    """Same records as :class:`~sparkbalance.spark.listener.TaskMetricsListener`, kept in the JVM.

    Requires the bridge jar on ``spark.jars`` (see :func:`bridge_available`); normally
    obtained through :func:`sparkbalance.spark.listener.open_listener`.

    Examples
    --------
    >>> with JvmTaskMetricsListener(spark) as lst:  # doctest: +SKIP
    ...     spark.range(0, 100, 1, 4).count()
    >>> len(lst.tasks()) >= 4  # doctest: +SKIP
    True
    """

    kind = "jvm"

    def __init__(self, spark: Any, job_group: str | None = None) -> None:
        super().__init__(spark, job_group)
        if not bridge_available(self._sc):
            raise RuntimeError(
                f"{RECORDER_CLASS} is not loadable: build jvm_bridge "
                f"(`bash jvm_bridge/build.sh .venv/bin/python`) and start Spark with "
                f"session_builder_with_bridge(builder) (jar={bridge_jar_path()!r})")
        # py4j resolves classes through the context class loader that holds spark.jars.
        self._jrec = self._sc._jvm.io.sparkbalance.bridge.TaskRecorder(job_group)
        self._lock = threading.Lock()
        self._tasks: list[TaskRecord] = []  # parsed rows cached; fetch only new ones
        self._frozen: tuple[list[StageRecord], list[ExecutorRecord]] | None = None

    def _register(self) -> None:
        self._queue = _add_listener(self._sc, self._jrec)

    def _unregister(self) -> None:
        self._sc._jsc.sc().removeSparkListener(self._jrec)

    def _raw_tasks(self) -> list[TaskRecord]:
        with self._lock:
            if self._frozen is None:
                tsv = self._jrec.tasksSince(len(self._tasks))
                if tsv:
                    self._tasks.extend(parse_task_rows(tsv))
            return list(self._tasks)

    def _raw_stages(self) -> list[StageRecord]:
        if self._frozen is not None:
            return list(self._frozen[0])
        return parse_stage_rows(self._jrec.stagesTsv())

    def _raw_executors(self) -> list[ExecutorRecord]:
        if self._frozen is not None:
            return list(self._frozen[1])
        return parse_executor_rows(self._jrec.executorsTsv())

    def _clear(self) -> None:
        with self._lock:
            if self._frozen is None:
                self._jrec.clear()
            else:
                self._frozen = ([], [])
            self._tasks = []

    def _freeze(self) -> None:
        """After detach: one last read, then serve from Python (the JVM may go away)."""
        try:
            tasks, stages, execs = self._raw_tasks(), self._raw_stages(), self._raw_executors()
        except Exception as exc:  # gateway already shut down: keep what was read
            _LOG.debug("could not read the JVM recorder after detach: %s", exc)
            tasks, stages, execs = list(self._tasks), [], []
        with self._lock:
            self._tasks = tasks
            self._frozen = (stages, execs)
            self._jrec = None

    def attach(self) -> None:
        if self._frozen is not None:
            raise RuntimeError("a JvmTaskMetricsListener cannot be re-attached after detach; "
                               "open a new one")
        super().attach()
