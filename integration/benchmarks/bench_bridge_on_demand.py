"""A session without ``sb.configure`` vs one with it, on the README's default call.

``python integration/benchmarks/bench_bridge_on_demand.py [--runs 3] [--records N]``

Each run starts a fresh ``local[2]`` session in a child process (one Spark JVM per process,
and ``spark.jars`` only counts at launch): ``plain`` is the README's
``SparkSession.builder...getOrCreate()``, the bridge coming on first use; ``configured`` is
``sparkbalance.configure(builder)``. The job is ``sb.partition_by(pairs, 16)`` (strategy
"auto": zero-pass statistics when the bridge is there) over Zipf-skewed keys, then a costly
per-record step, counted; the first call (which pays the on-demand load) and a second one
are timed apart. Wall seconds and CPU seconds of the whole process tree (driver, JVM,
Python workers) per call. Runs interleave the two sessions; medians are printed.
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

ROOT = Path(__file__).resolve().parents[2]

_CHILD = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
from pyspark.sql import SparkSession
import sparkbalance as sb
from sparkbalance.bench.cpu import ProcessTreeCPU
from sparkbalance.bench.workloads import busy_work, loops_for_us, zipf_records
mode, records = sys.argv[2], int(sys.argv[3])
b = (SparkSession.builder.master("local[2]").appName("bench-on-demand-" + mode)
     .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false"))
spark = (sb.configure(b) if mode == "configured" else b).getOrCreate()
sc = spark.sparkContext
sc.setLogLevel("ERROR")
keys = zipf_records(20000, 1.1, records, seed=3)
pairs = sc.parallelize([(int(k), 1) for k in keys], 8).cache()
pairs.count()
loops = loops_for_us(20.0)

def costly(it):
    n = 0
    for k, v in it:
        busy_work(v, loops)
        n += 1
    yield n

cpu = ProcessTreeCPU()
out = {"mode": mode}
for call in ("first", "second"):
    c0, t0 = cpu.seconds(), time.perf_counter()
    per_part = sb.partition_by(pairs, 16).mapPartitions(costly).collect()
    out[call] = {"wall": time.perf_counter() - t0, "cpu": cpu.seconds() - c0,
                 "max_over_mean": max(per_part) / (sum(per_part) / len(per_part))}
print("RESULT " + json.dumps(out), flush=True)
spark.stop()
"""


def _child(mode: str, records: int) -> dict:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-c", _CHILD, str(ROOT), mode, str(records)],
                         capture_output=True, text=True, env=env, timeout=1200)
    for line in run.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(run.stderr[-4000:])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--records", type=int, default=200_000)
    args = ap.parse_args(argv)
    rows: dict[str, list[dict]] = {"plain": [], "configured": []}
    for run in range(args.runs):
        for mode in ("plain", "configured") if run % 2 == 0 else ("configured", "plain"):
            t0 = time.perf_counter()
            rows[mode].append(_child(mode, args.records))
            print(f"run {run} {mode}: {json.dumps(rows[mode][-1])} "
                  f"({time.perf_counter() - t0:.0f} s with start-up)", flush=True)
    print(f"\nmedians of {args.runs} interleaved runs, {args.records} Zipf(1.1) records, "
          "sb.partition_by(pairs, 16) + 20 us/record, local[2]")
    print(f"{'session':<11} {'call':<7} {'wall s':>7} {'cpu s':>7} {'max/avg':>8}")
    for mode, got in rows.items():
        for call in ("first", "second"):
            med = {k: statistics.median(r[call][k] for r in got)
                   for k in ("wall", "cpu", "max_over_mean")}
            print(f"{mode:<11} {call:<7} {med['wall']:7.2f} {med['cpu']:7.2f} "
                  f"{med['max_over_mean']:8.2f}")


if __name__ == "__main__":
    main()
