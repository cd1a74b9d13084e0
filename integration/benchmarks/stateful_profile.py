"""Per-batch timeline of a streaming query, for ``bench_stateful.py --profile``.

For each micro-batch of a run: the streaming engine's own phases (the query's
``recentProgress`` ``durationMs``: ``addBatch`` is the sink's call, our whole
``foreachBatch`` for the drop-in; ``latestOffset``, ``getBatch``, ``queryPlanning``,
``walCommit``, ``commitOffsets`` the engine's work both sides pay), the Spark jobs that ran
inside the trigger (each job's wall, tasks and a short name), the driver's wall between
them, and the driver's py4j round trips by phase (the innermost sparkbalance or benchmark
function that made the call; py4j's own reference releases apart). All counts are
independent of load; walls are not.
"""
from __future__ import annotations

import collections
import os
import sys
from typing import Any

__all__ = ["Py4JCalls", "PhasedPy4J", "jobs_since", "python_workers", "print_timeline"]

_ROOTS = (os.sep + "sparkbalance" + os.sep, os.sep + "benchmarks" + os.sep)


def _phase(command: str) -> str:
    if command.startswith("m\nd\n"):
        return "py4j release"
    f = sys._getframe(2)
    while f is not None:
        name = f.f_code.co_filename
        if any(r in name for r in _ROOTS) and "stateful_profile" not in name:
            mod = name.rsplit(os.sep, 1)[-1][:-3]
            return f"{mod}.{f.f_code.co_name}"
        f = f.f_back
    return "other"


class Py4JCalls:
    """Counts the driver's py4j commands (round trips to the JVM) while installed."""

    def __init__(self) -> None:
        self._n = 0
        self._saved: list = []

    @property
    def count(self) -> int:
        return self._n

    def _seen(self, command: str) -> None:
        self._n += 1

    def __enter__(self) -> "Py4JCalls":
        from py4j import clientserver, java_gateway
        for cls in (clientserver.ClientServerConnection, java_gateway.GatewayConnection):
            orig = cls.send_command

            def counted(conn, command, *args, _orig=orig, **kw):
                self._seen(command)
                return _orig(conn, command, *args, **kw)

            self._saved.append((cls, orig))
            cls.send_command = counted
        return self

    def __exit__(self, *exc) -> None:
        for cls, orig in self._saved:
            cls.send_command = orig


class PhasedPy4J(Py4JCalls):
    """Counts the driver's py4j commands by phase (see module docstring) while installed."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[collections.Counter] = [collections.Counter()]

    @property
    def count(self) -> int:
        return sum(sum(c.values()) for c in self.batches)

    def _seen(self, command: str) -> None:
        self.batches[-1][_phase(command)] += 1


def jobs_since(spark: Any, first_job: int) -> list[dict]:
    """The application's jobs with id >= ``first_job``: id, submitted and completed (ms
    since the epoch), tasks, name (description or call site), oldest first."""
    store = spark.sparkContext._jsc.sc().statusStore()
    out = []
    it = store.jobsList(None).iterator()
    while it.hasNext():
        j = it.next()
        if j.jobId() < first_job:
            continue
        sub, done = j.submissionTime(), j.completionTime()
        desc = j.description()
        name = desc.get() if desc.isDefined() else j.name()
        out.append({"id": j.jobId(), "t0": sub.get().getTime() if sub.isDefined() else 0,
                    "t1": done.get().getTime() if done.isDefined() else 0,
                    "tasks": j.numCompletedTasks(), "name": " ".join(str(name).split())[:48]})
    return sorted(out, key=lambda j: j["id"])


def python_workers() -> set[int]:
    """PIDs of PySpark Python workers (``pyspark.daemon`` / ``pyspark.worker``) now alive."""
    pids = set()
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    cmd = f.read()
            except OSError:
                continue
            if b"pyspark.daemon" in cmd or b"pyspark.worker" in cmd:
                pids.add(int(d))
    return pids


_PHASES = ("triggerExecution", "latestOffset", "getBatch", "queryPlanning", "addBatch",
           "walCommit", "commitOffsets")


def _iso_ms(ts: str) -> int:
    from datetime import datetime, timezone
    return int(datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ")
               .replace(tzinfo=timezone.utc).timestamp() * 1000)


def print_timeline(mode: str, progress: list[dict], jobs: list[dict],
                   calls: PhasedPy4J | None, workers: tuple[int, int]) -> dict:
    """Print one run's per-batch timeline; return the per-batch means printed last."""
    print(f"--- profile {mode}: {len(progress)} triggers; python workers alive "
          f"before/after {workers[0]}/{workers[1]}")
    sums: collections.Counter = collections.Counter()
    n = 0
    for i, p in enumerate(progress):
        d = p.get("durationMs", {})
        if not d.get("addBatch"):
            continue
        n += 1
        start = _iso_ms(p["timestamp"])
        end = start + d.get("triggerExecution", 0)
        mine = [j for j in jobs if start <= j["t0"] <= end]
        job_ms = sum(j["t1"] - j["t0"] for j in mine)
        sums.update({k: d.get(k, 0) for k in _PHASES})
        sums.update({"jobs": len(mine), "tasks": sum(j["tasks"] for j in mine),
                     "job_ms": job_ms, "gap_ms": d["addBatch"] - job_ms})
        print(f"batch {p['batchId']:3d}: " + " ".join(f"{k} {d.get(k, 0)}" for k in _PHASES)
              + f" | {len(mine)} jobs {job_ms} ms, driver outside jobs in addBatch "
              f"~{d['addBatch'] - job_ms} ms")
        for j in mine:
            print(f"      job {j['id']:4d} +{j['t0'] - start:5d} ms {j['t1'] - j['t0']:5d} ms "
                  f"{j['tasks']:3d} tasks  {j['name']}")
    if calls is not None:
        per: collections.Counter = collections.Counter()
        for c in calls.batches:
            per.update(c)
        k = max(n, 1)
        print(f"  py4j per batch {sum(per.values()) / k:.0f}, by phase: " + ", ".join(
            f"{name} {v / k:.1f}" for name, v in per.most_common(14)))
    n = max(n, 1)
    means = {k: v / n for k, v in sums.items()}
    print("  mean ms/batch: " + " ".join(f"{k} {means.get(k, 0):.0f}" for k in
                                          (*_PHASES, "job_ms", "gap_ms"))
          + f" | jobs {means.get('jobs', 0):.1f} tasks {means.get('tasks', 0):.1f}")
    return means
