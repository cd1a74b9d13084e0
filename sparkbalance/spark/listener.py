"""Per-task metrics from Spark's listener bus, as plain Python records.

Two recorders share one facade (:class:`_RecorderBase`): a pure-py4j listener
(:class:`TaskMetricsListener`, a Python object implementing
``org.apache.spark.scheduler.SparkListenerInterface`` through the py4j callback
server) and a JVM recorder from ``jvm_bridge/`` (:class:`sparkbalance.spark.jvm.
JvmTaskMetricsListener`) that keeps rows in the JVM and hands Python one string.
:func:`open_listener` picks the JVM recorder when its class is on the classpath.
Both return the same frozen :class:`TaskRecord` / :class:`StageRecord` /
:class:`ExecutorRecord` values; no py4j object reaches the caller.

Why py4j costs: every accessor call on a Java object is a socket round trip
(~80 us measured on the dev box), so reading a finished task by its getters takes
~25 round trips; the py4j listener instead asks the JVM for the event's event-log
JSON (``JsonProtocol``, one round trip) and falls back to getters when that
internal API is missing. Every event still costs one JVM->Python callback.

The listener bus queue is asynchronous (capacity
``spark.scheduler.listenerbus.eventqueue.capacity``, default 10000): a slow
listener delays no task, but when it falls more than the capacity behind, Spark
drops events; :meth:`_RecorderBase.dropped_events` reads the
bus's ``queue.<name>.numDroppedEvents`` counters so a caller can tell. Our
recorders sit on their own queue (:data:`LISTENER_QUEUE`), so only our events
can be dropped. Measured (bench_listener.py, 20,000 tasks of a JVM-only job on a
loaded 2-core box): the JVM recorder adds no measurable time and drops nothing;
the py4j listener adds ~45 % and can fall behind (raise
``spark.scheduler.listenerbus.eventqueue.sparkbalance.capacity`` or build the jar).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterator

__all__ = [
    "TaskRecord",
    "StageRecord",
    "ExecutorRecord",
    "TaskMetricsListener",
    "open_listener",
    "sparkbalance_job_group",
    "JOB_GROUP_PROPERTY",
    "SPARK_LISTENER_INTERFACE_METHODS",
]

_LOG = logging.getLogger(__name__)

#: Local property Spark uses for ``SparkContext.setJobGroup`` (SparkContext.SPARK_JOB_GROUP_ID).
JOB_GROUP_PROPERTY = "spark.jobGroup.id"
_JOB_DESCRIPTION_PROPERTY = "spark.job.description"
_JOB_INTERRUPT_PROPERTY = "spark.job.interruptOnCancel"

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

#: Listener-bus queue our recorders run on. A queue has one dispatch thread and a bounded
#: buffer (``spark.scheduler.listenerbus.eventqueue.<name>.capacity``, default 10000); on
#: our own queue a slow Python listener can only make Spark drop *our* events, never those
#: of other listeners on the shared queue, and the drops are counted under this name.
LISTENER_QUEUE = "sparkbalance"

#: Default wait for the listener bus to drain before reading records (seconds).
DEFAULT_FLUSH_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class TaskRecord:
    """One finished task attempt, as reported by ``SparkListenerTaskEnd``.

    Times are wall-clock milliseconds since the epoch (``launch_time_ms``,
    ``finish_time_ms``) or milliseconds (``duration_ms`` = finish - launch, which
    includes scheduler delay and result fetch; ``run_time_ms`` = executor run time,
    which for PySpark includes the Python worker). ``cpu_time_ns`` is JVM thread CPU
    only (the Python worker's CPU is not in it). Metrics of failed attempts are 0.
    ``records_read``/``bytes_read`` are input metrics (Hadoop/file sources; 0 for
    ``parallelize``); ``shuffle_records_read`` counts JVM shuffle records, which for
    the PySpark RDD API are pickled *batches*, for DataFrames rows.

    Examples
    --------
    >>> r = TaskRecord(stage_id=1, stage_attempt=0, partition_id=3, task_id=7, attempt=0,
    ...                executor_id="driver", host="h", launch_time_ms=1000,
    ...                finish_time_ms=1250, duration_ms=250, run_time_ms=240,
    ...                cpu_time_ns=5_000_000, records_read=0, bytes_read=0,
    ...                shuffle_records_read=10, shuffle_bytes_read=800,
    ...                shuffle_records_written=0, shuffle_bytes_written=0,
    ...                successful=True, speculative=False, job_group=None)
    >>> r.duration_ms
    250
    """

    stage_id: int
    stage_attempt: int
    partition_id: int
    task_id: int
    attempt: int
    executor_id: str
    host: str
    launch_time_ms: int
    finish_time_ms: int
    duration_ms: int
    run_time_ms: int
    cpu_time_ns: int
    records_read: int
    bytes_read: int
    shuffle_records_read: int
    shuffle_bytes_read: int
    shuffle_records_written: int
    shuffle_bytes_written: int
    successful: bool
    speculative: bool
    job_group: str | None


@dataclass(frozen=True)
class StageRecord:
    """One stage attempt: submitted (times may be None until known) and maybe completed.

    ``failed`` is True when the stage attempt completed with a failure reason.
    """

    stage_id: int
    stage_attempt: int
    name: str
    num_tasks: int
    submission_time_ms: int | None
    completion_time_ms: int | None
    failed: bool
    job_group: str | None

    @property
    def wall_time_ms(self) -> int | None:
        """Completion minus submission time (ms), or None while the stage runs."""
        if self.submission_time_ms is None or self.completion_time_ms is None:
            return None
        return self.completion_time_ms - self.submission_time_ms


@dataclass(frozen=True)
class ExecutorRecord:
    """One executor: cores and lifetime (epoch ms); ``removed_time_ms`` None while alive."""

    executor_id: str
    host: str
    total_cores: int
    added_time_ms: int
    removed_time_ms: int | None = None
    removed_reason: str | None = None


# --------------------------------------------------------------------------- helpers


def _spark_context(spark: Any) -> Any:
    """Accept a SparkSession or a SparkContext; return the (Python) SparkContext."""
    sc = getattr(spark, "sparkContext", spark)
    if getattr(sc, "_jsc", None) is None:
        raise ValueError(f"spark={spark!r}; expected an active SparkSession or SparkContext")
    return sc


def _option_long(opt: Any) -> int | None:
    """Scala ``Option[Long]`` (a py4j object) -> int or None."""
    return int(opt.get()) if opt.isDefined() else None


@contextlib.contextmanager
def sparkbalance_job_group(sc: Any, name: str, description: str | None = None) -> Iterator[str]:
    """Label the jobs run inside the block with job group ``name``; restore the old label after.

    sparkbalance runs its own jobs (statistics, planning probes) under a job group so a
    listener created with ``job_group=name`` records only those. Local properties are
    per thread in PySpark (pinned thread mode), so this labels the calling thread only.

    Parameters
    ----------
    sc : SparkContext or SparkSession
    name : str
        Job group id (non-empty).
    description : str, optional
        Job description shown in the Spark UI (defaults to ``name``).

    Examples
    --------
    >>> with sparkbalance_job_group(spark, "sparkbalance-stats"):  # doctest: +SKIP
    ...     rdd.count()
    """
    if not name:
        raise ValueError(f"name={name!r}; expected a non-empty job group id")
    sc = _spark_context(sc)
    keys = (JOB_GROUP_PROPERTY, _JOB_DESCRIPTION_PROPERTY, _JOB_INTERRUPT_PROPERTY)
    old = {k: sc.getLocalProperty(k) for k in keys}
    sc.setJobGroup(name, description if description is not None else name)
    try:
        yield name
    finally:
        for k, v in old.items():
            # setLocalProperty(k, None) removes the property on the JVM side.
            sc.setLocalProperty(k, v)


# --------------------------------------------------------------------------- facade


class _RecorderBase:
    """Shared facade: attach/detach as a context manager, drain, dropped events.

    Subclasses implement ``_register()``/``_unregister()`` and the three raw readers
    ``_raw_tasks()``, ``_raw_stages()``, ``_raw_executors()``.
    """

    #: "py4j" or "jvm": which recorder collects the events.
    kind: str = "?"

    def __init__(self, spark: Any, job_group: str | None = None) -> None:
        self._sc = _spark_context(spark)
        self._job_group = job_group
        self._attached = False
        self._seed_executors: dict[str, ExecutorRecord] = {}
        self._queue: str | None = None
        self._dropped_at_attach = 0
        self._dropped_final = 0

    # -- lifecycle
    def __enter__(self) -> "_RecorderBase":
        self.attach()
        return self

    def __exit__(self, *exc: object) -> None:
        self.detach()

    @property
    def attached(self) -> bool:
        """True between :meth:`attach` and :meth:`detach`."""
        return self._attached

    @property
    def queue(self) -> str | None:
        """Listener-bus queue the recorder was attached to (None before attaching)."""
        return self._queue

    @property
    def job_group(self) -> str | None:
        """The job group whose tasks are recorded (None: all jobs)."""
        return self._job_group

    def attach(self) -> None:
        """Register on the listener bus (queue :data:`LISTENER_QUEUE`; idempotent)."""
        if self._attached:
            return
        self._seed_executors = _known_executors(self._sc)
        self._register()
        self._attached = True
        self._dropped_at_attach = self.dropped_events().get(self._queue or "", 0)

    @property
    def dropped_since_attach(self) -> int:
        """Events Spark dropped on our queue since :meth:`attach` (0: records complete).

        Shared by every recorder on that queue; frozen at :meth:`detach`.
        """
        if self._attached:
            now = self.dropped_events().get(self._queue or "", self._dropped_at_attach)
            return max(0, now - self._dropped_at_attach)
        return self._dropped_final

    def detach(self) -> None:
        """Drain pending events, then remove the listener (idempotent, safe after stop)."""
        if not self._attached:
            return
        jsc = self._sc._jsc
        if jsc is not None and not jsc.sc().isStopped():
            self.flush()
            self._dropped_final = self.dropped_since_attach
            self._unregister()
            if self._dropped_final:
                _LOG.warning(
                    "%d listener events dropped on queue %r while %s was attached: task "
                    "records are incomplete (build jvm_bridge, or raise "
                    "spark.scheduler.listenerbus.eventqueue.%s.capacity)",
                    self._dropped_final, self._queue, type(self).__name__, self._queue)
        # else: the bus is gone with the context; nothing to remove
        self._attached = False
        self._freeze()

    def _freeze(self) -> None:
        """Hook: copy JVM-side rows into Python so records outlive the JVM."""

    def flush(self, timeout_s: float = DEFAULT_FLUSH_TIMEOUT_S) -> bool:
        """Wait until the listener bus has delivered all posted events; False on timeout.

        ``LiveListenerBus.waitUntilEmpty`` is ``private[spark]`` in Scala but public in
        bytecode; it waits for all queues (ours included).
        """
        jsc = self._sc._jsc
        if jsc is None or jsc.sc().isStopped():
            return True
        try:
            jsc.sc().listenerBus().waitUntilEmpty(int(timeout_s * 1000))
            return True
        except Exception as exc:  # py4j wraps java.util.concurrent.TimeoutException
            _LOG.warning("listener bus not drained within %.1f s: %s", timeout_s, exc)
            return False

    # -- readers
    def tasks(self, stage_id: int | None = None, *, successful_only: bool = False,
              flush: bool = True) -> list[TaskRecord]:
        """Finished task attempts (of ``job_group`` if set), ordered by task id.

        Parameters
        ----------
        stage_id : int, optional
            Only tasks of this stage (all attempts).
        successful_only : bool
            Drop failed/killed attempts.
        flush : bool
            Wait for the listener bus to drain first (only while attached).
        """
        if flush and self._attached:
            self.flush()
        out = [t for t in self._raw_tasks()
               if (stage_id is None or t.stage_id == stage_id)
               and (not successful_only or t.successful)
               and (self._job_group is None or t.job_group == self._job_group)]
        out.sort(key=lambda t: t.task_id)
        return out

    def stages(self, *, flush: bool = True) -> list[StageRecord]:
        """Stage attempts seen (of ``job_group`` if set), ordered by (stage id, attempt)."""
        if flush and self._attached:
            self.flush()
        out = [s for s in self._raw_stages()
               if self._job_group is None or s.job_group == self._job_group]
        out.sort(key=lambda s: (s.stage_id, s.stage_attempt))
        return out

    def executors(self, *, flush: bool = True) -> list[ExecutorRecord]:
        """Executors alive at attach time plus those added/removed since, by id."""
        if flush and self._attached:
            self.flush()
        merged = dict(self._seed_executors)
        for e in self._raw_executors():
            old = merged.get(e.executor_id)
            if old is not None and e.added_time_ms < 0:  # removal of a seeded executor
                e = ExecutorRecord(old.executor_id, old.host, old.total_cores,
                                   old.added_time_ms, e.removed_time_ms, e.removed_reason)
            merged[e.executor_id] = e
        return [merged[k] for k in sorted(merged, key=_executor_sort_key)]

    def dropped_events(self) -> dict[str, int]:
        """Events dropped so far per listener-bus queue (``queue.<name>.numDroppedEvents``).

        Counts are cumulative for the SparkContext; compare before/after a job. Ours are
        under :attr:`queue` (normally ``"sparkbalance"``, shared by all our recorders).
        Empty when the context is stopped.
        """
        return dropped_listener_events(self._sc)

    def clear(self) -> None:
        """Forget recorded tasks, stages and executor events (e.g. between batches).

        The stage -> job-group mapping is kept, so tasks of a stage submitted before
        the call are still attributed to their group.
        """
        if self._attached:
            self.flush()
        self._clear()

    # -- subclass hooks
    def _clear(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _register(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _unregister(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _raw_tasks(self) -> list[TaskRecord]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _raw_stages(self) -> list[StageRecord]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _raw_executors(self) -> list[ExecutorRecord]:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(kind={self.kind!r}, job_group={self._job_group!r}, "
                f"attached={self._attached})")


def _executor_sort_key(executor_id: str) -> tuple[int, int | str]:
    return (0, int(executor_id)) if executor_id.isdigit() else (1, executor_id)


def dropped_listener_events(spark: Any) -> dict[str, int]:
    """Dropped-event counters of the SparkContext's listener bus, per queue name.

    Spark 4.3 registers a Dropwizard counter ``queue.<name>.numDroppedEvents`` per
    ``AsyncEventQueue`` in ``LiveListenerBus.metrics().metricRegistry()`` (checked on
    4.3.0: appStatus, executorManagement, and one per further queue such as shared or
    :data:`LISTENER_QUEUE`, once a listener is added there).

    Examples
    --------
    >>> dropped_listener_events(spark)  # doctest: +SKIP
    {'appStatus': 0, 'executorManagement': 0, 'sparkbalance': 0}
    """
    sc = _spark_context(spark)
    jsc = sc._jsc
    if jsc is None or jsc.sc().isStopped():
        return {}
    counters = jsc.sc().listenerBus().metrics().metricRegistry().getCounters()
    out: dict[str, int] = {}
    for name in list(counters.keySet()):
        if name.startswith("queue.") and name.endswith(".numDroppedEvents"):
            out[name[len("queue."):-len(".numDroppedEvents")]] = int(counters.get(name).getCount())
    return out


def _add_listener(sc: Any, jlistener: Any) -> str:
    """Register on queue :data:`LISTENER_QUEUE`; the shared queue if that is not possible.

    ``LiveListenerBus.addToQueue`` is ``private[spark]`` (public in bytecode); removal
    (``SparkContext.removeSparkListener``) searches every queue and stops emptied ones.
    Returns the queue name used.
    """
    jsc = sc._jsc.sc()
    try:
        jsc.listenerBus().addToQueue(jlistener, LISTENER_QUEUE)
        return LISTENER_QUEUE
    except Exception as exc:
        _LOG.debug("own listener queue unavailable (%s); using the shared queue", exc)
        jsc.addSparkListener(jlistener)
        return "shared"


def _known_executors(sc: Any) -> dict[str, ExecutorRecord]:
    """Executors alive now, from the app status store (their Added events predate us)."""
    try:
        summaries = sc._jsc.sc().statusStore().executorList(True)
        out = {}
        for i in range(summaries.size()):
            s = summaries.apply(i)
            eid = str(s.id())
            host = str(s.hostPort()).rsplit(":", 1)[0]
            out[eid] = ExecutorRecord(eid, host, int(s.totalCores()), int(s.addTime().getTime()))
        return out
    except Exception as exc:  # internal API: degrade to event-only executor records
        _LOG.debug("could not read executors from the status store: %s", exc)
        return {}


# --------------------------------------------------------------------------- py4j recorder


class _Py4jSparkListener:
    """The object py4j exposes to the JVM as a ``SparkListenerInterface``.

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
                rec = _task_record_from_json(d, key, group)
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


def _task_record_from_json(d: dict, key: tuple[int, int], group: str | None) -> TaskRecord:
    """Same record from ``JsonProtocol.sparkEventToJsonString`` (the event-log format)."""
    info = d["Task Info"]
    launch, finish = int(info["Launch Time"]), int(info.get("Finish Time", 0))
    m = d.get("Task Metrics") or {}
    inp = m.get("Input Metrics") or {}
    srd = m.get("Shuffle Read Metrics") or {}
    swr = m.get("Shuffle Write Metrics") or {}
    return TaskRecord(
        key[0], key[1], int(info.get("Partition ID", -1)), int(info["Task ID"]),
        int(info.get("Attempt", 0)), str(info["Executor ID"]), str(info["Host"]), launch, finish,
        max(0, finish - launch) if finish > 0 else 0,
        int(m.get("Executor Run Time", 0)), int(m.get("Executor CPU Time", 0)),
        int(inp.get("Records Read", 0)), int(inp.get("Bytes Read", 0)),
        int(srd.get("Total Records Read", 0)),
        # ShuffleReadMetrics.totalBytesRead = remoteBytesRead + localBytesRead
        int(srd.get("Remote Bytes Read", 0)) + int(srd.get("Local Bytes Read", 0)),
        int(swr.get("Shuffle Records Written", 0)), int(swr.get("Shuffle Bytes Written", 0)),
        # TaskInfo.successful = finished && !failed && !killed; finished = finishTime != 0
        finish != 0 and not info.get("Failed", False) and not info.get("Killed", False),
        bool(info.get("Speculative", False)), group)


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


class TaskMetricsListener(_RecorderBase):
    """Record finished tasks, stages and executors through a pure-py4j SparkListener.

    Use as a context manager: it attaches on enter and detaches (after draining the
    bus) on exit; records stay readable after detaching.

    Parameters
    ----------
    spark : SparkSession or SparkContext
    job_group : str, optional
        Record only tasks/stages of jobs run under this job group
        (see :func:`sparkbalance_job_group`). None records everything.
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
        self._impl = _Py4jSparkListener(job_group)
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
        ensure_callback_server_started(gw)
        # py4j makes a new Java proxy each time a Python object crosses the boundary,
        # so removeSparkListener(python_obj) would not find it; pin one proxy instead.
        holder = gw.jvm.java.util.ArrayList()
        holder.add(self._impl)
        self._jproxy = holder.get(0)
        self._queue = _add_listener(self._sc, self._jproxy)

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


# --------------------------------------------------------------------------- chooser


def open_listener(spark: Any, job_group: str | None = None, *,
                  prefer: str = "auto") -> _RecorderBase:
    """A not-yet-attached recorder: the JVM one when its jar is loaded, else py4j.

    Logs exactly one INFO line saying which recorder was chosen and why.

    Parameters
    ----------
    spark : SparkSession or SparkContext
    job_group : str, optional
        Passed to the recorder (see :class:`TaskMetricsListener`).
    prefer : {"auto", "jvm", "py4j"}
        "auto" picks the JVM recorder when loadable; "jvm" raises if it is not.

    Examples
    --------
    >>> with open_listener(spark) as lst:  # doctest: +SKIP
    ...     df.groupBy("k").count().collect()
    >>> lst.kind  # doctest: +SKIP
    'jvm'
    """
    from sparkbalance.spark import jvm  # late: jvm imports this module

    if prefer not in ("auto", "jvm", "py4j"):
        raise ValueError(f"prefer={prefer!r}; expected 'auto', 'jvm' or 'py4j'")
    if prefer != "py4j" and jvm.bridge_available(spark):
        _LOG.info("sparkbalance listener: JVM recorder %s (bridge jar on the classpath)",
                  jvm.RECORDER_CLASS)
        return jvm.JvmTaskMetricsListener(spark, job_group)
    if prefer == "jvm":
        raise RuntimeError(
            f"JVM recorder {jvm.RECORDER_CLASS} is not loadable; build it with "
            f"`bash jvm_bridge/build.sh .venv/bin/python` and create the session with "
            f"sparkbalance.spark.jvm.session_builder_with_bridge(builder)")
    _LOG.info("sparkbalance listener: pure-py4j listener (%s)",
              "requested" if prefer == "py4j" else
              "bridge jar not on the classpath; build jvm_bridge for lower overhead")
    return TaskMetricsListener(spark, job_group)
