"""Benchmark: ``with_window_columns`` vs plain ``df.withColumns`` of window columns (AQE on).

A family of cells: one key holds a share (``--shares``, default 10 %, 30 %, 90 %) of the rows
(``--rows``, default 2*10^5 and 10^6), the rest spread over KEYS keys; the windows are
``partitionBy("k").orderBy("ts")``. Two cases per cell:

  costly : row_number, a running sum and lag, then a costly per-row step after the window
           (a pandas UDF that waits ROW_COST seconds per row, an I/O-like wait, so the
           figures do not hang on how many cores the shared machine lends): plain Spark runs
           the hot key's rows, and so their per-row step, in one task.
  memory : rows padded with PAD bytes, a whole-partition sum, lag and a bounded average:
           plain Spark buffers the hot key's whole partition in one task (spilling past
           ``spark.sql.windowExec.buffer.spill.threshold``, set low here as a memory-bound
           job meets it); the split window holds a range per task.

Methods, run interleaved (plain, balanced, plain, ...), medians of REPEATS runs each:
  plain    : df.withColumns(cols) with AQE on (partition coalescing off: on this small data
             it would merge the n partitions and measure that instead of skew; AQE has no
             split for a window's partition key).
  balanced : with_window_columns(df, n, **cols) as a user calls it (payoff rule on): its
             statistics pass (one job) and planning are inside the wall time; where the
             rule runs plain Spark the cell says so (``split`` column).

Wall = seconds to write the result to the ``noop`` sink; CPU = user+system seconds of the
Spark JVM and every process under it (Python workers included), read from /proc.

Usage: python integration/benchmarks/bench_windows.py [--quick] [--slots 16] [--repeats 3]
       [--rows 200000,1000000] [--shares 0.1,0.3,0.9] [--cases costly,memory]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

HOT = 0.3
KEYS = 5000
ROW_COST = 20e-6     # seconds of the per-row step (an I/O-like wait)
PAD = 400            # bytes of padding per row in the memory case


def _proc_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and all its descendants (reaped children included)."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            text = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        stats[int(d)] = fields
        children.setdefault(int(fields[1]), []).append(int(d))
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        f = stats.get(p)
        if f is not None:
            total += sum(int(x) for x in f[11:15]) / tick  # utime stime cutime cstime
        todo.extend(children.get(p, []))
    return total


def build_session(slots: int):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master(f"local[{slots}]").appName("bench-windows")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "3g")
             .config("spark.sql.shuffle.partitions", str(slots))
             .config("spark.sql.adaptive.enabled", "true")
             .config("spark.sql.adaptive.coalescePartitions.enabled", "false")
             .config("spark.sql.windowExec.buffer.spill.threshold", "20000")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def data(spark, rows: int, pad: int, share: float = HOT):
    from pyspark.sql import functions as F
    hot = F.col("id") % 1000 < int(share * 1000)
    df = spark.range(rows).select(
        F.when(hot, F.lit(0)).otherwise(F.col("id") % KEYS + 1).alias("k"),
        F.col("id").alias("ts"), (F.col("id") * 7 % 13).alias("x"),
        *([F.repeat(F.lit("p"), pad).alias("pad")] if pad else []))
    return df.repartition(8).cache()


def _per_row_step(x: pd.Series, n: pd.Series) -> pd.Series:
    time.sleep(ROW_COST * len(x))   # an I/O-like wait per row
    return x.astype("float64") * 0.5 + n.astype("float64")


def cases(df_costly, df_memory):
    from pyspark.sql import Window, functions as F
    per_row_step = F.pandas_udf(_per_row_step, "double")
    w = Window.partitionBy("k").orderBy("ts")
    costly = {"n": F.row_number().over(w), "run": F.sum("x").over(w),
              "prev": F.lag("x").over(w)}
    memory = {"total": F.sum("x").over(Window.partitionBy("k")), "prev": F.lag("x").over(w),
              "near": F.avg("x").over(w.rowsBetween(-10, 10))}
    return {
        "costly": (df_costly, costly, lambda out: out.select(
            "k", per_row_step(F.col("run"), F.col("n")).alias("y"))),
        "memory": (df_memory, memory, lambda out: out.select("k", "total", "prev", "near",
                                                             F.length("pad").alias("p"))),
    }


def run_once(spark, method: str, df, cols, after, slots: int) -> tuple[float, float, bool]:
    from sparkbalance.spark.window.windows import with_window_columns
    pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    c0, t0 = _proc_cpu(pid), time.perf_counter()
    out = with_window_columns(df, slots, **cols) if method == "balanced" else df.withColumns(cols)
    q = after(out)
    q.write.format("noop").mode("overwrite").save()
    wall, cpu = time.perf_counter() - t0, _proc_cpu(pid) - c0
    split = "__sb_pid" in q._jdf.queryExecution().executedPlan().toString()
    return wall, cpu, split


def cell(spark, case: str, rows: int, share: float, slots: int, repeats: int) -> dict:
    df = data(spark, rows, PAD if case == "memory" else 0, share)
    df.count()
    _, cols, after = cases(df, df)[case]
    run_once(spark, "plain", df, cols, after, slots)   # warm-up, untimed
    times: dict[str, list[tuple[float, float, bool]]] = {"plain": [], "balanced": []}
    for _ in range(repeats):
        for method in ("plain", "balanced"):
            times[method].append(run_once(spark, method, df, cols, after, slots))
    df.unpersist()
    med = {m: (statistics.median(w for w, _, _ in v), statistics.median(c for _, c, _ in v))
           for m, v in times.items()}
    return {"case": case, "rows": rows, "hot_share": share, "slots": slots,
            "split": all(s for _, _, s in times["balanced"]),
            "plain_wall": med["plain"][0], "plain_cpu": med["plain"][1],
            "balanced_wall": med["balanced"][0], "balanced_cpu": med["balanced"][1],
            "wall_ratio": med["balanced"][0] / med["plain"][0],
            "cpu_ratio": med["balanced"][1] / med["plain"][1]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small data (a smoke run)")
    ap.add_argument("--slots", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rows", default=None, help="comma-separated row counts")
    ap.add_argument("--shares", default="0.1,0.3,0.9", help="hot key's shares of the rows")
    ap.add_argument("--cases", default="costly,memory")
    args = ap.parse_args()
    sizes = [int(float(r)) for r in (args.rows or ("60000" if args.quick
                                                   else "200000,1000000")).split(",")]
    shares = [float(x) for x in args.shares.split(",")]
    spark = build_session(args.slots)
    print(f"load average {os.getloadavg()}", flush=True)
    results = []
    for rows in sizes:
        for share in shares:
            for case in args.cases.split(","):
                r = cell(spark, case, rows, share, args.slots, args.repeats)
                results.append(r)
                print(f"{case:7s} rows={rows} hot={share:.0%} local[{args.slots}] "
                      f"split={'yes' if r['split'] else 'no '}: wall plain "
                      f"{r['plain_wall']:.2f}s balanced {r['balanced_wall']:.2f}s "
                      f"({r['wall_ratio']:.2f}x); cpu plain {r['plain_cpu']:.1f}s balanced "
                      f"{r['balanced_cpu']:.1f}s ({r['cpu_ratio']:.2f}x)", flush=True)
    print(f"load average {os.getloadavg()}", flush=True)
    print(json.dumps(results))
    spark.stop()


if __name__ == "__main__":
    main()
