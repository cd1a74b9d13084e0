"""Benchmark: balanced grouped-map pandas UDFs vs plain ``groupBy().applyInPandas`` (AQE on).

Two skewed grouped-map workloads, the per-group cost an I/O-like wait (``time.sleep``, so
the figures do not depend on how many cores the loaded machine lends us; n task slots =
``local[n]``):

  rows  : cost(k) = ROW_COST x rows(k)     (grows with group size; Zipf keys)
  const : cost(k) = GROUP_COST             (the same for every group; a more skewed Zipf:
                                            count weights misjudge it, time weights must not)

Methods (the same function, the same result):
  plain : df.groupBy("k").applyInPandas(f, schema) with AQE on (its partition coalescing
          off: on this small data AQE would merge all n partitions into one task and the
          comparison would measure that instead of skew; AQE never splits a group).
  count : sb.group_by(df, "k", num_partitions=n).applyInPandas(...)  (default strategy, key
          weights = rows; its statistics pass and planning are inside the wall time).
  time  : the same, keys priced by group_cost_stats from the task times a listener
          measured on one earlier `count` run (that measuring run is not timed).

Figures (medians over REPEATS interleaved runs): slowest task = longest run time of the
grouped-map stage's tasks (listener), wall = end-to-end seconds of the job (statistics and
planning included), bound = the lower bound of the slowest task,
max(max_k cost(k), sum_k cost(k) / n).

Usage: python integration/benchmarks/bench_grouped.py [--quick] [--slots 16 64]
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

import sparkbalance as sb  # noqa: E402
from sparkbalance.spark import group_cost_stats  # noqa: E402
from sparkbalance.spark.sql.keystats import key_stats  # noqa: E402
from sparkbalance.spark.metrics.listener import open_listener, sparkbalance_job_group  # noqa: E402

#: seconds per row of the "rows" workload and per group of the "const" one
ROW_COST = 5e-3
GROUP_COST = 0.25
WORKLOADS = {  # name: (rows, keys, zipf exponent)
    "rows": (30_000, 600, 0.8),
    "const": (30_000, 600, 1.1),
}
REPEATS = 3
SCHEMA = "k long, n long"


def zipf_keys(rows: int, num_keys: int, z: float, seed: int = 7) -> np.ndarray:
    """Keys 0..K-1 with P(rank r) ∝ r^-z, shuffled ids so heavy keys are not 0, 1, 2..."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, num_keys + 1) ** z
    ranks = rng.choice(num_keys, size=rows, p=p / p.sum())
    return rng.permutation(num_keys)[ranks].astype(np.int64)


def row_cost(pdf):
    import time as _t

    import pandas as pd
    _t.sleep(ROW_COST * len(pdf))
    return pd.DataFrame({"k": [int(pdf["k"].iloc[0])], "n": [len(pdf)]})


def group_cost(pdf):
    import time as _t

    import pandas as pd
    _t.sleep(GROUP_COST)
    return pd.DataFrame({"k": [int(pdf["k"].iloc[0])], "n": [len(pdf)]})


FUNCS = {"rows": row_cost, "const": group_cost}


def build_session(slots: int):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    jar = ROOT / "jvm_bridge" / "build" / "sparkbalance-bridge.jar"
    b = (SparkSession.builder.master(f"local[{slots}]").appName(f"bench-grouped-{slots}")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .config("spark.driver.memory", "2g")
         .config("spark.sql.shuffle.partitions", str(slots))
         .config("spark.sql.adaptive.enabled", "true")
         .config("spark.sql.adaptive.coalescePartitions.enabled", "false")
         .config("spark.python.worker.reuse", "true"))
    if jar.exists():
        b = b.config("spark.jars", str(jar))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run(spark, name, build):
    """(wall seconds, slowest task seconds) of one job; `build` makes the DataFrame."""
    group = f"bench-grouped-{name}-{time.monotonic_ns()}"
    with open_listener(spark, group) as lst, sparkbalance_job_group(spark, group):
        t0 = time.perf_counter()
        build().write.format("noop").mode("overwrite").save()
        wall = time.perf_counter() - t0
    tasks = lst.tasks(successful_only=True)
    last = max(t.stage_id for t in tasks)
    slowest = max(t.run_time_ms for t in tasks if t.stage_id == last) / 1e3
    return wall, slowest, lst


def bench(slots: int, quick: bool) -> list[dict]:
    spark = build_session(slots)
    out = []
    for wl, (rows, keys, z) in WORKLOADS.items():
        if quick:
            rows, keys = rows // 5, keys // 5
        k = zipf_keys(rows, keys, z)
        df = spark.createDataFrame([(int(x), i) for i, x in enumerate(k)], "k long, v long") \
            .repartition(8).cache()
        df.count()
        f = FUNCS[wl]
        counts = np.bincount(k, minlength=keys)
        cost = ROW_COST * counts if wl == "rows" else GROUP_COST * (counts > 0)
        bound = max(cost.max(), cost.sum() / slots)
        stats = key_stats(df, "k")  # the statistics pass the time-priced method reuses
        # warm-up (untimed): the first grouped-map job also starts the n Python workers,
        # which must not be priced into the groups nor timed
        run(spark, "warmup", lambda: df.groupBy("k").applyInPandas(f, SCHEMA))
        # one measured (untimed) count-weighted run: its task times price the groups
        g0 = sb.group_by(df, "k", num_partitions=slots, stats=stats)
        _, _, lst = run(spark, "measure", lambda: g0.applyInPandas(f, SCHEMA))
        priced, model = group_cost_stats(df, "k", listener=lst, current=g0.partitioner,
                                         stats=stats)
        methods = {
            "plain": lambda: df.groupBy("k").applyInPandas(f, SCHEMA),
            "count": lambda: sb.group_by(df, "k", num_partitions=slots).applyInPandas(
                f, SCHEMA),
            "time": lambda: sb.group_by(df, "k", num_partitions=slots, stats=priced)
            .applyInPandas(f, SCHEMA),
        }
        got: dict[str, list] = {m: [] for m in methods}
        for _ in range(1 if quick else REPEATS):
            for m, build in methods.items():  # interleaved: load swings hit all alike
                # count/time: the statistics job and the fit run when build() is called,
                # inside run(), so they are in the wall time
                wall, slowest, _ = run(spark, m, build)
                got[m].append((wall, slowest))
                print(f"  n={slots} {wl} {m}: wall {wall:.2f}s slowest {slowest:.2f}s",
                      flush=True)
        for m, xs in got.items():
            out.append({"slots": slots, "workload": wl, "method": m, "bound": bound,
                        "wall": statistics.median(x[0] for x in xs),
                        "slowest": statistics.median(x[1] for x in xs),
                        "model": (model.t0, model.alpha, model.beta)})
        df.unpersist()
    spark.stop()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    ap.add_argument("--slots", type=int, nargs="+", default=[16, 64])
    args = ap.parse_args(argv)
    rows = []
    for n in args.slots:
        rows += bench(n, args.quick)
        _table(rows)
    return 0


def _table(rows: list[dict]) -> None:
    print(f"\n{'n':>3} {'workload':<6} {'method':<6} {'slowest s':>9} {'/bound':>7} "
          f"{'wall s':>7} {'bound s':>8}  vs plain (slowest, wall)")
    for r in rows:
        base = next(x for x in rows if x["slots"] == r["slots"] and
                    x["workload"] == r["workload"] and x["method"] == "plain")
        print(f"{r['slots']:>3} {r['workload']:<6} {r['method']:<6} {r['slowest']:9.2f} "
              f"{r['slowest'] / r['bound']:7.2f} {r['wall']:7.2f} {r['bound']:8.2f}  "
              f"{base['slowest'] / r['slowest']:.2f}x, {base['wall'] / r['wall']:.2f}x")
    fitted = {(r["slots"], r["workload"]): r["model"] for r in rows}
    for (n, wl), (t0, a, b) in fitted.items():
        print(f"  fitted cost model n={n} {wl}: t0={t0:.3f}s alpha={a * 1e3:.3f}ms/row "
              f"beta={b * 1e3:.1f}ms/group")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
