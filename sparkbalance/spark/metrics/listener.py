"""Per-task metrics from Spark's listener bus: pick a recorder, read plain records.

The entry point is :func:`open_listener`: it returns the bridge's JVM recorder
(:class:`~sparkbalance.spark.metrics.jvm_recorder.JvmTaskMetricsListener`) when the bridge jar is
on the classpath, else the pure-py4j :class:`TaskMetricsListener`, both implementing
:class:`Recorder` and returning the same frozen :class:`TaskRecord` / :class:`StageRecord`
/ :class:`ExecutorRecord` values. Run the jobs to measure under
:func:`sparkbalance_job_group` and give the recorder that group.

This module is the facade users import from; the parts live in :mod:`.records`,
:mod:`.recorder`, :mod:`.jobs`, :mod:`.py4j_listener`, :mod:`.jvm_recorder` and
:mod:`.bridge`.
"""

from __future__ import annotations

import logging
from typing import Any

from sparkbalance.spark.session.bridge import RECORDER_CLASS
from sparkbalance.spark.session.jvm_loader import bridge_has
from sparkbalance.spark.session.jobs import sparkbalance_job_group
from sparkbalance.spark.metrics.jvm_recorder import JvmTaskMetricsListener
from sparkbalance.spark.metrics.py4j_listener import TaskMetricsListener
from sparkbalance.spark.metrics.recorder import Recorder, dropped_listener_events
from sparkbalance.spark.metrics.records import ExecutorRecord, StageRecord, TaskRecord

__all__ = [
    "open_listener",
    "dropped_listener_events",
    "Recorder",
    "TaskMetricsListener",
    "TaskRecord",
    "StageRecord",
    "ExecutorRecord",
    "sparkbalance_job_group",
]

_LOG = logging.getLogger(__name__)


def open_listener(spark: Any, job_group: str | None = None, *,
                  prefer: str = "auto") -> Recorder:
    """A not-yet-attached recorder: the JVM one when the bridge jar is loaded, else py4j.

    Logs exactly one INFO line saying which recorder was chosen and why.

    Parameters
    ----------
    spark : SparkSession or SparkContext
    job_group : str, optional
        Record only jobs run under this job group (see :func:`sparkbalance_job_group`);
        None records everything.
    prefer : {"auto", "jvm", "py4j"}
        "auto" picks the JVM recorder when loadable; "jvm" raises if it is not.

    Examples
    --------
    >>> with open_listener(spark, "grp") as lst, sparkbalance_job_group(spark, "grp"):  # doctest: +SKIP
    ...     df.groupBy("k").count().collect()
    >>> lst.kind  # doctest: +SKIP
    'jvm'
    """
    if prefer not in ("auto", "jvm", "py4j"):
        raise ValueError(f"prefer={prefer!r}; expected 'auto', 'jvm' or 'py4j'")
    if prefer != "py4j" and bridge_has(spark, RECORDER_CLASS):  # brought in if it can be
        _LOG.info("sparkbalance listener: JVM recorder %s (bridge jar on the classpath)",
                  RECORDER_CLASS)
        return JvmTaskMetricsListener(spark, job_group)
    if prefer == "jvm":
        raise RuntimeError(
            f"JVM recorder {RECORDER_CLASS} is not loadable; build it with "
            f"`bash jvm_bridge/build.sh .venv/bin/python` or create the session with "
            f"sparkbalance.configure(builder)")
    _LOG.info("sparkbalance listener: pure-py4j listener (%s)",
              "requested" if prefer == "py4j" else
              "bridge jar not on the classpath; build jvm_bridge for lower overhead")
    return TaskMetricsListener(spark, job_group)
