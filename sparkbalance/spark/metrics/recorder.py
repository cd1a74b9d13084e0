"""The public base of sparkbalance's task recorders: attach, drain, read, count drops.

A recorder listens on Spark's listener bus and keeps one :class:`~sparkbalance.spark.
records.TaskRecord` per finished task attempt (plus stage and executor records). Two
implement :class:`Recorder`: the pure-py4j :class:`~sparkbalance.spark.metrics.py4j_listener.
TaskMetricsListener` and the bridge's :class:`~sparkbalance.spark.metrics.jvm_recorder.
JvmTaskMetricsListener`; :func:`sparkbalance.spark.metrics.listener.open_listener` picks one.

The listener bus queue is asynchronous (capacity
``spark.scheduler.listenerbus.eventqueue.capacity``, default 10000): a slow listener
delays no task, but when it falls more than the capacity behind, Spark drops events;
:meth:`Recorder.dropped_events` reads the bus's ``queue.<name>.numDroppedEvents`` counters
so a caller can tell. Our recorders sit on their own queue (:data:`LISTENER_QUEUE`), so
only our events can be dropped.
"""

from __future__ import annotations

import abc
import logging
from typing import Any

from sparkbalance.spark.session.bridge import spark_context
from sparkbalance.spark.metrics.records import ExecutorRecord, StageRecord, TaskRecord

__all__ = ["Recorder", "LISTENER_QUEUE", "DEFAULT_FLUSH_TIMEOUT_S", "dropped_listener_events"]

_LOG = logging.getLogger(__name__)

#: Listener-bus queue our recorders run on. A queue has one dispatch thread and a bounded
#: buffer (``spark.scheduler.listenerbus.eventqueue.<name>.capacity``, default 10000); on
#: our own queue a slow Python listener can only make Spark drop *our* events, never those
#: of other listeners on the shared queue, and the drops are counted under this name.
LISTENER_QUEUE = "sparkbalance"

#: Default wait for the listener bus to drain before reading records (seconds).
DEFAULT_FLUSH_TIMEOUT_S = 30.0


class Recorder(abc.ABC):
    """A task recorder on the listener bus: a context manager that attaches and detaches.

    Records stay readable after :meth:`detach`. Readers filter by ``job_group`` (jobs run
    under :func:`~sparkbalance.spark.session.jobs.sparkbalance_job_group`) and return plain
    records ordered by id.

    Implementations provide the hooks ``_register()`` (add the listener, normally through
    :meth:`_add_to_listener_bus`), ``_unregister()``, ``_clear()`` and the raw readers
    ``_raw_tasks()``, ``_raw_stages()``, ``_raw_executors()``; ``_freeze()`` optionally
    copies JVM-side rows into Python at detach.

    Parameters
    ----------
    spark : SparkSession or SparkContext
    job_group : str, optional
        Record only tasks/stages of jobs run under this job group; None records everything.

    Examples
    --------
    >>> with open_listener(spark, "grp") as rec, sparkbalance_job_group(spark, "grp"):  # doctest: +SKIP
    ...     spark.sparkContext.parallelize(range(100), 4).count()
    >>> isinstance(rec, Recorder), sorted(t.partition_id for t in rec.tasks())  # doctest: +SKIP
    (True, [0, 1, 2, 3])
    """

    #: "py4j" or "jvm": which recorder collects the events.
    kind: str = "?"

    def __init__(self, spark: Any, job_group: str | None = None) -> None:
        self._sc = spark_context(spark)
        self._job_group = job_group
        self._attached = False
        self._seed_executors: dict[str, ExecutorRecord] = {}
        self._queue: str | None = None
        self._dropped_at_attach = 0
        self._dropped_final = 0

    # -- lifecycle
    def __enter__(self) -> "Recorder":
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

    # -- implementation hooks
    def _add_to_listener_bus(self, jlistener: Any) -> None:
        """Register ``jlistener`` on queue :data:`LISTENER_QUEUE`; the shared queue if that
        is not possible. Sets :attr:`queue` to the queue used.

        ``LiveListenerBus.addToQueue`` is ``private[spark]`` (public in bytecode); removal
        (``SparkContext.removeSparkListener``) searches every queue and stops emptied ones.
        """
        jsc = self._sc._jsc.sc()
        try:
            jsc.listenerBus().addToQueue(jlistener, LISTENER_QUEUE)
            self._queue = LISTENER_QUEUE
        except Exception as exc:  # noqa: BLE001 - internal API: fall back to the public one
            _LOG.debug("own listener queue unavailable (%s); using the shared queue", exc)
            jsc.addSparkListener(jlistener)
            self._queue = "shared"

    @abc.abstractmethod
    def _register(self) -> None:
        """Add the listener to the bus (sets :attr:`queue`)."""

    @abc.abstractmethod
    def _unregister(self) -> None:
        """Remove the listener from the bus (called while the context is alive)."""

    @abc.abstractmethod
    def _clear(self) -> None:
        """Forget recorded tasks, stages and executor events."""

    @abc.abstractmethod
    def _raw_tasks(self) -> list[TaskRecord]:
        """Every recorded task attempt, unfiltered and unsorted."""

    @abc.abstractmethod
    def _raw_stages(self) -> list[StageRecord]:
        """Every recorded stage attempt, unfiltered and unsorted."""

    @abc.abstractmethod
    def _raw_executors(self) -> list[ExecutorRecord]:
        """Executor events since attach (an executor removed but not added: added_time -1)."""

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
    sc = spark_context(spark)
    jsc = sc._jsc
    if jsc is None or jsc.sc().isStopped():
        return {}
    counters = jsc.sc().listenerBus().metrics().metricRegistry().getCounters()
    out: dict[str, int] = {}
    for name in list(counters.keySet()):
        if name.startswith("queue.") and name.endswith(".numDroppedEvents"):
            out[name[len("queue."):-len(".numDroppedEvents")]] = int(counters.get(name).getCount())
    return out


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
