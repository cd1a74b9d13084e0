"""Benchmark of the interval planners of seed 003 (Ding et al.; issue 4).

1. SSM planning time for m in {64, 256, 1024} tasks and n' in {8, 16, 64} nodes (median of
   repeats) and the measured growth exponents in m and n' (paper: < 2 ms at m = 64, n' = 16
   in Java; O(m^2 n')).
2. Migration cost of SSM vs MTM-aware vs consistent hashing vs Storm default over 100
   node-count changes in [8, 16] driven by an hourly series with a daily pattern (seed 003
   §6: nodes proportional to tweets per hour, MTM learned on the previous month, gamma 0.8,
   m = 64), for tau in {0.1, 0.2, 0.5, 1.2}. Cost = state moved per migration, as a % of the
   total state (Fig. 9's axis); CH averaged over its random seeds.
3. PMC time locally and on Spark (a local[2] session created here).

Run: ``python integration/benchmarks/bench_intervals.py [--quick] [--no-spark]``.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sparkbalance.planning.intervals import (SSM, ConsistentHashing, MTMAware,  # noqa: E402
                                             StormDefault, pmc, transition_matrix)

PAPER_M = 64            # seed 003 §6 default number of tasks
PAPER_GAMMA = 0.8       # seed 003 §6 default discount factor
NODES = (8, 16)         # seed 003 §6: node counts normalised into [8, 16]


def median_time(fn, repeats: int) -> float:
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def slope(xs, ys) -> float:
    """Least-squares slope of log(y) on log(x): the measured growth exponent."""
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


# --- 1. SSM time --------------------------------------------------------------------------

def bench_ssm_time(quick: bool) -> None:
    ms = (64, 256) if quick else (64, 256, 1024)
    ns = (8, 16, 64)
    taus = (0.2, 1.2)
    rng = np.random.default_rng(0)
    print("\n== 1. SSM planning time (median ms; n = n'-2 nodes before, lognormal work) ==")
    print(f"{'tau':>5} {'m':>6} " + " ".join(f"{'n=' + str(n):>10}" for n in ns)
          + f" {'feasible':>9}")
    table: dict[tuple[float, int, int], float] = {}
    for tau in taus:
        for m in ms:
            w = rng.lognormal(0, 0.5, m)
            s = rng.random(m) + 0.5
            row, feas = [], []
            for n2 in ns:
                b = np.linspace(0, m, max(n2 - 2, 1) + 1).round().astype(np.int64)
                planner = SSM(tau)
                reps = 3 if (quick or m >= 1024) else 9
                t = median_time(lambda: planner.plan(w, s, b, n2), reps)
                table[(tau, m, n2)] = t
                feas.append(planner.plan(w, s, b, n2).feasible)
                row.append(f"{1000 * t:10.3f}")
            print(f"{tau:5.1f} {m:6d} " + " ".join(row) + f" {sum(feas):>6}/{len(feas)}")
    for tau in taus:
        em = [slope(ms, [table[(tau, m, n2)] for m in ms]) for n2 in ns]
        en = [slope(ns, [table[(tau, m, n2)] for n2 in ns]) for m in ms]
        print(f"tau={tau}: growth exponent in m (per n') = "
              + ", ".join(f"{e:.2f}" for e in em)
              + f"; in n' (per m) = " + ", ".join(f"{e:.2f}" for e in en))
    # worst case of the band: all work in the last n' tasks, so every interval may span
    # almost all tasks (D ~ m) and the DP does its full O(m^2 n') work
    print("worst-case band (w = 0 except the last n' tasks; D ~ m), tau=0.2, median ms:")
    wm = (64, 256) if quick else (64, 256, 512)
    wn = (8, 16, 64)
    worst = {}
    for m in wm:
        row = []
        for n2 in wn:
            w = np.zeros(m)
            w[-n2:] = 1.0
            b = np.linspace(0, m, max(n2 - 2, 1) + 1).round().astype(np.int64)
            planner = SSM(0.2)
            worst[(m, n2)] = median_time(lambda: planner.plan(w, np.ones(m), b, n2), 3)
            row.append(f"{1000 * worst[(m, n2)]:10.2f}")
        print(f"{'':5} {m:6d} " + " ".join(row))
    print("worst case: growth exponent in m (per n') = "
          + ", ".join(f"{slope(wm, [worst[(m, n2)] for m in wm]):.2f}" for n2 in wn)
          + "; in n' (per m) = "
          + ", ".join(f"{slope(wn, [worst[(m, n2)] for n2 in wn]):.2f}" for m in wm)
          + "  (O(m^2 n') predicts 2 and 1)")
    t = table[(1.2, 64, 16)]
    print(f"m=64, n'=16, tau=1.2 (paper defaults): {1000 * t:.3f} ms; paper's Java bound 2 ms "
          f"-> ratio {t / 0.002:.2f}")
    t2 = table[(0.2, 64, 16)]
    print(f"m=64, n'=16, tau=0.2: {1000 * t2:.3f} ms")


# --- 2. migration cost over a daily pattern -----------------------------------------------

def daily_series(hours: int, rng: np.random.Generator) -> np.ndarray:
    """Node counts per hour in [8, 16] from a tweets-per-hour-like series with a daily cycle."""
    t = np.arange(hours)
    day = 1 + 0.6 * np.sin(2 * np.pi * (t % 24) / 24 - 1.2) + 0.25 * np.sin(4 * np.pi * t / 24)
    week = 1 + 0.1 * np.sin(2 * np.pi * t / (24 * 7))
    noise = np.exp(rng.normal(0, 0.08, hours))
    load = day * week * noise
    lo, hi = np.quantile(load, 0.02), np.quantile(load, 0.98)
    return np.clip(np.round(NODES[0] + (NODES[1] - NODES[0]) * (load - lo) / (hi - lo)),
                   *NODES).astype(int)


def changes(series: np.ndarray, count: int) -> tuple[int, list[int]]:
    out, prev = [], int(series[0])
    for v in series[1:]:
        if int(v) != prev:
            out.append(int(v))
            prev = int(v)
        if len(out) == count:
            break
    return int(series[0]), out


def run_intervals(planner, w, s, start: int, seq: list[int]) -> tuple[float, int, float]:
    m = w.shape[0]
    bounds = np.linspace(0, m, start + 1).round().astype(np.int64)
    total, feas, secs = 0.0, 0, 0.0
    for n2 in seq:
        t0 = time.perf_counter()
        plan = planner.plan(w, s, bounds, n2)
        secs += time.perf_counter() - t0
        total += plan.migration_cost
        feas += plan.feasible
        bounds = plan.bounds
    return total, feas, secs


def run_ch(w, s, start: int, seq: list[int], tau: float, seed: int) -> tuple[float, int]:
    ch = ConsistentHashing(w.shape[0], tau=tau, seed=seed)
    ch.plan(w, s, start)
    total, feas = 0.0, 0
    for n2 in seq:
        r = ch.plan(w, s, n2)
        total += r.migration_cost
        feas += r.feasible
    return total, feas


def ssm_chain_layouts(w, s, series: np.ndarray, tau: float) -> dict[int, list[np.ndarray]]:
    """Layouts SSM went through on a past series: PMC candidates when enumeration is too big."""
    start, seq = changes(series, 10 ** 9)
    b = np.linspace(0, w.shape[0], start + 1).round().astype(np.int64)
    out: dict[int, list[np.ndarray]] = {}
    for n2 in seq:
        b = SSM(tau).plan(w, s, b, n2).bounds
        out.setdefault(n2, []).append(b)
    return out


def run_costs(label: str, w, s, train, test, taus, samples: int, ch_runs: int,
              limit: int) -> None:
    start, seq = changes(test, 100)
    mtm = transition_matrix(train)
    total_state = float(s.sum())
    print(f"\n-- {label}: m={w.shape[0]}, nodes {int(test.min())}..{int(test.max())}, "
          f"{len(seq)} changes within {np.flatnonzero(np.diff(test))[len(seq) - 1] + 1} h; "
          f"MTM from {int(np.count_nonzero(np.diff(train)))} changes of the previous month")
    print(f"{'tau':>5} {'SSM':>7} {'MTM':>7} {'CH':>7} {'Storm':>7} | {'Storm/SSM':>9} "
          f"{'CH/SSM':>7} {'MTM/SSM':>8} | {'feasible SSM/MTM/CH/Storm':>26} | "
          f"{'PMC s':>6} {'P':>6} {'exact':>5}")
    for tau in taus:
        c_ssm, f_ssm, _ = run_intervals(SSM(tau), w, s, start, seq)
        planner = MTMAware(mtm, gamma=PAPER_GAMMA, tau=tau, samples=samples, seed=1,
                           max_partitionings=limit)
        t0 = time.perf_counter()
        res = planner.precompute(w, s, candidates=ssm_chain_layouts(w, s, train, tau))
        t_pmc = time.perf_counter() - t0
        c_mtm, f_mtm, _ = run_intervals(planner, w, s, start, seq)
        c_storm, f_storm, _ = run_intervals(StormDefault(tau), w, s, start, seq)
        ch = [run_ch(w, s, start, seq, tau, seed) for seed in range(ch_runs)]
        c_ch = float(np.mean([c for c, _ in ch]))
        f_ch = float(np.mean([f for _, f in ch]))
        k = len(seq)
        pct = {name: 100 * c / k / total_state for name, c in
               (("SSM", c_ssm), ("MTM", c_mtm), ("CH", c_ch), ("Storm", c_storm))}
        feas = f"{f_ssm}/{f_mtm}/{f_ch:.0f}/{f_storm} of {k}"
        print(f"{tau:5.1f} {pct['SSM']:7.2f} {pct['MTM']:7.2f} {pct['CH']:7.2f} "
              f"{pct['Storm']:7.2f} | {pct['Storm'] / pct['SSM']:9.2f} "
              f"{pct['CH'] / pct['SSM']:7.2f} {pct['MTM'] / pct['SSM']:8.3f} | {feas:>26} | "
              f"{t_pmc:6.1f} {res.num_partitionings:6d} {str(res.exact):>5}", flush=True)


def bench_costs(quick: bool) -> dict:
    rng = np.random.default_rng(42)
    m = PAPER_M
    w = rng.lognormal(0, 0.4, m)                 # work per task (hash-spread words: mild skew)
    s = w * rng.uniform(0.5, 1.5, m)             # state roughly follows work
    train = daily_series(24 * 30, rng)           # "the previous month" -> MTM
    test = daily_series(24 * 30, rng)
    taus = (0.2, 1.2) if quick else (0.1, 0.2, 0.5, 1.2)
    ch_runs = 10 if quick else 100
    samples = 10 if quick else 20
    print(f"\n== 2. Migration cost per migration, % of all state moved (gamma={PAPER_GAMMA}) ==")
    print("PMC candidates (m=64 is far beyond enumeration): min-max layouts, random balanced "
          "layouts, the layouts SSM went through on the training month, and SSM's moves "
          "between them; the online choice always also scores SSM's own plan")
    run_costs("paper setting", w, s, train, test, taus, samples, ch_runs, limit=2000)
    # a small instance where PMC enumerates every balanced partitioning (exact MTM-aware)
    m2 = 16
    w2 = rng.lognormal(0, 0.4, m2)
    s2 = w2 * rng.uniform(0.5, 1.5, m2)
    tr2, te2 = daily_series(24 * 30, rng) // 2, daily_series(24 * 30, rng) // 2
    run_costs("small, exact PMC", w2, s2, tr2, te2, (0.2, 0.5) if not quick else (0.2,),
              samples, ch_runs, limit=20000)
    print("paper (Fig. 9): Storm > 2x SSM; CH > SSM; MTM-aware < SSM, gap growing with tau")
    return {"mtm": transition_matrix(train), "w": w, "s": s, "samples": samples,
            "cands": ssm_chain_layouts(w, s, train, 0.2)}


# --- 3. PMC time locally and on Spark -----------------------------------------------------

def bench_pmc(ctx: dict, quick: bool, use_spark: bool) -> None:
    print("\n== 3. PMC time: local vs Spark local[2] (same result required) ==")
    rng = np.random.default_rng(7)
    # (a) exact PMC: a small instance whose balanced partitionings can all be enumerated
    m_small = 20
    ws = rng.lognormal(0, 0.4, m_small)
    small_mtm = transition_matrix(daily_series(24 * 30, rng) // 2)   # counts 4..8
    cases = [("exact m=20 n in [4,8] tau=0.3", ws, ws, small_mtm, 0.3, 60, None),
             ("candidates m=64 n in [8,16] tau=0.2", ctx["w"], ctx["s"], ctx["mtm"], 0.2,
              ctx["samples"], ctx["cands"])]
    sc = None
    spark = None
    if use_spark:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        from pyspark.sql import SparkSession
        spark = (SparkSession.builder.master("local[2]").appName("bench-intervals")
                 .config("spark.ui.enabled", "false").config("spark.driver.memory", "2g")
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        sc = spark.sparkContext
        sc.parallelize(range(4), 2).count()            # warm the Python workers
    print(f"{'instance':<36} {'P':>6} {'iters':>5} {'local s':>8} {'spark s':>8} "
          f"{'spark/local':>11} {'cost-matrix local/spark s':>26} {'equal':>6}")
    try:
        for name, w, s, mtm, tau, samples, cands in cases:
            t0 = time.perf_counter()
            loc = pmc(w, s, mtm, PAPER_GAMMA, tau, samples=samples, seed=1, candidates=cands,
                      max_partitionings=2000)
            t_loc = time.perf_counter() - t0
            if sc is not None:
                t0 = time.perf_counter()
                rem = pmc(w, s, mtm, PAPER_GAMMA, tau, samples=samples, seed=1,
                          map_fn=lambda f, xs: sc.parallelize(xs, max(len(xs), 1)).map(f)
                          .collect(), candidates=cands, max_partitionings=2000)
                t_sp = time.perf_counter() - t0
                same = all(np.allclose(loc.projected[n], rem.projected[n], atol=1e-9)
                           for n in loc.projected)
                sp = f"{t_sp:8.2f} {t_sp / t_loc:11.2f} {loc.cost_seconds:12.2f} / " \
                     f"{rem.cost_seconds:<11.2f} {str(same):>6}"
            else:
                sp = f"{'-':>8} {'-':>11} {loc.cost_seconds:12.2f} / {'-':<11} {'-':>6}"
            print(f"{name:<36} {loc.num_partitionings:6d} {loc.iterations:5d} {t_loc:8.2f} {sp}"
                  f"  exact={loc.exact}")
    finally:
        if spark is not None:
            spark.stop()
    print("(local[2] on a shared 2-core machine: Spark adds task/serialisation overhead; the "
          "paper ran PMC on 64 executors for hundreds of minutes)")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller grid, fewer repeats")
    ap.add_argument("--no-spark", action="store_true", help="skip the Spark PMC run")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    bench_ssm_time(args.quick)
    ctx = bench_costs(args.quick)
    bench_pmc(ctx, args.quick, use_spark=not args.no_spark and not args.quick)
    print(f"\ntotal {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
