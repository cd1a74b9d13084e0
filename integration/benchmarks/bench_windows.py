"""Benchmark: ``with_window_columns`` vs plain ``df.withColumns`` of window columns (AQE on).

A family of cells: one key holds a share (``--shares``, default 10 %, 30 %, 90 %) of the rows
(``--rows``, default 2*10^5 and 10^6), the rest spread over KEYS keys; the windows are
``partitionBy("k").orderBy("ts")``. Two cases per cell:

  costly : row_number, a running sum and lag, then a costly per-row step after the window
           (a pandas UDF that waits ROW_COST seconds per row, an I/O-like wait, so the
           figures do not hang on how many cores the shared machine lends): plain Spark runs
           the hot key's rows, and so their per-row step, in one task.
  memory : rows padded with PAD bytes, a whole-partition sum, lag and a bounded average:
           Spark's WindowExec buffers a window partition's whole group, so plain Spark holds
           the hot key's rows in one task; its execution memory (a share of the local JVM's
           heap, ``--driver-memory``, split between the running tasks) runs out and it
           spills. The split window holds one range per task and stays in memory. Spark's
           row-count spill thresholds (``spark.sql.windowExec.buffer.spill.threshold``) keep
           their defaults: the spill is memory pressure, not a configured count.
           ``--metrics`` prints the bytes each method spills. In local mode all tasks share
           one memory pool, so the split's 16 concurrent tasks spill too; with
           ``--master local-cluster[E,C,M]`` each executor JVM has M MiB of its own (C task
           slots), as on a cluster: plain Spark's hot task has one executor's memory for the
           whole key, each of the split's tasks one range.

The memory-bound set-up (``--memory-bound``): ``--cases memory --master
local-cluster[4,1,512] --driver-memory 1g --rows 600000 --pad 1024 --shares 0.3,0.9``:
four executor JVMs of 512 MiB and one task slot each (an execution pool of
(512 - 300) * 0.6 = 127 MiB a task), 16 partitions, rows of about 1.1 KiB (hex digests of
the id, which compress to about half: the spill reaches the disk), the table cached on disk
only (its cache takes none of the pool), Spark's window spill thresholds at their defaults,
and the payoff rule told the truth: no ``--cores``, so it counts this machine's cores (two
here) and the spill its memory model predicts for plain Spark's hot task
(:mod:`sparkbalance.spark.window.memory`). Plain Spark's hot task then spills for real (task
metrics ``memoryBytesSpilled``/``diskBytesSpilled``, printed per cell). The earlier set-up
(4*10^5 rows of 400 repeated letters, ``--cores 16``) spilled 60 MiB (0.2 MiB to disk) at
30 % and 384 MiB (9 MiB to disk) at 90 %: cheap, while the split's extra CPU could not
spread over two real cores that ``--cores 16`` told the rule it could (1.84x and 1.33x
plain Spark's wall on a quiet machine). In local mode (one JVM, one memory pool for every
task) the spill is not robust: at 10^6 rows with ``--driver-memory 3g`` plain Spark spills
92 MiB (2 MiB on disk) at 30 % hot and nothing at 90 % (the hot task has the whole pool
once the others finish).

Methods, run interleaved (plain, balanced, plain, ...), medians of REPEATS runs each:
  plain    : df.withColumns(cols) with AQE on (partition coalescing off: on this small data
             it would merge the n partitions and measure that instead of skew; AQE has no
             split for a window's partition key).
  balanced : with_window_columns(df, n, **cols) as a user calls it (payoff rule on): its
             statistics pass (one job) and planning are inside the wall time; where the
             rule runs plain Spark the cell says so (``split`` column).

Both methods are run once per cell before the timed runs (Python workers, code generation
and the JIT warm for either); every cell, 2*10^5 rows included, reports wall and CPU.

Wall = seconds to write the result to the ``noop`` sink; CPU = user+system seconds of the
Spark JVM and every process under it (Python workers included), read from /proc.

``--metrics`` runs each method once per cell and prints, per stage, the tasks, executor CPU
and GC seconds and bytes spilled (memory / disk) from Spark's status store, and the CPU of
every thread of the driver and executor JVMs and the Python workers by kind (tasks, JIT,
GC, shuffle, the driver's own; :func:`thread_cpu`): figures that do not hang on the
machine's load.

Usage: python integration/benchmarks/bench_windows.py [--quick] [--slots 16] [--repeats 3]
       [--rows 200000,1000000] [--shares 0.1,0.3,0.9] [--cases costly,memory]
       [--driver-memory 3g] [--master local-cluster[4,1,1024]] [--split auto]
       [--cores 16] [--pad 400] [--metrics] [--memory-bound]
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


#: JVM and Python thread names (``/proc/<pid>/task/<tid>/comm``, 15 characters) by the
#: work they do: where a run's CPU goes outside the tasks.
_THREAD_KINDS = (("jit", ("C1 CompilerThre", "C2 CompilerThre")),
                 ("gc", ("GC Thread", "G1 ", "GC ")),
                 ("tasks", ("Executor task",)),
                 ("shuffle", ("shuffle-", "rpc-", "netty", "dispatcher")),
                 ("driver", ("Thread-", "java", "dag-scheduler", "py4j")))


def _kind(name: str, python: bool) -> str:
    if python:
        return "python"
    return next((k for k, prefixes in _THREAD_KINDS if name.startswith(prefixes)), "other")


def thread_cpu(pid: int) -> dict[tuple[int, int], tuple[str, float]]:
    """CPU seconds of every thread of ``pid`` and its descendants, by (pid, tid): the
    thread's kind (:data:`_THREAD_KINDS`) and its user+system seconds. A difference of two
    readings attributes a run's CPU to the JIT, GC, the tasks, the driver's planning, in
    the driver JVM and in the executor JVMs (``local-cluster``) apart."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                text = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(text[text.rindex(")") + 2:].split()[1]), []).append(int(d))
    out, todo = {}, [pid]
    while todo:
        p = todo.pop()
        role = "driver" if p == pid else "executor"
        todo.extend(children.get(p, []))
        try:
            python = "python" in Path(f"/proc/{p}/comm").read_text()
            tids = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tids:
            try:
                text = Path(f"/proc/{p}/task/{t}/stat").read_text()
            except OSError:
                continue
            name = text[text.index("(") + 1:text.rindex(")")]
            f = text[text.rindex(")") + 2:].split()
            kind = _kind(name, python)
            out[(p, int(t))] = (kind if python else f"{role} {kind}",
                                (int(f[11]) + int(f[12])) / tick)
    return out


def thread_delta(before: dict, after: dict) -> dict[str, float]:
    """CPU seconds per thread kind between two :func:`thread_cpu` readings."""
    out: dict[str, float] = {}
    for key, (kind, cpu) in after.items():
        out[kind] = out.get(kind, 0.0) + cpu - before.get(key, (kind, 0.0))[1]
    return {k: round(v, 2) for k, v in sorted(out.items())}


def build_session(slots: int, memory: str = "3g", master: str | None = None):
    """``local[slots]`` by default; ``master`` (e.g. ``local-cluster[4,1,1024]``: executors
    with fixed memory each) runs the executors as separate JVMs, each with the memory the
    master names, and the driver with ``memory``."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    path = os.pathsep.join([str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(
        os.pathsep) if p])
    os.environ["PYTHONPATH"] = path   # executors' Python workers import this package
    from pyspark.sql import SparkSession
    b = (SparkSession.builder.master(master or f"local[{slots}]").appName("bench-windows")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .config("spark.driver.memory", memory)
         .config("spark.sql.shuffle.partitions", str(slots))
         .config("spark.sql.adaptive.enabled", "true")
         .config("spark.sql.adaptive.coalescePartitions.enabled", "false"))
    if master and master.startswith("local-cluster"):
        mem = master.rstrip("]").split(",")[-1].strip()
        b = (b.config("spark.executor.memory", f"{mem}m")
             .config("spark.executorEnv.PYTHONPATH", path)
             .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def data(spark, rows: int, pad: int, share: float = HOT):
    """The cell's table, cached. A padded one (the memory case) is padded with hex digests
    of the row's id (about half of it survives compression, unlike a repeated letter) and
    cached on disk only: its cache then takes none of the executors' memory pool, all of
    which is the windows' execution memory."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    hot = F.col("id") % 1000 < int(share * 1000)
    digests = [F.sha2(F.concat(F.col("id").cast("string"), F.lit(f"-{j}")), 512)
               for j in range(-(-pad // 128))]
    df = spark.range(rows).select(
        F.when(hot, F.lit(0)).otherwise(F.col("id") % KEYS + 1).alias("k"),
        F.col("id").alias("ts"), (F.col("id") * 7 % 13).alias("x"),
        *([F.substring(F.concat(*digests), 1, pad).alias("pad")] if pad else []))
    df = df.repartition(8)
    return df.persist(StorageLevel.DISK_ONLY) if pad else df.cache()


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
        # the step reads every window column: a column the query drops is pruned from
        # plain Spark's plan, but not the halo copies the split made for it
        "costly": (df_costly, costly, lambda out: out.select(
            "k", per_row_step(F.col("run") + F.coalesce(F.col("prev"), F.lit(0)),
                              F.col("n")).alias("y"))),
        "memory": (df_memory, memory, lambda out: out.select("k", "total", "prev", "near",
                                                             F.length("pad").alias("p"))),
    }


def run_once(spark, method: str, df, cols, after, slots: int, plan: dict | None = None
             ) -> tuple[float, float, bool]:
    """(wall, CPU, split?) of one run; ``plan`` (when given) receives the size of the plan
    the action ran: its physical operators, joins and exchanges before adaptive execution,
    and the driver JVM's JIT compilation milliseconds during the run."""
    from sparkbalance.spark.window.windows import with_window_columns
    jvm = spark.sparkContext._jvm
    pid = int(jvm.java.lang.ProcessHandle.current().pid())
    jit = jvm.java.lang.management.ManagementFactory.getCompilationMXBean()
    j0 = jit.getTotalCompilationTime()
    th0 = thread_cpu(pid) if plan is not None else {}
    c0, t0 = _proc_cpu(pid), time.perf_counter()
    out = with_window_columns(df, slots, **cols) if method == "balanced" else df.withColumns(cols)
    q = after(out)
    q.write.format("noop").mode("overwrite").save()
    wall, cpu = time.perf_counter() - t0, _proc_cpu(pid) - c0
    qe = q._jdf.queryExecution()
    split = "__sb_pid" in qe.executedPlan().toString()
    if plan is not None:
        ops = [ln.strip(" :+-") for ln in str(qe.sparkPlan().treeString()).splitlines()]
        ops = [o for o in ops if o]
        plan.update(operators=len(ops), joins=sum("Join" in o.split(" ")[0] for o in ops),
                    exchanges=sum(o.startswith(("Exchange", "BroadcastExchange"))
                                  for o in ops),
                    jit_ms=int(jit.getTotalCompilationTime() - j0),
                    threads=thread_delta(th0, thread_cpu(pid)))
    return wall, cpu, split


def operator_rows(spark) -> list[tuple[str, int]]:
    """The last SQL execution's operators with their output rows (SQL metrics "number of
    output rows", summed over tasks), in plan order: where each method's rows go."""
    store = spark._jsparkSession.sharedState().statusStore()
    execs = store.executionsList()
    last = max((execs.apply(i) for i in range(execs.size())), key=lambda e: e.executionId())
    values = store.executionMetrics(last.executionId())
    nodes = store.planGraph(last.executionId()).allNodes()
    out = []
    for i in range(nodes.size()):
        node = nodes.apply(i)
        rows = None
        ms = node.metrics()
        for j in range(ms.size()):
            m = ms.apply(j)
            if m.name() == "number of output rows" and values.contains(m.accumulatorId()):
                text = str(values.apply(m.accumulatorId())).split("\n")[0]
                digits = "".join(ch for ch in text.split("(")[0] if ch.isdigit())
                rows = int(digits) if digits else None
        out.append((str(node.name()), rows))
    return out


def _stages(spark) -> list:
    """Every stage in the status store: (id, tasks, executor CPU s, run s, memory and disk
    bytes spilled, name, GC s, rows written to and read from the shuffle)."""
    store = spark.sparkContext._jsc.sc().statusStore()
    defaults = [getattr(store, f"stageList$default${i}")() for i in range(2, 6)]
    seq = store.stageList(None, *defaults)
    out = []
    for i in range(seq.size()):
        s = seq.apply(i)
        out.append((int(s.stageId()), int(s.numTasks()), s.executorCpuTime() / 1e9,
                    s.executorRunTime() / 1e3, int(s.memoryBytesSpilled()),
                    int(s.diskBytesSpilled()), str(s.name()).split(" at ")[0],
                    s.jvmGcTime() / 1e3, int(s.shuffleWriteRecords()),
                    int(s.shuffleReadRecords())))
    return sorted(out)


def metrics(spark, case: str, rows: int, share: float, slots: int, pad: int = PAD) -> dict:
    """One run of each method with its stages' load-independent figures: tasks, executor
    CPU seconds (JVM threads), bytes spilled."""
    df = data(spark, rows, pad if case == "memory" else 0, share)
    df.count()
    _, cols, after = cases(df, df)[case]
    for method in ("plain", "balanced"):   # warm-up (Python workers, codegen, JIT)
        run_once(spark, method, df, cols, after, slots)
    out = {}
    for method in ("plain", "balanced"):
        seen = {s[0] for s in _stages(spark)}
        plan: dict = {}
        _, cpu, split = run_once(spark, method, df, cols, after, slots, plan)
        new = [s for s in _stages(spark) if s[0] not in seen]
        print(f"{case} rows={rows} hot={share:.0%} {method} split={split}: "
              f"{len(new)} stages, {sum(s[1] for s in new)} tasks, executor CPU "
              f"{sum(s[2] for s in new):.1f}s, process CPU {cpu:.1f}s, spilled "
              f"{sum(s[4] for s in new) / 2**20:.0f} MiB memory / "
              f"{sum(s[5] for s in new) / 2**20:.0f} MiB disk, GC {sum(s[7] for s in new):.1f}s, "
              f"{sum(s[8] for s in new)} rows written to the shuffle; the action's physical "
              f"plan {plan['operators']} operators ({plan['joins']} joins, "
              f"{plan['exchanges']} exchanges), JIT {plan['jit_ms'] / 1e3:.1f}s, CPU outside "
              f"the tasks {cpu - sum(s[2] for s in new):.1f}s", flush=True)
        for s in new:
            print(f"    stage {s[0]:4d} {s[1]:3d} tasks cpu {s[2]:6.2f}s run {s[3]:6.2f}s "
                  f"gc {s[7]:5.2f}s spill {s[4] / 2**20:7.1f}/{s[5] / 2**20:6.1f} MiB "
                  f"shuffle rows w {s[8]:8d} r {s[9]:8d}  {s[6]}",
                  flush=True)
        print(f"    CPU by thread kind (every JVM and Python worker): {plan['threads']}",
              flush=True)
        ops = operator_rows(spark)
        print(f"    operators with rows ({len(ops)}): "
              + "; ".join(f"{o} {r}" if r is not None else o for o, r in ops), flush=True)
        out[method] = {"stages": len(new), "tasks": sum(s[1] for s in new),
                       "executor_cpu": sum(s[2] for s in new), "process_cpu": cpu,
                       "spill_memory": sum(s[4] for s in new),
                       "spill_disk": sum(s[5] for s in new),
                       "shuffle_rows_written": sum(s[8] for s in new), **plan}
    df.unpersist()
    return {"case": case, "rows": rows, "hot_share": share, **out}


def _spilled(spark, seen: set) -> tuple[int, int]:
    """Bytes spilled (memory, disk) by the stages not in ``seen`` (task metrics)."""
    new = [st for st in _stages(spark) if st[0] not in seen]
    return sum(st[4] for st in new), sum(st[5] for st in new)


def cell(spark, case: str, rows: int, share: float, slots: int, repeats: int,
         pad: int = PAD) -> dict:
    df = data(spark, rows, pad if case == "memory" else 0, share)
    df.count()
    _, cols, after = cases(df, df)[case]
    for method in ("plain", "balanced"):   # warm-up of both, untimed
        run_once(spark, method, df, cols, after, slots)
    times: dict[str, list[tuple[float, float, bool]]] = {"plain": [], "balanced": []}
    spill: dict[str, list[tuple[int, int]]] = {"plain": [], "balanced": []}
    for _ in range(repeats):
        for method in ("plain", "balanced"):
            seen = {st[0] for st in _stages(spark)}
            times[method].append(run_once(spark, method, df, cols, after, slots))
            spill[method].append(_spilled(spark, seen))
    df.unpersist()
    med = {m: (statistics.median(w for w, _, _ in v), statistics.median(c for _, c, _ in v))
           for m, v in times.items()}
    return {"case": case, "rows": rows, "hot_share": share, "slots": slots,
            "split": all(s for _, _, s in times["balanced"]),
            "plain_wall": med["plain"][0], "plain_cpu": med["plain"][1],
            "balanced_wall": med["balanced"][0], "balanced_cpu": med["balanced"][1],
            "wall_ratio": med["balanced"][0] / med["plain"][0],
            "cpu_ratio": med["balanced"][1] / med["plain"][1],
            # medians of the bytes each method's runs spilled (memory, disk)
            "plain_spill": [statistics.median(x[i] for x in spill["plain"]) for i in (0, 1)],
            "balanced_spill": [statistics.median(x[i] for x in spill["balanced"])
                               for i in (0, 1)]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small data (a smoke run)")
    ap.add_argument("--slots", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rows", default=None, help="comma-separated row counts")
    ap.add_argument("--shares", default="0.1,0.3,0.9", help="hot key's shares of the rows")
    ap.add_argument("--cases", default="costly,memory")
    ap.add_argument("--driver-memory", default="3g",
                    help="the local JVM's heap: small enough that plain Spark's hot task spills")
    ap.add_argument("--master", default=None,
                    help="e.g. local-cluster[4,1,1024]: executors with fixed memory each "
                         "(default local[SLOTS])")
    ap.add_argument("--split", default="auto", choices=("auto", "always", "never"),
                    help="spark.sparkbalance.window.split: 'always' measures the split where "
                         "the payoff rule would run plain Spark")
    ap.add_argument("--cores", type=int, default=None,
                    help="spark.sparkbalance.window.cores: the cores the payoff rule assumes "
                         "(e.g. 16: local[16] as the 16-core cluster it emulates; default: "
                         "the slots capped by this machine's cores)")
    ap.add_argument("--metrics", action="store_true",
                    help="one run of each method per cell, with per-stage tasks, CPU, spill")
    ap.add_argument("--pad", type=int, default=None,
                    help=f"bytes of padding per row in the memory case (default {PAD}; "
                         "1024 with --memory-bound)")
    ap.add_argument("--memory-bound", action="store_true",
                    help="the memory-bound set-up (module docstring): the memory case on "
                         "local-cluster[4,1,512], driver 1g, 6*10^5 rows of 1 KiB padding, "
                         "30 %% and 90 %% hot, the payoff rule told the machine's real cores; "
                         "explicit --rows/--shares/--cores/--master/--pad win")
    args = ap.parse_args()
    if args.memory_bound:
        args.cases = "memory"
        args.master = args.master or "local-cluster[4,1,512]"
        args.driver_memory = "1g" if args.driver_memory == "3g" else args.driver_memory
        args.rows = args.rows or "600000"
        args.shares = "0.3,0.9" if args.shares == "0.1,0.3,0.9" else args.shares
        args.pad = 1024 if args.pad is None else args.pad
    args.pad = PAD if args.pad is None else args.pad
    sizes = [int(float(r)) for r in (args.rows or ("60000" if args.quick
                                                   else "200000,1000000")).split(",")]
    shares = [float(x) for x in args.shares.split(",")]
    spark = build_session(args.slots, args.driver_memory, args.master)
    spark.conf.set("spark.sparkbalance.window.split", args.split)
    if args.cores is not None:
        spark.conf.set("spark.sparkbalance.window.cores", str(args.cores))
    print(f"load average {os.getloadavg()}", flush=True)
    results = []
    for rows in sizes:
        for share in shares:
            for case in args.cases.split(","):
                if args.metrics:
                    results.append(metrics(spark, case, rows, share, args.slots, args.pad))
                    continue
                r = cell(spark, case, rows, share, args.slots, args.repeats, args.pad)
                results.append(r)
                print(f"{case:7s} rows={rows} hot={share:.0%} "
                      f"{args.master or f'local[{args.slots}]'} n={args.slots} "
                      f"split={'yes' if r['split'] else 'no '}: wall plain "
                      f"{r['plain_wall']:.2f}s balanced {r['balanced_wall']:.2f}s "
                      f"({r['wall_ratio']:.2f}x); cpu plain {r['plain_cpu']:.1f}s balanced "
                      f"{r['balanced_cpu']:.1f}s ({r['cpu_ratio']:.2f}x); spilled (memory/disk "
                      f"MiB) plain {r['plain_spill'][0] / 2**20:.0f}/"
                      f"{r['plain_spill'][1] / 2**20:.0f} balanced "
                      f"{r['balanced_spill'][0] / 2**20:.0f}/"
                      f"{r['balanced_spill'][1] / 2**20:.0f}", flush=True)
    print(f"load average {os.getloadavg()}", flush=True)
    print(json.dumps(results))
    spark.stop()


if __name__ == "__main__":
    main()
