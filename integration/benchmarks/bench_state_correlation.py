"""Keyed state on a stream whose hot keys follow phase-shifted periodic loads (time zones).

The workload of Xing et al. §5 (square-wave input rates with phase offsets, ratio 4) on
Spark: ``--hot`` heavy keys in four "time zones" whose load is 4x higher during half of
every period of ``--period`` batches, zone z shifted by z/4 of a period, on top of
``--light`` light keys with a steady Zipf load. Every planner runs the same batches in a
fresh :class:`~sparkbalance.KeyedStateOperator`, interleaved batch by batch in a rotating
order; the update costs ``--io-us`` µs of I/O-like wait per record, so with
``local[n]`` task slots act as cores and a batch waits for its slowest partition.

Reported per planner (medians over ``--repeats`` runs): mean and p95 batch seconds, mean
max/avg load of the routed batches, migrations, state moved, and whether the final state
equals a plain-Python count per key (exactness). A placement that co-locates zones in
antiphase keeps every partition flat; a snapshot planner (Mixed, SSM) re-plans at every
phase change.

Run: ``python integration/benchmarks/bench_state_correlation.py [--quick]``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sparkbalance import KeyedStateOperator  # noqa: E402
from sparkbalance.bench.report import format_table, summarise  # noqa: E402
from sparkbalance.bench.session import local_session, warm_up  # noqa: E402
from sparkbalance.bench.workloads import busy_count  # noqa: E402

ZONES = 4
RATIO = 4.0


def phased_batches(num_batches: int, records: int, hot: int, light: int, period: int,
                   hot_share: float, seed: int = 0) -> list[list[tuple[int, int]]]:
    """Batches of ``(key, 1)``: hot keys 0..hot-1 in zone ``k % 4``, light keys after them."""
    rng = np.random.default_rng(seed)
    light_w = np.arange(1, light + 1, dtype=float) ** -0.8
    light_w /= light_w.sum()
    out = []
    for t in range(num_batches):
        on = np.array([((t + (k % ZONES) * period / ZONES) % period) < period / 2
                       for k in range(hot)])
        hot_w = np.where(on, RATIO, 1.0)
        hot_w = hot_share * hot_w / hot_w.sum()
        w = np.concatenate([hot_w, (1 - hot_share) * light_w])
        counts = rng.multinomial(records, w / w.sum())
        keys = np.repeat(np.arange(hot + light), counts)
        rng.shuffle(keys)
        out.append([(int(k), 1) for k in keys.tolist()])
    return out


def run_once(spark, planners, batches, n, theta, io_us, seed) -> tuple[dict, dict]:
    sc = spark.sparkContext
    ops = {p: KeyedStateOperator(spark, n, update_values=busy_count(0, io_us), initial=0,
                                 planner=p, theta=theta, window=None) for p in planners}
    want: Counter = Counter()
    try:
        for t, b in enumerate(batches):
            want.update(k for k, _ in b)
            k = (t + seed) % len(planners)
            for p in list(planners[k:]) + list(planners[:k]):
                ops[p].process(sc.parallelize(b, n), batch_id=t).count()
        exact = {p: ops[p].collect_state() == dict(want) for p in planners}
        return {p: list(ops[p].history) for p in planners}, exact
    finally:
        for op in ops.values():
            op.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--planners", default="none,mixed,ssm,correlation")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--batches", type=int, default=48)
    ap.add_argument("--records", type=int, default=6000)
    ap.add_argument("--hot", type=int, default=16)
    ap.add_argument("--light", type=int, default=2000)
    ap.add_argument("--hot-share", type=float, default=0.6)
    ap.add_argument("--period", type=int, default=8)
    ap.add_argument("--theta", type=float, default=0.2)
    ap.add_argument("--io-us", type=float, default=100.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="16 batches, 1 run")
    args = ap.parse_args()
    if args.quick:
        args.batches, args.repeats, args.records = 16, 1, 2000
    planners = args.planners.split(",")
    spark = local_session(args.partitions, "bench-state-correlation")
    warm_up(spark, args.partitions)
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
          f"{args.batches} batches x {args.records} records, {args.hot} hot keys in "
          f"{ZONES} zones (ratio {RATIO:g}, period {args.period}), n = {args.partitions}, "
          f"θ = {args.theta}, {args.io_us:g} µs per record", flush=True)
    batches = phased_batches(args.batches, args.records, args.hot, args.light, args.period,
                             args.hot_share)
    runs, exact_all = [], {p: True for p in planners}
    t0 = time.perf_counter()
    for r in range(args.repeats):
        hist, exact = run_once(spark, planners, batches, args.partitions, args.theta,
                               args.io_us, r)
        runs.append(summarise(hist))
        for p, ok in exact.items():
            exact_all[p] &= ok
        print(f"run {r + 1}/{args.repeats} done ({time.perf_counter() - t0:.0f} s)",
              flush=True)
    rows = []
    for i, p in enumerate(planners):
        per = [run[i] for run in runs]
        rows.append({k: (statistics.median(x[k] for x in per)
                         if isinstance(per[0][k], (int, float)) else per[0][k])
                     for k in per[0]})
    print(format_table(rows))
    print("p95 vs none: " + ", ".join(
        f"{r['planner']} {r['p95_s'] / rows[0]['p95_s']:.2f}" for r in rows))
    print("state exact against the plain-Python count: "
          + ", ".join(f"{p} {'yes' if ok else 'NO'}" for p, ok in exact_all.items()))
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    spark.stop()


if __name__ == "__main__":
    main()
