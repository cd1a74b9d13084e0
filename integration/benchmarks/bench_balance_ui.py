"""Overhead of the Spark plugin and the balance records.

Each operation posts one record, so what the records add to an operation is the cost of
one :func:`sparkbalance.spark.report.balance_log.post` (append to the Python log, one JSON
string, one py4j call; in the JVM: parse, metrics, a listener event, the status store)
over the operation's own time. Measured here in one process with the plugin: a balanced
``repartition(df, n, "k")`` (statistics job + placement + count) and a keyed-state batch
(``KeyedStateOperator.process`` + count), median over repeats, and ``post`` of a record the
size of theirs (n loads before and after), median over many calls. Also the operations
again in a process *without* the plugin, for the passive cost (a status-queue listener that
ignores other events, and the tab): on a shared machine that difference is noise-bound,
which the table says.

``python integration/benchmarks/bench_balance_ui.py [--repeats 3] [--posts 300]``
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
sys.path.insert(0, str(ROOT))

N = 8             # partitions
ROWS = 200_000    # rows of the repartitioned DataFrame (skewed keys)
BATCH = 10_000    # records of a keyed-state batch


def _record(n: int, kind: str) -> dict:
    return {"kind": kind, "operation": "bench", "key": "k", "strategy": "mixed",
            "num_partitions": n, "loads_before": [float(i) for i in range(n)],
            "loads_after": [float(n) / 2] * n, "lower_bound": n / 2.0, "table_size": 40,
            "plan_seconds": 0.003, "job_ids": [1, 2, 3], "operator": "bench-op", "batch": 1}


def measure(plugin: bool, repeats: int, posts: int) -> dict:
    import numpy as np
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from sparkbalance.spark.report import balance_log as bl
    from sparkbalance.spark.sql.dataframe import repartition
    from sparkbalance.state.operator import KeyedStateOperator

    builder = (SparkSession.builder.master("local[2]").appName("bench-balance-ui")
               .config("spark.ui.port", "0").config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.sql.shuffle.partitions", str(N)))
    spark = (bl.configure(builder) if plugin else builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    sc = spark.sparkContext
    rng = np.random.default_rng(7)
    # rand^3 piles the keys near 0: a few hot keys, a long tail (generated in the JVM).
    df = spark.range(ROWS).select((F.pow(F.rand(7), 3) * 5000).cast("int").alias("k"),
                                  F.lit(1).alias("v")).cache()
    df.count()
    keys = (rng.zipf(1.3, BATCH * (repeats + 1)) % 5000).astype(int).tolist()

    def time_it(fn) -> list[float]:
        fn()  # warm-up
        out = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
        return out

    rep = time_it(lambda: repartition(df, N, "k", strategy="mixed").count())
    print(f"[{'on' if plugin else 'off'}] repartition {rep}", file=sys.stderr, flush=True)
    op = KeyedStateOperator(sc, N, update=lambda s, v: s + v, initial=0, planner="mixed")
    batches = [sc.parallelize([(k, 1) for k in keys[i * BATCH:(i + 1) * BATCH]], N)
               for i in range(repeats + 1)]
    it = iter(batches)
    state = time_it(lambda: op.process(next(it)).count())
    print(f"[{'on' if plugin else 'off'}] state batch {state}", file=sys.stderr, flush=True)
    out = {"plugin": plugin, "active": bl.plugin_active(spark),
           "repartition_s": statistics.median(rep), "state_batch_s": statistics.median(state)}
    if plugin:
        rec = _record(N, "state")
        bl.post(spark, rec)  # first post looks the member up
        t = []
        for _ in range(posts):
            t0 = time.perf_counter()
            bl.post(spark, rec)
            t.append(time.perf_counter() - t0)
        out["post_s"] = statistics.median(t)
        out["post_p95_s"] = sorted(t)[int(0.95 * len(t))]
    op.close()
    spark.stop()
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--posts", type=int, default=300)
    p.add_argument("--child", choices=["on", "off"], help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        print("RESULT " + json.dumps(measure(a.child == "on", a.repeats, a.posts)), flush=True)
        return 0
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    res = {}
    for mode in ("on", "off"):  # one JVM per process: the plugin is fixed at start
        proc = subprocess.run([sys.executable, __file__, "--child", mode, "--repeats",
                               str(a.repeats), "--posts", str(a.posts)],
                              env=env, stdout=subprocess.PIPE, text=True)
        line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
        if line is None:
            return 1
        res[mode] = json.loads(line[len("RESULT "):])
    on, off = res["on"], res["off"]
    assert on["active"] and not off["active"], res
    post = on["post_s"]
    print(f"post() of one record (n={N} loads): median {post * 1e6:.0f} µs, "
          f"p95 {on['post_p95_s'] * 1e6:.0f} µs")
    print(f"{'operation':<24}{'with plugin s':>14}{'without s':>11}{'post/op':>10}"
          f"{'with/without':>14}")
    for name, key in (("balanced repartition", "repartition_s"),
                      ("keyed-state batch", "state_batch_s")):
        print(f"{name:<24}{on[key]:>14.3f}{off[key]:>11.3f}{post / on[key]:>10.3%}"
              f"{on[key] / off[key]:>14.3f}")
    print("post/op: what one record adds to the operation (goal <= 1 %); with/without: the "
          "same operation in two processes, noise-bound on a shared machine")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
