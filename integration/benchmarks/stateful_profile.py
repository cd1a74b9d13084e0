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
import json
import os
import sys
from typing import Any

__all__ = ["Py4JCalls", "PhasedPy4J", "jobs_since", "python_workers", "print_timeline",
           "CpuSplit", "stages_since", "print_costs", "route_stage_cpu", "DriverProfile",
           "LookaheadTrace"]

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


def _proc_cpu(pid: int, children: bool = False) -> float:
    """utime + stime of ``pid`` (and, ``children``, of its reaped children), seconds."""
    with open(f"/proc/{pid}/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in parts[11:15 if children else 13]) / os.sysconf("SC_CLK_TCK")


def _jvm_pid() -> int | None:
    """The driver's JVM: the ``java`` child of this process (PySpark's launcher)."""
    me = os.getpid()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != me:
                continue
            with open(f"/proc/{d}/cmdline", "rb") as f:
                if b"java" in f.read():
                    return int(d)
        except OSError:
            continue
    return None


class CpuSplit:
    """CPU seconds of a run split by process: the driver's Python (all its threads, the
    ``foreachBatch`` callback's included), the JVM (driver, scheduler, executors' task
    threads on ``local[n]``) and the rest of the tree (the Python workers, reaped ones
    included). ``tree`` is the process tree's total (``bench_stateful._tree_cpu_seconds``).

    Examples
    --------
    >>> split = CpuSplit(tree_cpu)                    # doctest: +SKIP
    >>> ...; split.stop()["workers"]                  # doctest: +SKIP
    0.98
    """

    def __init__(self, tree: Any) -> None:
        self._tree, self._jvm = tree, _jvm_pid()
        self._t0 = self._now()

    def _now(self) -> tuple[float, float, float]:
        jvm = 0.0 if self._jvm is None else _proc_cpu(self._jvm)
        return self._tree(), _proc_cpu(os.getpid()), jvm

    def stop(self) -> dict:
        """``{"tree", "driver", "jvm", "workers"}`` seconds since construction."""
        t, d, j = (b - a for a, b in zip(self._t0, self._now()))
        return {"tree": t, "driver": d, "jvm": j, "workers": t - d - j}


def stages_since(spark: Any, seen: set | None = None) -> tuple[set, list[dict]]:
    """The application's completed stages (through the UI's REST API; empty without a UI)
    not in ``seen``: ``(all ids now, [{name, tasks, run_s, cpu_s}, ...])`` (``run_s``
    the tasks' summed run time, ``cpu_s`` their JVM thread CPU: a Python worker's CPU is
    not in it)."""
    import urllib.request
    sc = spark.sparkContext
    if not sc.uiWebUrl:
        return set(), []
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/stages?status=complete"
    with urllib.request.urlopen(url, timeout=30) as r:
        rows = json.load(r)
    ids = {(d["stageId"], d["attemptId"]) for d in rows}
    new = [{"name": " ".join(d["name"].split())[:40], "tasks": d["numTasks"],
            "run_s": d["executorRunTime"] / 1000, "cpu_s": d["executorCpuTime"] / 1e9}
           for d in rows if seen is not None and (d["stageId"], d["attemptId"]) not in seen]
    return ids, new


def print_costs(mode: str, batches: int, cpu: dict, stages: list[dict]) -> None:
    """Print one run's load-independent costs per batch: CPU seconds by process and the
    stages by name (count, tasks, JVM task CPU)."""
    k = max(batches, 1)
    print(f"  cpu s/batch ({mode}): driver python {cpu['driver'] / k:.3f}, jvm "
          f"{cpu['jvm'] / k:.3f}, python workers {cpu['workers'] / k:.3f}, total "
          f"{cpu['tree'] / k:.3f}")
    by: dict[str, list] = {}
    for st in stages:
        a = by.setdefault(st["name"], [0, 0, 0.0])
        a[0] += 1
        a[1] += st["tasks"]
        a[2] += st["cpu_s"]
    for name, (n, tasks, cpu_s) in sorted(by.items(), key=lambda kv: -kv[1][1]):
        print(f"  stages/batch {n / k:4.2f} tasks/batch {tasks / k:5.1f} jvm task cpu s/batch "
              f"{cpu_s / k:.3f}  {name}")


def route_stage_cpu(spark: Any, path: str, num_partitions: int, tree: Any,
                    reps: int = 5) -> dict:
    """CPU seconds (the process tree's, ``tree()``) of one batch's routing map stage alone,
    run ``reps`` times after a warm-up, alternating: ours (the batch file ``path`` read as
    Arrow batches, cut by key and framed in a Python map task, written through the bridge's
    shuffle: :func:`~sparkbalance.state.pandas_state.arrow_input.arrow_pairs`,
    :func:`~sparkbalance.state.frames.route_chunks.batch_chunks`) and the JVM's hash
    repartition of the same DataFrame, map stage only (what Spark's own operator runs
    before its Python stage, and what a batch routed in the JVM would run instead).

    Examples
    --------
    >>> route_stage_cpu(spark, "batch-0.parquet", 8, tree_cpu)   # doctest: +SKIP
    {'ours': 0.22, 'jvm': 0.16}
    """
    from sparkbalance.state.control.layout import TableLayout
    from sparkbalance.state.frames.rdds import frame_ops
    from sparkbalance.state.frames.route_chunks import batch_chunks, shuffle_chunks
    from sparkbalance.state.pandas_state.arrow_input import arrow_pairs, arrow_schema
    df = spark.read.schema("k long, v long").parquet(path)
    fn, ops, sch = TableLayout(num_partitions, num_partitions).fn, frame_ops(
        spark.sparkContext), arrow_schema(df.schema)

    def ours() -> None:
        pairs = arrow_pairs(df, sch, [0])
        ops.run_map_stage(shuffle_chunks([batch_chunks(pairs, fn, 256)], num_partitions,
                                         fn, ops))

    def jvm() -> None:
        r = df.repartition(num_partitions, "k")._jdf.queryExecution().toRdd()
        dep = r.dependencies().head()
        while "ShuffleDependency" not in dep.getClass().getName():
            r = dep.rdd()
            dep = r.dependencies().head()
        spark.sparkContext._jsc.sc().submitMapStage(dep).get()

    cpu = {"ours": 0.0, "jvm": 0.0}
    aqe = spark.conf.get("spark.sql.adaptive.enabled")
    spark.conf.set("spark.sql.adaptive.enabled", "false")    # the plan's own shuffle
    try:
        ours(), jvm()
        for _ in range(reps):
            for name, run in (("ours", ours), ("jvm", jvm)):
                c0 = tree()
                run()
                cpu[name] += (tree() - c0) / reps
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", aqe)
    return cpu


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


class DriverProfile:
    """cProfile (wall clock) of the drop-in's ``foreachBatch`` calls while installed: where
    the driver's time in ``addBatch`` goes, jobs and py4j waits included (a function's
    cumulative time holds the jobs it waited for); :meth:`print` prints the ``top``
    functions by cumulative time, then by own time."""

    def __init__(self, top: int = 40) -> None:
        import cProfile
        self.top, self.prof, self.calls = top, cProfile.Profile(), 0
        self._orig: Any = None

    def __enter__(self) -> "DriverProfile":
        from sparkbalance.state.pandas_state.batch_driver import BatchDriver
        self._orig = orig = BatchDriver.__call__
        me = self

        def profiled(driver, df, batch_id):
            me.calls += 1
            return me.prof.runcall(orig, driver, df, batch_id)

        BatchDriver.__call__ = profiled
        return self

    def __exit__(self, *exc) -> None:
        import io
        import pstats
        from sparkbalance.state.pandas_state.batch_driver import BatchDriver
        BatchDriver.__call__ = self._orig
        out = io.StringIO()
        st = pstats.Stats(self.prof, stream=out)
        st.sort_stats("cumulative").print_stats(self.top)
        self.text = "\n".join("    " + ln for ln in out.getvalue().splitlines()[6:]
                              if ln.strip())
        own = io.StringIO()
        pstats.Stats(self.prof, stream=own).sort_stats("tottime").print_stats(self.top // 2)
        self.own = "\n".join("    " + ln for ln in own.getvalue().splitlines()[6:]
                             if ln.strip())

    def print(self) -> None:
        print(f"  driver profile over {self.calls} batches (cumulative s, all batches):")
        print(self.text)
        print("  ... by own time (the driver's Python work; py4j waits under the socket's "
              "recv):")
        print(self.own)


class LookaheadTrace:
    """Records each ``auto`` look-ahead decision while installed: the batch's chance of a
    move (``h``), a shift's lag (``shift``), the boundary price and a moving batch's extra
    it was weighed against, what exploring the price asked, and the answer."""

    def __init__(self) -> None:
        self.rows: list[dict] = []
        self._orig: Any = None

    def __enter__(self) -> "LookaheadTrace":
        import statistics
        from sparkbalance.state.control.lookahead import Lookahead
        self._orig = orig = Lookahead.wanted
        rows = self.rows

        def traced(la):
            out = orig(la)
            if la.mode == "auto":
                shift = (la.shift_s() if hasattr(la, "shift_s") else
                         statistics.median(la.shifts) if la.shifts else 0.0)
                rows.append({"h": round(la.hazard.chance(), 3), "shift": round(shift, 4),
                    "boundary": round(la.boundary_s, 4), "reroute": round(la.reroute_s, 4),
                    "explore": la.price.explore(), "wanted": out})
            return out

        Lookahead.wanted = traced
        return self

    def __exit__(self, *exc) -> None:
        from sparkbalance.state.control.lookahead import Lookahead
        Lookahead.wanted = self._orig

    def print(self) -> None:
        if not self.rows:
            return
        print(f"  look-ahead decisions ({sum(r['wanted'] for r in self.rows)} of "
              f"{len(self.rows)} looked): " + "; ".join(
                  f"{i}: {'Y' if r['wanted'] else 'n'} h={r['h']} shift={r['shift']} "
                  f"price={r['boundary']}+h*{r['reroute']} ask={r['explore']}"
                  for i, r in enumerate(self.rows)))
