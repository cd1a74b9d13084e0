"""Measured loads of a record planned without statistics, filled when its stage completes.

A splitting strategy such as ``pkg`` gathers no key statistics, and its shuffle runs after
its record is posted (the operation returns a lazy RDD): the record has no per-partition
loads, and its log line said ``loads not measured when planned``. The record names the
stage that will compute its result (``rdd_ids``, the JVM RDD id). :func:`watch` keeps such
a record; a small listener then sees the stage that computes that RDD, adds up each task's
shuffle read, and when the stage completes writes the per-partition loads into the record
as ``loads_after`` (``max_after``, ``avg_after``), logs the line again and pushes the
completed record to the plugin (same ``id``: the tab's row is replaced).

The unit is the shuffle read of each reduce task: rows for a DataFrame; for the PySpark RDD
API the JVM sees pickled *batches* as records, so there the bytes read are the load
(``loads_unit`` names which). Events are read through py4j (each event one callback), so the
listener is on the bus only while a record waits: it leaves once every watched record is
filled. A pkg result that is never computed keeps it there until the context stops.

Examples
--------
>>> reduce_by_key(pairs, add, 8, "pkg").collect()     # doctest: +SKIP
>>> sb.balance_log().last()["loads_after"]           # doctest: +SKIP
[5120.0, 4987.0, ...]
"""
from __future__ import annotations

import logging
import threading
from typing import Any

from sparkbalance.spark.metrics.py4j_listener import Py4jSparkListener, quiet_py4j_callbacks

__all__ = ["watch", "pending", "UNITS"]

_LOG = logging.getLogger("sparkbalance")

#: ``loads_unit`` of a filled record, by record kind.
UNITS = {"dataframe": "shuffle records read", "rdd": "shuffle bytes read"}


class _StageLoads(Py4jSparkListener):
    """Listener of one SparkContext: stages computing a watched RDD, their tasks' reads."""

    def __init__(self, sc: Any) -> None:
        super().__init__(None)
        self.sc = sc
        self.by_rdd: dict[int, dict[str, Any]] = {}        # rdd id -> the stored record
        self.by_stage: dict[tuple[int, int], dict[str, Any]] = {}
        self.reads: dict[tuple[int, int], dict[int, float]] = {}
        self.proxy: Any = None

    def onStageSubmitted(self, ev: Any) -> None:
        try:
            info = ev.stageInfo()
            rdds = info.rddInfos()
            ids = {int(rdds.apply(i).id()) for i in range(rdds.size())}
            with self.lock:
                hit = next((self.by_rdd[r] for r in ids if r in self.by_rdd), None)
                if hit is not None:
                    key = (int(info.stageId()), int(info.attemptNumber()))
                    self.by_stage[key], self.reads[key] = hit, {}
        except Exception as exc:
            self._failed("onStageSubmitted", exc)

    def onTaskEnd(self, ev: Any) -> None:
        try:
            key = (int(ev.stageId()), int(ev.stageAttemptId()))
            with self.lock:
                rec = self.by_stage.get(key)
            if rec is None or not ev.taskInfo().successful():
                return
            m = ev.taskMetrics().shuffleReadMetrics()
            value = m.totalBytesRead() if rec.get("kind") == "rdd" else m.recordsRead()
            with self.lock:
                self.reads[key][int(ev.taskInfo().partitionId())] = float(value)
        except Exception as exc:
            self._failed("onTaskEnd", exc)

    def onStageCompleted(self, ev: Any) -> None:
        try:
            info = ev.stageInfo()
            key = (int(info.stageId()), int(info.attemptNumber()))
            with self.lock:
                rec = self.by_stage.pop(key, None)
                reads = self.reads.pop(key, {})
                if rec is None or info.failureReason().isDefined():
                    return
                for r in [r for r, v in self.by_rdd.items() if v is rec]:
                    del self.by_rdd[r]
                done = not self.by_rdd
            _fill(self.sc, rec, reads, int(info.numTasks()))
            if done:   # not from the bus's own dispatch thread: removal may wait for it
                threading.Thread(target=_leave, args=(self,), daemon=True,
                                 name="sparkbalance-stage-loads").start()
        except Exception as exc:
            self._failed("onStageCompleted", exc)


_LOCK = threading.Lock()
_LISTENERS: dict[int, _StageLoads] = {}   # id(SparkContext) -> its listener


def watch(sc: Any, record: dict[str, Any]) -> bool:
    """Fill ``record`` (the stored dict of :func:`sparkbalance.spark.report.balance_log.post`)
    with the loads its stage measures, when that stage completes. True when watched: the
    record names an RDD (``rdd_ids``), has no ``loads_after`` and ``sc`` is a live classic
    SparkContext.

    Examples
    --------
    >>> watch(None, {"kind": "rdd", "rdd_ids": [3]})
    False
    """
    ids = record.get("rdd_ids") or []
    if sc is None or not ids or record.get("loads_after") or getattr(sc, "_jsc", None) is None:
        return False
    with _LOCK:
        listener = _LISTENERS.get(id(sc))
        if listener is None:
            listener = _StageLoads(sc)
            try:
                _join(listener)
            except Exception as exc:  # reporting must never fail the user's operation
                _LOG.debug("no stage listener for measured loads: %r", exc)
                return False
            _LISTENERS[id(sc)] = listener
        with listener.lock:
            for r in ids:
                listener.by_rdd[int(r)] = record
    return True


def pending() -> int:
    """Records waiting for their stage (all contexts)."""
    with _LOCK:
        return sum(len({id(v) for v in x.by_rdd.values()}) for x in _LISTENERS.values())


def _join(listener: _StageLoads) -> None:
    from pyspark.java_gateway import ensure_callback_server_started
    gw = listener.sc._gateway
    quiet_py4j_callbacks()
    ensure_callback_server_started(gw)
    holder = gw.jvm.java.util.ArrayList()   # one pinned proxy, so removal finds it
    holder.add(listener)
    listener.proxy = holder.get(0)
    listener.sc._jsc.sc().addSparkListener(listener.proxy)


def _leave(listener: _StageLoads) -> None:
    with _LOCK:
        with listener.lock:
            if listener.by_rdd:          # a record was watched meanwhile: stay
                return
        _LISTENERS.pop(id(listener.sc), None)
    try:
        listener.sc._jsc.sc().removeSparkListener(listener.proxy)
    except Exception as exc:  # a stopped context has no bus left
        _LOG.debug("stage listener not removed: %r", exc)


def _fill(sc: Any, rec: dict[str, Any], reads: dict[int, float], num_tasks: int) -> None:
    """Write the measured loads into the stored record, log it, push it again."""
    from sparkbalance.spark.report.balance_log import push
    from sparkbalance.spark.report.log_line import log_info, plan_log_line
    n = int(rec.get("num_partitions") or num_tasks)
    loads = [float(reads.get(p, 0.0)) for p in range(n)]
    rec.update(loads_after=loads, max_after=max(loads, default=0.0),
               avg_after=sum(loads) / n if n else 0.0,
               loads_unit=UNITS.get(str(rec.get("kind")), "shuffle records read"),
               loads_measured="stage")
    log_info(_LOG, "%s", plan_log_line(rec))
    push(sc, rec)
