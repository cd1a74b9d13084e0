"""Benchmark the task-metrics listeners and time-aware grouping (TAG, Yang et al.).

Part 1 - listener overhead: a JVM-only job of N tiny tasks (``spark.range(N, N
partitions)`` written to the ``noop`` sink: one stage, no Python workers, so the
listener's cost is not hidden behind task work). Configurations, interleaved per
repeat: no listener / pure-py4j listener / JVM recorder. Reports the median job wall
time, the median time until every task is recorded (job + listener-bus drain), their
ratio to "none", tasks recorded and events dropped by the listener bus.

Part 2 - stage makespan on a heterogeneous workload: Zipf-skewed keys routed into n
partitions; a record on a slow partition costs SLOW_FACTOR x (a per-record sleep chosen
by partition id: a slow or busy executor). Routings: plain Spark hash, TAG with equal
t_i (count-weighted), TAG with t_i measured by the listener on the count-weighted run
(time-weighted). Makespan = max task run time of the routed stage (also: stage wall
time). Lower bound: the ideal makespan L* = W / sum_i (1/t_i) with W the total work in
fast-record units, and ALGORITHMS' max(1, max c / L-bar) for unsplit keys.

Usage: python integration/benchmarks/bench_listener.py [--quick] [--repeats R] [--tasks N]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sparkbalance.spark.session.bridge import bridge_available, session_builder_with_bridge  # noqa: E402
from sparkbalance.spark.metrics.jvm_recorder import JvmTaskMetricsListener  # noqa: E402
from sparkbalance.spark.metrics.listener import (  # noqa: E402
    TaskMetricsListener, dropped_listener_events, open_listener, sparkbalance_job_group)
from sparkbalance.stats.timeweights import completion_times  # noqa: E402

SLOW_FACTOR = 4.0          # heterogeneous executors: some partitions 4x slower per record
BASE_SECONDS = 0.002       # per-record sleep on a fast partition (dominates task overhead)
GROUP = "sparkbalance-bench-listener"


def make_session(slots: int):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    b = (SparkSession.builder.master(f"local[{slots}]").appName("bench_listener")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .config("spark.driver.memory", "2g"))
    spark = session_builder_with_bridge(b).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# ----------------------------------------------------------------------------- part 1
def run_overhead(spark, n_tasks: int, repeats: int) -> list[dict]:
    sc = spark.sparkContext
    kinds = ["none", "py4j", "py4j-acc"] + (["jvm"] if bridge_available(spark) else [])
    df = spark.range(0, n_tasks, 1, n_tasks)
    for _ in range(2):  # warm-up (JIT, classes)
        df.write.format("noop").mode("overwrite").save()
    res: dict[str, dict[str, list]] = {k: {"job": [], "all": [], "tasks": [], "dropped": []}
                                       for k in kinds}
    for rep in range(repeats):
        for kind in kinds:
            lst = None
            if kind == "py4j":
                lst = TaskMetricsListener(spark, decode="json")
            elif kind == "py4j-acc":
                lst = TaskMetricsListener(spark, decode="accessors")
            elif kind == "jvm":
                lst = JvmTaskMetricsListener(spark)
            before = sum(dropped_listener_events(spark).values())
            if lst is not None:
                lst.attach()
            t0 = time.perf_counter()
            df.write.format("noop").mode("overwrite").save()
            t_job = time.perf_counter() - t0
            if lst is not None:
                lst.flush(timeout_s=600)
            else:  # same drain for fairness (other queues)
                sc._jsc.sc().listenerBus().waitUntilEmpty(600_000)
            t_all = time.perf_counter() - t0
            n_rec = len(lst.tasks(flush=False)) if lst is not None else 0
            if lst is not None:
                lst.detach()
            dropped = sum(dropped_listener_events(spark).values()) - before
            r = res[kind]
            r["job"].append(t_job), r["all"].append(t_all)
            r["tasks"].append(n_rec), r["dropped"].append(dropped)
            print(f"  rep {rep} {kind:8s} job {t_job:6.2f}s  recorded {t_all:6.2f}s  "
                  f"tasks {n_rec}  dropped {dropped}", flush=True)
    base_job = statistics.median(res["none"]["job"])
    base_all = statistics.median(res["none"]["all"])
    rows = []
    for k in kinds:
        r = res[k]
        mj, ma = statistics.median(r["job"]), statistics.median(r["all"])
        rows.append(dict(kind=k, job=mj, all=ma, job_ratio=mj / base_job, all_ratio=ma / base_all,
                         tasks=min(r["tasks"]), dropped=max(r["dropped"])))
    return rows


# ----------------------------------------------------------------------------- part 2
def zipf_keys(num_records: int, num_keys: int, s: float, seed: int = 7) -> list[int]:
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, num_keys + 1) ** s
    return rng.choice(num_keys, size=num_records, p=p / p.sum()).tolist()


def _sleeper(slow: frozenset, base: float, factor: float):
    def work(pid, it):
        delay = base * (factor if pid in slow else 1.0)
        c, debt = 0, 0.0
        for _ in it:
            c += 1
            debt += delay
            if debt >= 0.005:  # sleep in >= 5 ms slices: less timer overhead per record
                time.sleep(debt)
                debt = 0.0
        if debt:
            time.sleep(debt)
        yield pid, c
    return work


def run_routed(spark, pairs_rdd, f, n, slow, label):
    """Route with f, run the per-record sleep, return (records per partition, tasks, stage)."""
    from sparkbalance.spark.rdd.adapters import partition_by

    sc = spark.sparkContext
    with open_listener(spark, GROUP) as lst, sparkbalance_job_group(sc, GROUP):
        routed = (partition_by(pairs_rdd, n, f) if f is not None else pairs_rdd.partitionBy(n))
        out = dict(routed.mapPartitionsWithIndex(_sleeper(slow, BASE_SECONDS, SLOW_FACTOR))
                   .collect())
    tasks = lst.tasks(successful_only=True)
    last = max(t.stage_id for t in tasks)
    stage_tasks = [t for t in tasks if t.stage_id == last]
    stage = [s for s in lst.stages() if s.stage_id == last][-1]
    records = np.array([out.get(i, 0) for i in range(n)], dtype=float)
    return dict(label=label, records=records, tasks=tasks,
                makespan=max(t.run_time_ms for t in stage_tasks) / 1000.0,
                stage_wall=(stage.wall_time_ms or 0) / 1000.0)


def run_makespan(spark, n: int, num_records: int, repeats: int) -> tuple[list[dict], dict]:
    from sparkbalance.strategies.splitting import fit_tag
    from sparkbalance.stats.keystats import KeyStats

    sc = spark.sparkContext
    slow = frozenset({n - 1})                   # one partition in n is SLOW_FACTOR x slower
    t_true = np.array([SLOW_FACTOR if i in slow else 1.0 for i in range(n)])
    keys = zipf_keys(num_records, 500, 0.8)
    pairs = sc.parallelize([(k, 1) for k in keys], n).cache()
    pairs.count()
    sc.parallelize(range(4 * n), 2 * n).map(lambda v: v).count()  # warm the Python workers
    uniq, cnt = np.unique(keys, return_counts=True)
    stats = KeyStats(uniq.astype(np.int64), cnt.astype(float))
    # Ideal makespan: all partitions finish together, m_i proportional to 1/t_i (Yang et al., TAG, eq. 3).
    l_star = num_records * BASE_SECONDS / float(np.sum(1.0 / t_true))
    l_bar = num_records * BASE_SECONDS / n      # mean load at fast speed (count view)
    lb_ratio = max(1.0, float(cnt.max()) * BASE_SECONDS / l_bar)
    res: dict[str, list] = {"hash (plain Spark)": [], "TAG count-weighted": [],
                            "TAG time-weighted": []}
    t_meas_all, l_meas_all = [], []
    for rep in range(repeats):
        f_count = fit_tag(stats, n)
        r_hash = run_routed(spark, pairs, None, n, slow, "hash (plain Spark)")
        r_count = run_routed(spark, pairs, f_count, n, slow, "TAG count-weighted")
        t_sec = completion_times(r_count["tasks"], n, records=r_count["records"],
                                 stage_id=max(t.stage_id for t in r_count["tasks"]))
        t_meas = t_sec / t_sec.mean()
        t_meas_all.append(t_meas)
        # Ideal makespan with the measured seconds per record (includes sleep overshoot and
        # per-task overhead spread over records): m / sum_i 1/r_i.
        l_meas_all.append(num_records / float(np.sum(1.0 / t_sec)))
        f_time = fit_tag(stats, n, completion_times=t_meas)
        r_time = run_routed(spark, pairs, f_time, n, slow, "TAG time-weighted")
        for r in (r_hash, r_count, r_time):
            res[r["label"]].append(r)
            print(f"  rep {rep} {r['label']:20s} makespan {r['makespan']:6.3f}s  stage "
                  f"{r['stage_wall']:6.3f}s  records {r['records'].astype(int).tolist()}",
                  flush=True)
    pairs.unpersist()
    rows = []
    for label, rs in res.items():
        mk = statistics.median(r["makespan"] for r in rs)
        sw = statistics.median(r["stage_wall"] for r in rs)
        rows.append(dict(label=label, makespan=mk, stage_wall=sw, ratio=mk / l_star,
                         ratio_meas=mk / statistics.median(l_meas_all),
                         records=rs[-1]["records"].astype(int).tolist()))
    ideal = np.round(num_records * (1 / t_true) / np.sum(1 / t_true)).astype(int).tolist()
    info = dict(l_star=l_star, l_meas=statistics.median(l_meas_all), lb_ratio=lb_ratio,
                t_measured=np.median(t_meas_all, axis=0), t_true=t_true / t_true.mean(),
                ideal_records=ideal)
    return rows, info


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, one repeat (~1 min)")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--tasks", type=int, default=None, help="tiny tasks in part 1 (20000)")
    ap.add_argument("--skip-overhead", action="store_true")
    ap.add_argument("--skip-makespan", action="store_true")
    a = ap.parse_args(argv)
    repeats = a.repeats or (1 if a.quick else 3)
    n_tasks = a.tasks or (2000 if a.quick else 20000)
    n_part = 4
    spark = make_session(n_part)
    try:
        print(f"bridge jar on classpath: {bridge_available(spark)}")
        if not a.skip_overhead:
            print(f"\n== listener overhead: {n_tasks} tiny tasks, {repeats} repeats ==")
            rows = run_overhead(spark, n_tasks, repeats)
            print(f"{'listener':8s} {'job s':>8s} {'x none':>7s} {'recorded s':>11s} "
                  f"{'x none':>7s} {'tasks':>7s} {'dropped':>8s}")
            for r in rows:
                print(f"{r['kind']:8s} {r['job']:8.2f} {r['job_ratio']:7.3f} {r['all']:11.2f} "
                      f"{r['all_ratio']:7.3f} {r['tasks']:7d} {r['dropped']:8d}")
        if not a.skip_makespan:
            num_records = 1200 if a.quick else 4000
            print(f"\n== stage makespan: {num_records} records, Zipf keys, n={n_part}, "
                  f"partition {n_part - 1} x{SLOW_FACTOR:g} slower, {repeats} repeats ==")
            rows, info = run_makespan(spark, n_part, num_records, repeats)
            print(f"ideal makespan L* = {info['l_star']:.3f}s; max(1, max c / L-bar) = "
                  f"{info['lb_ratio']:.3f}; t_i measured (mean 1) = "
                  f"{np.round(info['t_measured'], 2).tolist()} vs true "
                  f"{np.round(info['t_true'], 2).tolist()}")
            print(f"ideal makespan from measured rates L*m = {info['l_meas']:.3f}s; ideal "
                  f"records per partition {info['ideal_records']}")
            print(f"{'routing':20s} {'makespan s':>10s} {'x L*':>6s} {'x L*m':>6s} "
                  f"{'stage s':>8s}  records")
            for r in rows:
                print(f"{r['label']:20s} {r['makespan']:10.3f} {r['ratio']:6.2f} "
                      f"{r['ratio_meas']:6.2f} {r['stage_wall']:8.3f}  {r['records']}")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
