"""Per-task metrics recorded inside the JVM by the bridge's ``TaskRecorder``.

``io.sparkbalance.bridge.TaskRecorder`` (``jvm_bridge/``) is a ``SparkListener`` that
keeps one flat row per finished task, stage attempt and executor in the driver JVM.
:class:`JvmTaskMetricsListener` registers it and reads new rows as one tab-separated
string per call (:mod:`sparkbalance.spark.metrics.records` parses them). It needs the bridge jar
on ``spark.jars`` (:func:`sparkbalance.spark.session.bridge.session_builder_with_bridge`).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from sparkbalance.spark.session.bridge import RECORDER_CLASS, bridge_jar_path
from sparkbalance.spark.session.jvm_loader import bridge_has
from sparkbalance.spark.metrics.recorder import Recorder
from sparkbalance.spark.metrics.records import (
    ExecutorRecord,
    StageRecord,
    TaskRecord,
    parse_executor_rows,
    parse_stage_rows,
    parse_task_rows,
)

__all__ = ["JvmTaskMetricsListener"]

_LOG = logging.getLogger(__name__)


class JvmTaskMetricsListener(Recorder):
    """The records of :class:`~sparkbalance.spark.metrics.py4j_listener.TaskMetricsListener`, kept in the JVM.

    The recorder keeps flat rows in the driver JVM and Python reads a snapshot as one
    tab-separated string, so reading N tasks costs one py4j round trip instead of ~25 N.
    Requires the bridge jar on ``spark.jars`` (see
    :func:`~sparkbalance.spark.session.bridge.bridge_available`); normally obtained through
    :func:`sparkbalance.spark.metrics.listener.open_listener`. Cannot be re-attached after
    :meth:`detach` (its rows were copied into Python and the JVM object released).

    Parameters
    ----------
    spark : SparkSession or SparkContext
    job_group : str, optional
        Record only tasks/stages of jobs run under this job group; None records everything.

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
        if not bridge_has(self._sc, RECORDER_CLASS):  # brought in if it can be
            raise RuntimeError(
                f"{RECORDER_CLASS} is not loadable: build jvm_bridge "
                f"(`bash jvm_bridge/build.sh .venv/bin/python`) or start Spark with "
                f"sparkbalance.configure(builder) (jar={bridge_jar_path()!r})")
        # py4j resolves classes through the context class loader that holds spark.jars.
        self._jrec = self._sc._jvm.io.sparkbalance.bridge.TaskRecorder(job_group)
        self._lock = threading.Lock()
        self._tasks: list[TaskRecord] = []  # parsed rows cached; fetch only new ones
        self._frozen: tuple[list[StageRecord], list[ExecutorRecord]] | None = None

    def _register(self) -> None:
        self._add_to_listener_bus(self._jrec)

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
