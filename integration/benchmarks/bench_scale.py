"""Benchmark: key groups and SSM (Ding et al. §3.3) at n = 100, 1,000 and 10,000 partitions.

For each n it fits the "keygroups" strategy twice, as a job does: a first fit from an equal
split, then a re-plan from that layout after the key statistics drift (every key's work
times U(0.8, 1.2)). Printed per fit: the number of groups m, which programme ran (exact SSM,
or the banded plan of :mod:`sparkbalance.planning.intervals.banded` and its half-width W),
wall and CPU seconds of the whole fit (group statistics + SSM) and the plan's own wall
seconds, the peak traced memory
(``tracemalloc``), the plan's max/min load over the mean, and the share of state it moves.

Then the loss of the banded plan against the exact programme where both run, as extra state
moved (% of all state) on the same re-plan: at n = 100 and 1,000 (the exact positional
programme forced past its cell limit when it fits in memory), and at n = 10,000 against
the default-width band (the exact one needs n' * m choices: 4e8 at n = 10,000).

Last, the fallback when tau cannot be met (:func:`fallback`): the strict least-max-load
plan against the strategy's :data:`~sparkbalance.strategies.keygroups.FALLBACK_SLACK`.

With ``--tables 1e7``, instead: the routing-table planners of Fang et al. (Mixed,
MinTable, MinMig, LLFD) at 10^7 keys (:func:`tables`): CPU and wall seconds of the first
plan and of the re-plan, on the bounded statistics and on every key listed, and peak RSS
(figures in docs/algorithms.md, "Scale"; ``--tables 1e6`` for a quick run).

Run: ``python integration/benchmarks/bench_scale.py [--quick | --tables 1e7]`` (``--quick``: n <= 1,000).
"""
from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sparkbalance.planning.intervals import banded, ssm as ssm_mod  # noqa: E402
from sparkbalance.planning.intervals.model import make_problem  # noqa: E402
from sparkbalance.stats.keystats import KeyStats  # noqa: E402
from sparkbalance.strategies import keygroups as kg_mod  # noqa: E402
from sparkbalance.strategies.keygroups import (DEFAULT_TAU, FALLBACK_SLACK,  # noqa: E402
                                               group_statistics, plan_keygroups)

#: Largest exact positional programme run for the loss column (cells n' * m * D).
EXACT_FOR_LOSS: int = 1_000_000_000


def workload(n: int, seed: int = 0, hot: float = 0.1) -> tuple[KeyStats, KeyStats]:
    """(statistics, drifted statistics): 50 keys per partition (at least 10^5), Zipf
    z = 1.1 work, the hottest key at most ``hot`` times a partition's mean load, state size
    = work * U(0.5, 2)."""
    rng = np.random.default_rng(seed)
    k = max(100_000, 50 * n)
    cost = np.arange(1, k + 1, dtype=float) ** -1.1
    cost = np.minimum(cost, cost.sum() / n * hot)
    rng.shuffle(cost)
    mem = cost * rng.uniform(0.5, 2.0, k)
    keys = np.arange(k, dtype=np.int64)
    first = KeyStats(keys, np.ones(k), cost=cost * 1e6, memory=mem * 1e6)
    drift = rng.uniform(0.8, 1.2, k)
    return first, KeyStats(keys, np.ones(k), cost=cost * drift * 1e6, memory=mem * 1e6)


def timed_fit(stats: KeyStats, n: int, current=None, num_groups: int | None = None):
    """(partitioner, plan, wall s, CPU s, peak traced bytes): timed without tracing (which
    slows numpy's allocations several-fold), then run again under ``tracemalloc``."""
    w0, c0 = time.perf_counter(), time.process_time()
    part, plan = plan_keygroups(stats, n, current=current, num_groups=num_groups)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    tracemalloc.start()
    plan_keygroups(stats, n, current=current, num_groups=num_groups)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return part, plan, wall, cpu, peak


def describe(plan, m: int) -> str:
    if plan.algorithm.endswith("banded"):
        return f"banded W={banded.band_width(plan.num_nodes)}"
    return "exact"


def exact_loss(stats: KeyStats, part, n: int, widths=(None,),
               slack: float = FALLBACK_SLACK, tau: float = DEFAULT_TAU) -> list[str]:
    """Extra state moved by the banded plan(s) over the exact plan, % of all state (when
    tau cannot be met, both plan on the same relaxed bound, ``slack`` over the least)."""
    m = part.num_groups
    w, s = group_statistics(stats, m)
    p = make_problem(w, s, part.bounds, n, tau, None)
    relaxed = ssm_mod._relaxed(p, slack=slack)
    total = float(p.sc[-1])
    out = []
    cells = ssm_mod.exact_cells(p)
    exact = None
    if cells <= EXACT_FOR_LOSS and n * (m + 1) * 8 <= 2 ** 30:
        g, _ = ssm_mod._solve_positional(p)
        if g == -np.inf:
            g, _ = ssm_mod._solve_positional(relaxed)
        exact = g
    for wd in widths:
        wd = banded.band_width(n) if wd is None else wd
        g, _ = banded.banded_positional(p, wd)
        if g == -np.inf:
            g, _ = banded.banded_positional(relaxed, wd)
        out.append((wd, g))
    if exact is None:
        ref_w, ref = out[-1]
        return [f"W={wd} vs W={ref_w}: {100 * (ref - g) / total:+.3f}%" for wd, g in out[:-1]]
    return [f"W={wd} vs exact: {100 * (exact - g) / total:+.3f}%" for wd, g in out]


TABLE_PLANNERS = ("mixed", "mintable", "minmig", "llfd")


def table_stats(num_keys: int, seed: int = 0) -> KeyStats:
    """``num_keys`` integer keys, Zipf z = 0.85 counts (Fang et al. Table 2), 10^9 records."""
    rng = np.random.default_rng(seed)
    r = np.arange(1, num_keys + 1, dtype=float) ** -0.85
    counts = np.floor(1e9 * r / r.sum()) + 1
    rng.shuffle(counts)
    return KeyStats(np.arange(num_keys, dtype=np.int64), counts)


def table_run(planner: str, num_keys: int, n: int, top: int) -> None:
    """One routing-table plan pair in this process (first fit from hash, then a re-plan
    after every key's count drifts by U(0.5, 1.5)); prints CPU s and peak RSS."""
    import resource
    from sparkbalance.routing.table import RoutingTablePartitioner
    from sparkbalance.strategies.tables import plan_from_stats
    stats = table_stats(num_keys)
    if top:
        stats = stats.top(top)
    rng = np.random.default_rng(1)
    drift = KeyStats(stats.keys, stats.counts * rng.uniform(0.5, 1.5, len(stats)),
                     tail_count=stats.tail_count)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out = []
    current = None
    for st in (stats, drift):
        c0, w0 = time.process_time(), time.perf_counter()
        plan = plan_from_stats(planner, st, n, current=current)
        out.append(f"{time.process_time() - c0:5.2f} ({time.perf_counter() - w0:5.2f} wall) "
                   f"{plan.imbalance_before:4.2f}->{plan.imbalance_after:4.2f} "
                   f"|R'|={plan.table_size}")
        current = RoutingTablePartitioner(n, plan.table)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    listed = f"top {top:,}" if top else "all keys"
    print(f"{planner:>9} {num_keys:>10,} {listed:>12} {n:>4}  first {out[0]};  re-plan "
          f"{out[1]};  peak RSS {peak:6.0f} MiB (statistics alone {base:5.0f})", flush=True)


def tables(num_keys: int, n: int, tops=(100_000, 0)) -> None:
    """Every routing-table planner on ``num_keys`` keys, each in a fresh process (peak RSS
    is per process): on the bounded statistics a fit uses (top-k exact + tail total) and
    on every key listed (``maxKeys=all``). CPU seconds per plan."""
    import subprocess
    print(f"\nrouting-table planners, {num_keys:,} keys, n = {n}: CPU s (wall s), imbalance "
          "before->after (tail share included), table size, peak RSS")
    for top in tops:
        for planner in TABLE_PLANNERS:
            subprocess.run([sys.executable, __file__, "--table-run", planner, str(num_keys),
                            str(n), str(top)], check=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n <= 1,000 only")
    ap.add_argument("--tables", type=float, default=0, metavar="K",
                    help="only the routing-table planners at K keys (e.g. 1e7)")
    ap.add_argument("--table-run", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.table_run:
        name, k, n, top = args.table_run
        table_run(name, int(k), int(n), int(top))
        return
    if args.tables:
        tables(int(args.tables), 100)
        tables(int(args.tables), 10, tops=(100_000,))   # θ reachable: the tail matters
        return
    ns = (100, 1000) if args.quick else (100, 1000, 10_000)
    print(f"{'n':>6} {'fit':>6} {'m':>6} {'programme':>14} {'wall s':>7} {'cpu s':>6} "
          f"{'plan s':>7} {'peak MiB':>8} {'max/L':>6} {'min/L':>6} {'moved %':>8}")
    for n in ns:
        first, drifted = workload(n)
        part = None
        for label, stats in (("first", first), ("replan", drifted)):
            part2, plan, wall, cpu, peak = timed_fit(stats, n, current=part)
            mean = plan.loads.sum() / n
            moved = 100 * plan.migration_cost / max(plan.migration_cost + plan.gain, 1e-300)
            print(f"{n:>6} {label:>6} {part2.num_groups:>6} {describe(plan, part2.num_groups):>14} "
                  f"{wall:>7.2f} {cpu:>6.2f} {plan.seconds:>7.2f} {peak / 2 ** 20:>8.0f} "
                  f"{plan.loads.max() / mean:>6.3f} {plan.loads.min() / mean:>6.3f} "
                  f"{moved:>8.2f}", flush=True)
            if label == "replan":
                widths = (4, 6, 9, 16)
                print(f"{'':>6} loss of the band (re-plan): "
                      + "; ".join(exact_loss(stats, part, n, widths)), flush=True)
            part = part2
    fallback(ns)


#: A bound no layout of the workload meets (group granularity alone exceeds it), so every
#: plan of :func:`fallback` is a fallback plan, with the least maximum load close to 1.
FALLBACK_TAU: float = 0.005


def fallback(ns) -> None:
    """When tau cannot be met (tau = 0.005), the fallback plan on a drifted re-plan:
    strict (least maximum load, slack 0) against the strategy's slack, and each against
    the exact programme where it runs (else against the widest band)."""
    print(f"\nfallback (tau = {FALLBACK_TAU} unreachable; re-plan after drift)")
    print(f"{'n':>6} {'m':>6} {'slack':>5} {'programme':>14} {'cpu s':>6} {'max/L':>6} "
          f"{'moved %':>8}  loss of the band")
    saved = kg_mod.FALLBACK_SLACK
    try:
        for n in ns:
            first, drifted = workload(n)
            for slack in (0.0, saved):
                kg_mod.FALLBACK_SLACK = slack
                part, _ = plan_keygroups(first, n, tau=FALLBACK_TAU)
                c0 = time.process_time()
                _, plan = plan_keygroups(drifted, n, current=part, tau=FALLBACK_TAU)
                cpu = time.process_time() - c0
                mean = plan.loads.sum() / n
                moved = 100 * plan.migration_cost / max(plan.migration_cost + plan.gain,
                                                        1e-300)
                wd = banded.band_width(n)
                loss = "; ".join(exact_loss(drifted, part, n, (wd, 16) if wd < 16 else (16,),
                                            slack, FALLBACK_TAU))
                print(f"{n:>6} {part.num_groups:>6} {slack:>5.2f} "
                      f"{describe(plan, part.num_groups):>14} {cpu:>6.2f} "
                      f"{plan.loads.max() / mean:>6.3f} {moved:>8.2f}  {loss}", flush=True)
    finally:
        kg_mod.FALLBACK_SLACK = saved


if __name__ == "__main__":
    main()
