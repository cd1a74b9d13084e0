"""Benchmark of the keyed state (issue 6).

A. Delta migration vs full repartition of the state when ~10 % of the state moves: wall
   time (median of repeats) and the bytes each one shuffles. Goal: <= 0.3x the time,
   exactly the moved bytes.
B. 30 batches of a shifting Zipf stream (seed 000 §5) under none / mixed / mintable / ssm:
   mean and p95 batch time, mean max/avg load, total state migrated (goal: Mixed <= half
   of MinTable's; seed 000 reports about a third).

``python integration/benchmarks/bench_state.py [--quick]`` (local[2]; plots to bench-out/).
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


def session():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    return (SparkSession.builder.master("local[2]").appName("bench-state")
            .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.memory", "2g").getOrCreate())


def bench_migration(spark, num_keys: int, payload: int, repeats: int, fraction: float = 0.10):
    from pyspark import StorageLevel

    from sparkbalance.routing.hash import home_partitions
    from sparkbalance.routing.table import RoutingTable
    from sparkbalance.state.layout import TableLayout
    from sparkbalance.state.migration import blocks_of, full_repartition, migrate
    from sparkbalance.state.window import StateFold

    sc = spark.sparkContext
    n = 4
    fold = StateFold(update=lambda s, v: s + v, initial=b"")
    lay0 = TableLayout(n, n)
    rng = np.random.default_rng(0)
    sizes = rng.integers(payload // 2, payload * 3 // 2, num_keys)

    def entry(k):
        state = bytes(int(sizes[k]))
        return (k, [state, fold.size_of(state, None), None])

    base = blocks_of(sc.parallelize(range(num_keys), n).map(entry), n, lay0.fn)
    base.persist(StorageLevel.MEMORY_AND_DISK)
    base.count()
    # move ~fraction of the bytes: random keys to another partition via table entries
    keys = rng.permutation(num_keys)
    home = home_partitions(keys, n)
    total = float(sum(fold.size_of(bytes(int(s)), None) for s in sizes))
    routes, moved = {}, 0.0
    for k, h in zip(keys.tolist(), home.tolist()):
        if moved >= fraction * total:
            break
        routes[k] = (h + 1) % n
        moved += fold.size_of(bytes(int(sizes[k])), None)
    fn = TableLayout(n, n, RoutingTable(routes, 1)).fn
    cands = frozenset(routes)   # the table delta: the only keys whose route changes
    rows = {"delta": [], "delta+view": [], "full": []}
    res = {}
    for _ in range(repeats):
        for name, f in (("delta", migrate), ("full", full_repartition)):
            t0 = time.perf_counter()
            if name == "delta":
                r = f(sc, base, fn, n, StorageLevel.MEMORY_AND_DISK, candidates=cands)
            else:
                r = f(sc, base, fn, n, StorageLevel.MEMORY_AND_DISK)
            rows[name].append(time.perf_counter() - t0)
            res[name] = r
            if name == "delta":
                # upper bound: also materialise the new blocks (stays ∪ arrivals) instead of
                # fusing the filter into the next batch's merge pass
                r.rdd.persist(StorageLevel.MEMORY_AND_DISK)
                r.rdd.count()
                rows["delta+view"].append(time.perf_counter() - t0)
                r.rdd.unpersist()
            r.cached.unpersist()
    base.unpersist()
    return rows, res, moved, total


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", default=str(ROOT / "bench-out"))
    p.add_argument("--skip-stream", action="store_true")
    p.add_argument("--skip-migration", action="store_true")
    p.add_argument("--partitions", type=int, default=4,
                   help="n of the stream part (= cores to see the straggler in batch time)")
    p.add_argument("--fluctuation", type=float, default=1.0,
                   help="f of seed 000 §5: load shifted per interval, in units of θ_ref")
    args = p.parse_args(argv)
    q = args.quick
    spark = session()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        # ---------------------------------------------------------------- A
        nk, payload, reps = (20_000, 200, 3) if q else (200_000, 1000, 5)
        if args.skip_migration:
            nk, reps = 1000, 1
        rows, res, planned, total = bench_migration(spark, nk, payload, reps)
        md, mf = statistics.median(rows["delta"]), statistics.median(rows["full"])
        print(f"\nA. migration of the keyed state: {nk} keys, {total / 1e6:.1f} MB, n=4, "
              f"~10% of the bytes move (median of {reps})")
        print(f"{'':>18} {'seconds':>8} {'keys shuffled':>14} {'MB shuffled':>12}")
        for name, label in (("delta", "delta (ours)"), ("delta+view", "delta + new blocks"),
                            ("full", "full repartition")):
            r = res["delta" if name.startswith("delta") else "full"]
            print(f"{label:>18} {statistics.median(rows[name]):8.2f} {r.keys_moved:14d} "
                  f"{r.bytes_moved / 1e6:12.2f}")
        mv = statistics.median(rows["delta+view"])
        print(f"time ratio delta/full = {md / mf:.2f} (goal <= 0.30); with the new blocks "
              f"materialised eagerly {mv / mf:.2f}; bytes ratio = "
              f"{res['delta'].bytes_moved / res['full'].bytes_moved:.3f}; delta moved exactly "
              f"the planned bytes: {abs(res['delta'].bytes_moved - planned) < 1e-6}")
        print("all timings: " + "; ".join(f"{k} {[round(x, 2) for x in v]}"
                                          for k, v in rows.items()))
        if args.skip_stream:
            return 0
        # ---------------------------------------------------------------- B
        from sparkbalance.demo.stream import (DEMO_PLANNERS, format_table, make_batches, plot,
                                              run_stream, summarise)
        nb, keys, recs, work = (12, 1000, 8000, 200) if q else (30, 5000, 20000, 1000)
        n = args.partitions
        batches = make_batches(keys, n, nb, recs, 1.0, args.fluctuation, seed=7)
        hist = {}
        for planner in DEMO_PLANNERS:
            hist[planner] = run_stream(spark, planner, batches, num_partitions=n, theta=0.08,
                                       window=3, progress=False, work=work)
        print(f"\nB. {nb} batches x {recs} records, {keys} keys, Zipf z=1.0, fluctuation "
              f"f={args.fluctuation}, n={n}, θ=0.08, window=3, {work} CPU steps/record "
              "(batch 0 excluded from times)")
        rows_b = summarise(hist)
        print(format_table(rows_b))
        by = {r["planner"]: r for r in rows_b}
        if by["mintable"]["bytes_moved"]:
            print(f"Mixed / MinTable migrated bytes = "
                  f"{by['mixed']['bytes_moved'] / by['mintable']['bytes_moved']:.2f} "
                  "(goal <= 0.5; seed 000 ~0.33)")
        print(f"mean batch time vs none: " + ", ".join(
            f"{r['planner']} {r['mean_s'] / by['none']['mean_s']:.2f}x" for r in rows_b))
        png = plot(hist, Path(args.out) / "bench_state_stream.png")
        if png:
            print(f"plot: {png}")
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
