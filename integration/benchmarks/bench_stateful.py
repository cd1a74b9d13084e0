"""Benchmark: ``stateful(grouped).applyInPandasWithState`` against Spark's own
``applyInPandasWithState`` on the same parquet file stream (one file per trigger).

Two streams: a skewed one whose hot keys move (the shifting Zipf stream of Fang et al.
§5, :mod:`sparkbalance.bench.shifting`, hot keys moving every ``--interval`` batches) and
uniform keys (z = 0). The user function keeps a running count per key and does
``--work-us`` of I/O-like work (sleep) per record, as a state function that looks records
up elsewhere would. Runs alternate (Spark, ours, Spark, ours, ...) so background load hits
both alike; the table has the median over runs of the mean batch seconds (wall) and the
CPU seconds of the whole process tree (driver, JVM, Python workers) per batch, their
ratio, and whether the final states agree.

The session is ``local[n]`` with n = state partitions, so the n tasks of a batch wait side
by side even on few cores and the slowest partition sets the batch time.

``python integration/benchmarks/bench_stateful.py --quick`` (a few minutes), or with
``--batches 20 --rows 20000 --partitions 8 --runs 3`` for the setting of the issue.
``--modes spark,sparkbalance,sb-rows`` adds ours with rows through ``DataFrame.rdd`` (the
path before the Arrow chunks); beside wall and CPU each row has load-independent counts
per batch: Spark jobs, stages and tasks, py4j calls of the driver, and the driver's CPU.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import pandas as pd

from sparkbalance.bench.shifting import shifting_zipf_counts
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


def make_stream(folder: str, batches: int, rows: int, keys: int, partitions: int, z: float,
                interval: int, seed: int) -> None:
    os.makedirs(folder, exist_ok=True)
    it = shifting_zipf_counts(keys, partitions, batches, z=z, records_per_batch=rows,
                              seed=seed, batches_per_interval=interval)
    rng = np.random.default_rng(seed)
    for t, (k, c) in enumerate(it):
        rep = np.repeat(k, c)
        rng.shuffle(rep)
        pd.DataFrame({"k": rep.astype(np.int64), "v": np.ones(len(rep), np.int64)}).to_parquet(
            os.path.join(folder, f"b{t:04d}.parquet"))


def count_with_work(key, pdfs, state):
    n = sum(len(p) for p in pdfs)
    time.sleep(n * WORK_US * 1e-6)          # I/O-like work per record
    total = (state.get[0] if state.exists else 0) + n
    state.update((total,))
    yield pd.DataFrame({"k": [key[0]], "n": [total]})


class Py4JCalls:
    """Counts the driver's py4j commands (round trips to the JVM) while installed."""

    def __init__(self) -> None:
        self.count = 0
        self._saved: list = []

    def __enter__(self) -> "Py4JCalls":
        from py4j import clientserver, java_gateway
        for cls in (clientserver.ClientServerConnection, java_gateway.GatewayConnection):
            orig = cls.send_command

            def counted(conn, command, *args, _orig=orig, **kw):
                self.count += 1
                return _orig(conn, command, *args, **kw)

            self._saved.append((cls, orig))
            cls.send_command = counted
        return self

    def __exit__(self, *exc) -> None:
        for cls, orig in self._saved:
            cls.send_command = orig


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
#: ours with rows through ``DataFrame.rdd`` (the path before the Arrow chunks).
MODES = ("spark", "sparkbalance", "sb-rows")


def run_once(spark, src: str, mode: str, batches: int, partitions: int,
             lookahead: str | None = None) -> dict:
    ck = tempfile.mkdtemp(prefix=f"sb-bench-{mode}-")
    last: dict = {}

    def keep(df, batch_id):
        for r in df.collect():
            last[r.k] = r.n

    df = spark.readStream.schema("k long, v long").option("maxFilesPerTrigger", 1).parquet(src)
    grouped = df.groupBy("k")
    if mode != "spark":
        args = {} if lookahead is None else {"lookahead": lookahead}
        grouped = stateful(grouped, num_partitions=partitions,
                           arrow_input=None if mode == "sparkbalance" else False, **args)
    w = (grouped.applyInPandasWithState(count_with_work, "k long, n long", "n long", "Update",
                                        "NoTimeout")
         .writeStream.outputMode("update").foreachBatch(keep)
         .option("checkpointLocation", ck))
    counts0 = _spark_counts(spark)
    cpu0, t0 = _tree_cpu_seconds(), time.perf_counter()
    drv0 = time.process_time()
    with Py4JCalls() as calls:
        q = w.start()
        q.processAllAvailable()
    wall, cpu = time.perf_counter() - t0, _tree_cpu_seconds() - cpu0
    drv = time.process_time() - drv0
    q.stop()
    jobs, stages, tasks = (b - a for a, b in zip(counts0, _spark_counts(spark)))
    if mode != "spark":
        w.driver.op.close()
    shutil.rmtree(ck, ignore_errors=True)
    return {"batch_s": wall / batches, "cpu_s": cpu / batches, "state": dict(last),
            "driver_cpu_s": drv / batches, "py4j": calls.count / batches,
            "jobs": jobs / batches, "stages": stages / batches, "tasks": tasks / batches}


def main(argv: list[str] | None = None) -> None:
    global WORK_US
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--keys", type=int, default=5_000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--interval", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work-us", type=int, default=WORK_US)
    ap.add_argument("--modes", default="spark,sparkbalance",
                    help=f"comma-separated, of {', '.join(MODES)} (sb-rows: ours with rows "
                         "through DataFrame.rdd instead of Arrow chunks)")
    ap.add_argument("--lookahead", default=None,
                    help="our operator's lookahead (default: the drop-in's)")
    ap.add_argument("--streams", default="skewed,uniform")
    ap.add_argument("--quick", action="store_true",
                    help="6 batches of 4000 rows, 4 partitions, 2 runs (indicative only)")
    a = ap.parse_args(argv)
    modes = a.modes.split(",")
    if modes[0] != "spark" or any(m not in MODES for m in modes):
        ap.error(f"--modes {a.modes!r}; expected 'spark' first, then some of {MODES[1:]}")
    if a.quick:
        a.batches, a.rows, a.keys, a.partitions, a.runs, a.interval = 6, 4000, 2000, 4, 2, 2
    WORK_US = a.work_us
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master(f"local[{a.partitions}]")
             .appName("sparkbalance-bench-stateful")
             .config("spark.sql.shuffle.partitions", str(a.partitions))
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.ui.retainedJobs", "100000")
             .config("spark.ui.retainedStages", "100000").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    base = tempfile.mkdtemp(prefix="sb-bench-stateful-")
    print(f"{a.batches} batches x {a.rows} rows, {a.keys} keys, {a.partitions} partitions, "
          f"{a.work_us} us/record, medians of {a.runs} alternating runs")
    print("per batch: wall s and tree CPU s (median over runs; ratio = ours / spark), then "
          "jobs, stages, tasks, py4j calls and driver CPU s (median)")
    print(f"{'stream':9} {'mode':13} {'wall':>7} {'ratio':>6} {'cpu':>6} {'ratio':>6} "
          f"{'jobs':>5} {'stages':>6} {'tasks':>6} {'py4j':>6} {'drv cpu':>7} {'state':>6}")
    try:
        # One discarded run per mode first: the process's one-time costs (the bridge's
        # classes, py4j's first lookups, the JIT) fall on no measured run.
        warm = os.path.join(base, "warmup")
        make_stream(warm, 2, 200, 50, a.partitions, 1.0, a.interval, seed=2)
        for mode in modes:
            run_once(spark, warm, mode, 2, a.partitions, a.lookahead)
        for name in a.streams.split(","):
            z = {"skewed": 1.0, "uniform": 0.0}[name]
            src = os.path.join(base, name)
            make_stream(src, a.batches, a.rows, a.keys, a.partitions, z, a.interval, seed=1)
            res: dict[str, list] = {m: [] for m in modes}
            for _ in range(a.runs):
                for mode in modes:       # alternating: background load hits all alike
                    res[mode].append(run_once(spark, src, mode, a.batches, a.partitions,
                                              a.lookahead))
            med = {m: {f: statistics.median(r[f] for r in rs) for f in
                       ("batch_s", "cpu_s", "jobs", "stages", "tasks", "py4j",
                        "driver_cpu_s")} for m, rs in res.items()}
            ref = res["spark"][0]["state"]
            for m in modes:
                d, sp = med[m], med["spark"]
                same = all(r["state"] == ref for r in res[m])
                print(f"{name:9} {m:13} {d['batch_s']:7.3f} {d['batch_s'] / sp['batch_s']:6.2f} "
                      f"{d['cpu_s']:6.2f} {d['cpu_s'] / sp['cpu_s']:6.2f} {d['jobs']:5.1f} "
                      f"{d['stages']:6.1f} {d['tasks']:6.1f} {d['py4j']:6.0f} "
                      f"{d['driver_cpu_s']:7.3f} {'exact' if same else 'DIFFER':>6}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
