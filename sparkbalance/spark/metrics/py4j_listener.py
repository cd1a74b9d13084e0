"""Per-task metrics through a pure-py4j ``SparkListener`` (no jar needed).

:class:`TaskMetricsListener` registers a Python object implementing
``org.apache.spark.scheduler.SparkListenerInterface`` through the py4j callback server;
it is the fallback of :func:`sparkbalance.spark.metrics.listener.open_listener` when the bridge
jar is not loaded.

Why py4j costs: every accessor call on a Java object is a socket round trip (~80 us
measured on the dev box), so reading a finished task by its getters takes ~25 round
trips; the listener instead asks the JVM for the event's event-log JSON
(``JsonProtocol``, one round trip) and falls back to getters when that internal API is
missing. Every event still costs one JVM->Python callback. Measured
(integration/benchmarks/bench_listener.py, 20,000 tasks of a JVM-only job on a loaded
2-core box): the JVM recorder adds no measurable time and drops nothing; this listener
adds ~45 % and can fall behind (raise
``spark.scheduler.listenerbus.eventqueue.sparkbalance.capacity`` or build the jar).

py4j logs every callback it serves ("Received command c on object id p0") at INFO, one
line per listener event; :func:`quiet_py4j_callbacks` demotes those lines to DEBUG.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, Callable

from sparkbalance.spark.session.jobs import JOB_GROUP_PROPERTY
from sparkbalance.spark.metrics.recorder import Recorder
from sparkbalance.spark.metrics.records import ExecutorRecord, StageRecord, TaskRecord, task_record_from_event_json

__all__ = [
    "TaskMetricsListener",
    "Py4jSparkListener",
    "SPARK_LISTENER_INTERFACE_METHODS",
    "quiet_py4j_callbacks",
]

_LOG = logging.getLogger(__name__)

#: Every abstract method of ``SparkListenerInterface`` in Spark 4.3.0 (checked with
#: ``javap`` on spark-core_2.13-4.3.0.jar: 35 methods). py4j logs an error for each
#: event whose method the Python object lacks, so all of them are implemented.
SPARK_LISTENER_INTERFACE_METHODS = (
    "onStageCompleted", "onStageSubmitted", "onTaskStart", "onTaskGettingResult",
    "onTaskEnd", "onJobStart", "onJobEnd", "onEnvironmentUpdate",
    "onBlockManagerAdded", "onBlockManagerRemoved", "onUnpersistRDD",
    "onApplicationStart", "onApplicationEnd", "onExecutorMetricsUpdate",
    "onStageExecutorMetrics", "onExecutorAdded", "onExecutorRemoved",
    "onExecutorBlacklisted", "onExecutorExcluded", "onExecutorBlacklistedForStage",
    "onExecutorExcludedForStage", "onNodeBlacklistedForStage", "onNodeExcludedForStage",
    "onExecutorUnblacklisted", "onExecutorUnexcluded", "onNodeBlacklisted",
    "onNodeExcluded", "onNodeUnblacklisted", "onNodeUnexcluded",
    "onUnschedulableTaskSetAdded", "onUnschedulableTaskSetRemoved", "onBlockUpdated",
    "onSpeculativeTaskSubmitted", "onOtherEvent", "onResourceProfileAdded",
)

#: SparkConf key (Spark >= 4.0) dropping per-task accumulables from event JSON (~2 KB left).
_INCLUDE_ACCUMULATORS_CONF = "spark.eventLog.includeTaskMetricsAccumulators"

#: py4j loggers that report callback traffic, and the INFO messages of theirs that are
#: per-callback chatter (py4j 0.10.9: ``clientserver.ClientServerConnection.wait_for_commands``
#: and ``java_gateway.CallbackConnection.run``).
_PY4J_LOGGERS = ("py4j.clientserver", "py4j.java_gateway")
_PY4J_CHATTER = ("Received command ", "Python Server ready to receive messages",
                 "Callback Connection ready to receive messages", "Close connection",
                 "Connection is closed")


class _DemoteToDebug(logging.Filter):
    """Logger filter rewriting py4j's per-callback INFO records as DEBUG records.

    A logger filter runs before the handlers compare levels, so an INFO handler then
    drops the record while a DEBUG handler still shows it; py4j's own levels are untouched.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.INFO and str(record.msg).startswith(_PY4J_CHATTER):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        return True


_DEMOTE = _DemoteToDebug()


def quiet_py4j_callbacks() -> None:
    """Log py4j's per-callback lines at DEBUG instead of INFO (idempotent).

    Each listener event reaches Python as one py4j callback, and py4j logs each at INFO:
    with ``logging.basicConfig(level=logging.INFO)`` a job of N tasks would print at least
    2 N lines (task start and end). :class:`TaskMetricsListener` calls this when it attaches;
    other py4j messages (server start, errors) keep their level.

    Examples
    --------
    >>> quiet_py4j_callbacks()
    >>> rec = logging.LogRecord("py4j.clientserver", logging.INFO, "", 0,
    ...                         "Received command c on object id p0", None, None)
    >>> logging.getLogger("py4j.clientserver").filter(rec), rec.levelname
    (False, 'DEBUG')
    """
    for name in _PY4J_LOGGERS:
        log = logging.getLogger(name)
        if _DEMOTE not in log.filters:
            log.addFilter(_DEMOTE)


def _option_long(opt: Any) -> int | None:
    """Scala ``Option[Long]`` (a py4j object) -> int or None."""
    return int(opt.get()) if opt.isDefined() else None


class Py4jSparkListener:
    """The object py4j exposes to the JVM as a ``SparkListenerInterface`` (all 35 methods).

    Owned by a :class:`TaskMetricsListener`; public so the interface can be checked
    against the running Spark (:data:`SPARK_LISTENER_INTERFACE_METHODS`).
    Callbacks arrive on py4j callback-server threads; the listener bus calls one
    queue's listeners from a single dispatch thread, but we still lock because
    readers run on the user's thread. Every callback swallows its own errors
    (an exception would be logged by Spark once per event).
    """

    class Java:
        implements = ["org.apache.spark.scheduler.SparkListenerInterface"]

    def __init__(self, job_group: str | None) -> None:
        self.lock = threading.Lock()
        self.job_group = job_group
        #: event -> JSON string in one round trip (JsonProtocol), or None: read accessors.
        self.to_json: Callable[[Any], str] | None = None
        self.tasks: list[TaskRecord] = []
        self.stages: dict[tuple[int, int], StageRecord] = {}
        self.stage_groups: dict[tuple[int, int], str | None] = {}
        self.executors: dict[str, ExecutorRecord] = {}
        self.errors = 0

    def _failed(self, where: str, exc: BaseException) -> None:
        with self.lock:
            self.errors += 1
            first = self.errors == 1
        if first:
            _LOG.warning("TaskMetricsListener.%s failed (further errors counted only): %r",
                         where, exc)

    # -- java.lang.Object methods: py4j forwards them to Python. The listener bus calls
    # equals() on every registered listener when one is removed.
    def equals(self, other: Any) -> bool:
        return other is self  # py4j hands our own proxy back as this Python object

    def hashCode(self) -> int:
        return id(self) & 0x7FFFFFFF

    def toString(self) -> str:
        return f"sparkbalance.TaskMetricsListener@{id(self):x}"

    # -- the events we record
    def onStageSubmitted(self, ev: Any) -> None:
        try:
            info = ev.stageInfo()
            props = ev.properties()
            group = props.getProperty(JOB_GROUP_PROPERTY) if props is not None else None
            key = (int(info.stageId()), int(info.attemptNumber()))
            rec = StageRecord(key[0], key[1], str(info.name()), int(info.numTasks()),
                              _option_long(info.submissionTime()), None, False, group)
            with self.lock:
                self.stage_groups[key] = group
                self.stages[key] = rec
        except Exception as exc:
            self._failed("onStageSubmitted", exc)

    def onStageCompleted(self, ev: Any) -> None:
        try:
            info = ev.stageInfo()
            key = (int(info.stageId()), int(info.attemptNumber()))
            submitted = _option_long(info.submissionTime())
            completed = _option_long(info.completionTime())
            failed = bool(info.failureReason().isDefined())
            with self.lock:
                old = self.stages.get(key)
                group = self.stage_groups.get(key)
                self.stages[key] = StageRecord(
                    key[0], key[1], str(info.name()), int(info.numTasks()),
                    submitted if submitted is not None else (old.submission_time_ms if old else None),
                    completed, failed, group)
        except Exception as exc:
            self._failed("onStageCompleted", exc)

    def onTaskEnd(self, ev: Any) -> None:
        try:
            if self.to_json is not None:
                d = json.loads(self.to_json(ev))
                key = (int(d["Stage ID"]), int(d["Stage Attempt ID"]))
                with self.lock:
                    group = self.stage_groups.get(key)
                if self.job_group is not None and group != self.job_group:
                    return
                rec = task_record_from_event_json(d, key, group)
            else:
                key = (int(ev.stageId()), int(ev.stageAttemptId()))
                with self.lock:
                    group = self.stage_groups.get(key)
                if self.job_group is not None and group != self.job_group:
                    return  # not ours: skip the ~20 round trips below
                rec = _task_record(ev, key, group)
            with self.lock:
                self.tasks.append(rec)
        except Exception as exc:
            self._failed("onTaskEnd", exc)

    def onExecutorAdded(self, ev: Any) -> None:
        try:
            info = ev.executorInfo()
            eid = str(ev.executorId())
            rec = ExecutorRecord(eid, str(info.executorHost()), int(info.totalCores()),
                                 int(ev.time()))
            with self.lock:
                self.executors[eid] = rec
        except Exception as exc:
            self._failed("onExecutorAdded", exc)

    def onExecutorRemoved(self, ev: Any) -> None:
        try:
            eid = str(ev.executorId())
            t, reason = int(ev.time()), str(ev.reason())
            with self.lock:
                old = self.executors.get(eid)
                if old is None:  # added before we attached: merged with the seed later
                    old = ExecutorRecord(eid, "", 0, -1)
                self.executors[eid] = ExecutorRecord(old.executor_id, old.host, old.total_cores,
                                                     old.added_time_ms, t, reason)
        except Exception as exc:
            self._failed("onExecutorRemoved", exc)

    # -- events we do not need: return at once (each still costs one JVM->Python trip)
    def _ignore(self, ev: Any) -> None:
        return None

    onTaskStart = onTaskGettingResult = onJobStart = onJobEnd = _ignore
    onEnvironmentUpdate = onBlockManagerAdded = onBlockManagerRemoved = _ignore
    onUnpersistRDD = onApplicationStart = onApplicationEnd = _ignore
    onExecutorMetricsUpdate = onStageExecutorMetrics = _ignore
    onExecutorBlacklisted = onExecutorExcluded = _ignore
    onExecutorBlacklistedForStage = onExecutorExcludedForStage = _ignore
    onNodeBlacklistedForStage = onNodeExcludedForStage = _ignore
    onExecutorUnblacklisted = onExecutorUnexcluded = _ignore
    onNodeBlacklisted = onNodeExcluded = onNodeUnblacklisted = onNodeUnexcluded = _ignore
    onUnschedulableTaskSetAdded = onUnschedulableTaskSetRemoved = _ignore
    onBlockUpdated = onSpeculativeTaskSubmitted = onOtherEvent = _ignore
    onResourceProfileAdded = _ignore


def _task_record(ev: Any, key: tuple[int, int], group: str | None) -> TaskRecord:
    """Read one ``SparkListenerTaskEnd`` through py4j (one round trip per accessor)."""
    info = ev.taskInfo()
    launch, finish = int(info.launchTime()), int(info.finishTime())
    m = ev.taskMetrics()  # null (None) for some failed attempts
    if m is not None:
        inp, srd, swr = m.inputMetrics(), m.shuffleReadMetrics(), m.shuffleWriteMetrics()
        metrics = (int(m.executorRunTime()), int(m.executorCpuTime()),
                   int(inp.recordsRead()), int(inp.bytesRead()),
                   int(srd.recordsRead()), int(srd.totalBytesRead()),
                   int(swr.recordsWritten()), int(swr.bytesWritten()))
    else:
        metrics = (0,) * 8
    return TaskRecord(
        key[0], key[1], int(info.partitionId()), int(info.taskId()), int(info.attemptNumber()),
        str(info.executorId()), str(info.host()), launch, finish,
        # TaskInfo.duration() = finishTime - launchTime; computed here to save a round trip.
        max(0, finish - launch) if finish > 0 else 0,
        *metrics, bool(info.successful()), bool(info.speculative()), group)


def _json_encoder(sc: Any) -> Callable[[Any], str] | None:
    """``JsonProtocol.sparkEventToJsonString`` bound to options without accumulables, or None.

    ``JsonProtocol`` is internal (``private[spark]``; public in bytecode): when it is
    missing or changed, the listener falls back to reading accessors.
    """
    try:
        jvm = sc._jvm
        conf = sc._jsc.sc().conf().clone().set(_INCLUDE_ACCUMULATORS_CONF, "false")
        opts = jvm.org.apache.spark.util.JsonProtocolOptions(conf)
        fn = jvm.org.apache.spark.util.JsonProtocol.sparkEventToJsonString
        return lambda ev: fn(ev, opts)
    except Exception as exc:
        _LOG.debug("JsonProtocol unavailable, reading task events by accessors: %s", exc)
        return None


class TaskMetricsListener(Recorder):
    """Record finished tasks, stages and executors through a pure-py4j SparkListener.

    Use as a context manager: it attaches on enter and detaches (after draining the
    bus) on exit; records stay readable after detaching.

    Parameters
    ----------
    spark : SparkSession or SparkContext
    job_group : str, optional
        Record only tasks/stages of jobs run under this job group
        (see :func:`~sparkbalance.spark.session.jobs.sparkbalance_job_group`). None records
        everything.
    decode : {"auto", "json", "accessors"}
        How a task-end event is read: "json" asks the JVM for the event-log JSON of the
        event (``JsonProtocol``, internal API: one round trip, ~10x cheaper),
        "accessors" calls ~25 public getters (one round trip each); "auto" uses JSON
        when available.

    Examples
    --------
    >>> with TaskMetricsListener(spark) as lst:  # doctest: +SKIP
    ...     spark.sparkContext.parallelize(range(100), 4).count()
    >>> sorted(t.partition_id for t in lst.tasks())  # doctest: +SKIP
    [0, 1, 2, 3]
    """

    kind = "py4j"

    def __init__(self, spark: Any, job_group: str | None = None, *,
                 decode: str = "auto") -> None:
        super().__init__(spark, job_group)
        if decode not in ("auto", "json", "accessors"):
            raise ValueError(f"decode={decode!r}; expected 'auto', 'json' or 'accessors'")
        self._impl = Py4jSparkListener(job_group)
        if decode != "accessors":
            self._impl.to_json = _json_encoder(self._sc)
            if self._impl.to_json is None and decode == "json":
                raise RuntimeError("decode='json': org.apache.spark.util.JsonProtocol is not "
                                   "usable in this Spark version; use decode='accessors'")
        self._jproxy: Any = None

    @property
    def decode(self) -> str:
        """How task events are read: "json" or "accessors"."""
        return "json" if self._impl.to_json is not None else "accessors"

    def _register(self) -> None:
        from pyspark.java_gateway import ensure_callback_server_started

        gw = self._sc._gateway
        quiet_py4j_callbacks()
        ensure_callback_server_started(gw)
        # py4j makes a new Java proxy each time a Python object crosses the boundary,
        # so removeSparkListener(python_obj) would not find it; pin one proxy instead.
        holder = gw.jvm.java.util.ArrayList()
        holder.add(self._impl)
        self._jproxy = holder.get(0)
        self._add_to_listener_bus(self._jproxy)

    def _unregister(self) -> None:
        self._sc._jsc.sc().removeSparkListener(self._jproxy)
        self._jproxy = None

    def _clear(self) -> None:
        with self._impl.lock:
            self._impl.tasks.clear()
            self._impl.stages.clear()
            self._impl.executors.clear()

    @property
    def callback_errors(self) -> int:
        """Number of callbacks that raised (each logged at most once)."""
        return self._impl.errors

    def _raw_tasks(self) -> list[TaskRecord]:
        with self._impl.lock:
            return list(self._impl.tasks)

    def _raw_stages(self) -> list[StageRecord]:
        with self._impl.lock:
            return list(self._impl.stages.values())

    def _raw_executors(self) -> list[ExecutorRecord]:
        with self._impl.lock:
            return list(self._impl.executors.values())
