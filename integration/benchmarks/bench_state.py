"""Benchmark of the keyed state: delta migration, and a shifting stream under every planner.

A. Delta migration vs full repartition of the state when ~10 % of the state moves: wall
   time (median of repeats) and the bytes each one shuffles. Goal: <= 0.3x the time,
   exactly the moved bytes.
B. 30 batches of a shifting Zipf stream (Fang et al. §5; hot keys move every ``--interval``
   batches) under none / mixed / mintable / ssm and plain Spark (the whole state cogrouped
   with every batch, as ``updateStateByKey``): mean and p95 batch time and their ratio to
   "none", mean max/avg load, state migrated (goal: Mixed <= half of MinTable's; Fang et al.
   report about a third), migration and planning seconds per batch, and a per-batch
   profile of the Spark jobs/stages (where the time goes with and without a migration).
   The per-record work is mostly simulated I/O wait in a local[n] session (n = partitions
   task slots), so the n tasks of a batch run side by side even on 2 cores and the slowest
   partition sets the batch time; planners run interleaved batch by batch so background
   load hits all alike (see sparkbalance/bench/streams.py). First a summary table per
   condition (quiet; ``--hog``: beside a CPU-bound process pinned to core 0; ``--hog
   both``: each run both ways, alternating) with mean/p95 batch s, migrations, MB moved,
   Spark jobs per batch (without / with a migration), CPU s per batch (driver, JVM and
   Python workers) and the goals of :mod:`sparkbalance.bench.stream_table`.
   ``oracle:mixed`` is the clairvoyant Mixed (:mod:`sparkbalance.bench.clairvoyant`):
   before each batch, untimed, its state moves to Mixed's plan for that batch's exact work
   (window replays included), the floor a reactive Mixed is measured against.

The stream summary alone, as a quick look runs it (none / mixed / ssm / clairvoyant Mixed /
plain, medians of 3 interleaved runs, quiet and beside a CPU hog)::

    python -m sparkbalance bench state -- --only-stream --repeats 3 --hog both
        --planners none,mixed,ssm,oracle:mixed                          (one line)

``python -m sparkbalance bench state [--quick] [-- OPTION ...]`` or
``python integration/benchmarks/bench_state.py [--quick]`` (A on local[2], B on local[n];
plots to bench-out/).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sparkbalance.bench.cpu import BatchCPU, ProcessTreeCPU, cpu_hog  # noqa: E402
from sparkbalance.bench.plain import PLAIN  # noqa: E402
from sparkbalance.bench.profile import (BatchProfiler, format_profile,  # noqa: E402
                                        merge_after_migration, profile_means, profile_summary)
from sparkbalance.bench.report import (WARMUP_BATCHES, format_table, median_rows,  # noqa: E402
                                       plot_stream, summarise)
from sparkbalance.bench.session import local_session, warm_up  # noqa: E402
from sparkbalance.bench.stream_table import (format_stream_table,  # noqa: E402
                                             median_stream_rows, stream_goals, stream_rows)
from sparkbalance.bench.streams import run_streams  # noqa: E402
from sparkbalance.bench.workloads import make_batches  # noqa: E402


def session():
    # The bridge jar must be on the first session of the process (one JVM): part B's
    # local[n] session in the same JVM then has it too (state frames, task recorder).
    return local_session(2, "bench-state", conf={"spark.driver.memory": "2g"})


def _base_state(spark, num_keys: int, sizes: np.ndarray, layout, G: int):
    """A cached state of ``num_keys`` keys (state ``bytes`` of ``sizes[k]``) placed by
    ``layout``, as frames, materialised."""
    from pyspark import StorageLevel

    from sparkbalance.state.frames import format as fr
    from sparkbalance.state.frames.rdds import as_frames
    from sparkbalance.state.frames.window import StateFold

    sc = spark.sparkContext
    fold = StateFold(update=lambda s, v: s + v, initial=b"")

    def entry(k):
        state = bytes(int(sizes[k]))
        return (k, [state, fold.size_of(state, None), None])

    base = as_frames(sc.parallelize(range(num_keys), 8).map(entry)
                     .partitionBy(layout.num_physical, layout.fn)
                     .mapPartitions(lambda it: fr.frames_of_entries(it, G)))
    base.persist(StorageLevel.MEMORY_AND_DISK)
    base._jrdd.count()
    entry_bytes = np.array([fold.size_of(bytes(int(s)), None) for s in sizes])
    return base, entry_bytes


def _scenarios(num_keys: int, payload: int, n: int, fraction: float, rng):
    """(name, sizes, old layout, new layout, G, candidates, planned bytes) per scenario."""
    from sparkbalance.routing.hash import home_partitions
    from sparkbalance.routing.table import RoutingTable
    from sparkbalance.state.frames.format import DEFAULT_TABLE_GROUPS
    from sparkbalance.state.control.layout import GroupLayout, TableLayout

    out = []
    uniform = rng.integers(payload // 2, payload * 3 // 2, num_keys)
    # state sizes that follow key popularity (Zipf z=1 ranks, shuffled over key ids): what
    # a hot key carries in Fang et al.'s setting, where Mixed moves a few heavy keys
    ranks = rng.permutation(num_keys) + 1
    zipf = np.maximum(16, (payload * num_keys / np.log(num_keys) / ranks).astype(np.int64))
    zipf = (zipf * (payload * num_keys / zipf.sum())).astype(np.int64) + 8
    keys = np.arange(num_keys)
    home = home_partitions(keys, n)
    # key groups: SSM-style interval shift moving ~fraction of the groups
    G = 16 * n
    old = GroupLayout.initial(n, num_groups=G)
    bounds = old.bounds.copy()
    shift = max(1, int(round(fraction * G / (n - 1))))
    for j in range(1, n):      # every inner cut point moves by `shift` groups
        bounds[j] = min(bounds[j] + shift, bounds[j + 1] - 1) if j % 2 else bounds[j] - shift
    new = old.after_plan(bounds, np.arange(n))
    out.append(("key groups (SSM)", uniform, old, new, G, None))
    for name, sizes, order in (
            ("table, heavy keys", zipf, np.argsort(-zipf, kind="stable")),
            ("table, random keys", uniform, rng.permutation(num_keys))):
        total = float(sizes.sum())
        routes, moved = {}, 0.0
        for k in order.tolist():
            if moved >= fraction * total:
                break
            routes[k] = int((home[k] + 1) % n)
            moved += float(sizes[k])
        lay0 = TableLayout(n, n)
        lay1 = TableLayout(n, n, RoutingTable(routes, 1))
        out.append((f"{name} (|R|={len(routes)})", sizes, lay0, lay1, DEFAULT_TABLE_GROUPS,
                    frozenset(routes)))
    return out


def bench_migration(spark, num_keys: int, payload: int, repeats: int, fraction: float = 0.10):
    """Delta migration vs full repartition of the same cached state, per scenario."""
    from pyspark import StorageLevel

    from sparkbalance.state.frames.rdds import frame_ops
    from sparkbalance.state.frames.migration import full_repartition, migrate

    sc = spark.sparkContext
    ops = frame_ops(sc)
    n = 4
    level = StorageLevel.MEMORY_AND_DISK
    rng = np.random.default_rng(0)
    results = []
    for name, sizes, old, new, G, cands in _scenarios(num_keys, payload, n, fraction, rng):
        base, entry_bytes = _base_state(spark, num_keys, sizes, old, G)
        where_old = old.fn.assign(np.arange(num_keys))
        where_new = new.fn.assign(np.arange(num_keys))
        planned = float(entry_bytes[where_old != where_new].sum())
        total = float(entry_bytes.sum())
        rows = {"delta": [], "delta+state": [], "full": []}
        res = {}
        for _ in range(repeats):
            t0 = time.perf_counter()
            r = migrate(ops, base, old, new, G, level, candidates=cands)
            rows["delta"].append(time.perf_counter() - t0)
            # the new state is a lazy concat of cached pieces and of the touched frames
            # without the keys that left (filtered by the next batch's merge): read it all
            # once, in the JVM, to include that filtering too
            frames_view = r.rdd._jrdd.count()
            rows["delta+state"].append(time.perf_counter() - t0)
            res["delta"] = r
            res["frames"] = (r.frames_touched, frames_view)
            for c in r.cached:
                c.unpersist()
            t0 = time.perf_counter()
            f = full_repartition(ops, base, new, G, level)
            rows["full"].append(time.perf_counter() - t0)
            res["full"] = f
            for c in f.cached:
                c.unpersist()
        base.unpersist()
        results.append((name, rows, res, planned, total))
    return results, ops.jvm


# -------------------------------------------------------------------- part B: the stream
#: Workload of part B (full, quick). Per record: STREAM_IO_US µs of simulated I/O wait and
#: 20 CPU loop steps, with window=3 (the window fold replays the key's last segments, so
#: a partition's merge time follows the window's records, ~3x the batch's). n tasks wait
#: side by side in local[n], so the slowest partition sets the batch time (~1-3 s).
STREAM_FULL = dict(batches=30, keys=5000, records=20000, io_us=100.0, interval=5)
#: θ_max = 0.08 is Fang et al.'s default; with ~2,500 records per partition and batch the
#: sampling noise alone moves max/avg by a few percent, so a plan at ~1.07 crosses 1.08 again
#: within an interval. The @0.2 variants only react to real shifts of the distribution;
#: oracle:mixed is Mixed moved, untimed, to its plan for each batch's exact work.
STREAM_PLANNERS = "none,mixed,mintable,ssm,mixed@0.2,ssm@0.2,oracle:mixed"
STREAM_PLANNERS_QUICK = "none,mixed,mintable,ssm"
STREAM_QUICK = dict(batches=6, keys=1000, records=3000, io_us=80.0, interval=3)


def add_stream_args(p: argparse.ArgumentParser) -> None:
    """Options of part B."""
    p.add_argument("--partitions", type=int, default=8,
                   help="n of the stream part; the session is local[n] (see part B)")
    p.add_argument("--fluctuation", type=float, default=1.0,
                   help="f of Fang et al. §5: load shifted per interval, in units of θ_ref")
    p.add_argument("--interval", type=int, default=None,
                   help="batches per interval of the stream (hot keys move between "
                        "intervals; 1 = every batch; default 5, quick 3)")
    p.add_argument("--io-us", type=float, default=None,
                   help="simulated I/O wait per record, µs (default 100, quick 80)")
    p.add_argument("--batches", type=int, default=None, help="default 30, quick 6")
    p.add_argument("--repeats", type=int, default=None,
                   help="runs of the whole stream; figures are medians (default 1)")
    p.add_argument("--planners", default=None,
                   help="comma list; NAME@THETA gives a planner its own θ_max (default "
                        "none,mixed,mintable,ssm,mixed@0.2,ssm@0.2,oracle:mixed; quick: the "
                        "first four); oracle:NAME is NAME made clairvoyant, the floor of "
                        "a reactive NAME (sparkbalance/bench/clairvoyant.py)")
    p.add_argument("--theta", type=float, default=0.08,
                   help="θ_max of the controller (Fang et al.'s default 0.08)")
    p.add_argument("--no-plain", action="store_true",
                   help="skip the plain-Spark baseline (cogroup of the whole state per batch)")
    p.add_argument("--no-profile", action="store_true",
                   help="skip the per-batch job/stage profile (listener; gives jobs/batch)")
    p.add_argument("--hog", nargs="?", const="on", default="off", choices=("off", "on", "both"),
                   help="run beside one CPU-bound process pinned to core 0 ('on'), or each "
                        "run both quiet and with it, alternating ('both')")


def bench_stream(args) -> int:
    """Part B: every planner (and plain Spark) over the same shifting Zipf stream,
    interleaved batch by batch, in a local[n] session; medians over ``--repeats``."""
    cfg = dict(STREAM_QUICK if args.quick else STREAM_FULL)
    if args.io_us is not None:
        cfg["io_us"] = args.io_us
    if args.batches is not None:
        cfg["batches"] = args.batches
    if args.interval is not None:
        cfg["interval"] = args.interval
    reps = args.repeats or 1
    n, work, window, theta = args.partitions, 20, 3, args.theta
    planners = [p for p in (args.planners or (STREAM_PLANNERS_QUICK if args.quick
                                              else STREAM_PLANNERS)).split(",") if p]
    if not args.no_plain:
        planners.append(PLAIN)
    batches = make_batches(cfg["keys"], n, cfg["batches"], cfg["records"], 1.0,
                           args.fluctuation, seed=7, batches_per_interval=cfg["interval"])
    spark = local_session(n, "bench-state-stream")
    t_start = time.perf_counter()
    conditions = {"off": ["quiet"], "on": ["hog"], "both": ["quiet", "hog"]}[args.hog]
    must: dict[str, list] = {c: [] for c in conditions}
    shifts = (cfg["batches"] - 1) // cfg["interval"] if cfg["interval"] > 1 else \
        cfg["batches"] - 1
    try:
        warm_up(spark, n)   # start the n Python workers, import the state code in them
        runs, crit_runs, merge_runs, hist, prof_rows = [], [], [], {}, []
        for rep in range(reps):
            for cond in conditions[rep % len(conditions):] + conditions[:rep % len(conditions)]:
                prof = None if args.no_profile else BatchProfiler(spark)
                order = planners[rep % len(planners):] + planners[:rep % len(planners)]
                with cpu_hog(0) if cond == "hog" else contextlib.nullcontext() as hog:
                    cpu = BatchCPU(ProcessTreeCPU(exclude={hog} if hog else None))
                    hist = run_streams(spark, order, batches, num_partitions=n, theta=theta,
                                       window=window, progress=False, work=work,
                                       io_us=cfg["io_us"], profiler=prof, cpu=cpu)
                hist = {p: hist[p] for p in planners}
                rows = prof.rows() if prof is not None else None
                must[cond].append(stream_rows(hist, rows, cpu.means(WARMUP_BATCHES),
                                              WARMUP_BATCHES))
                if prof is not None:
                    prof.close()
                if cond != conditions[0]:
                    continue       # the detailed tables below are of the first condition
                runs.append(summarise(hist, skip=WARMUP_BATCHES))
                if rows is not None:
                    prof_rows = rows
                    crit_runs.append(profile_means(prof_rows, WARMUP_BATCHES))
                    merge_runs.append(profile_means(prof_rows, WARMUP_BATCHES, "merge_s"))
        elapsed = time.perf_counter() - t_start
        rows_b = median_rows(runs)
        by = {r["planner"]: r for r in rows_b}
        print(f"\nB. keyed state over a shifting Zipf stream: {cfg['batches']} batches x "
              f"{cfg['records']} records, {cfg['keys']} keys, z=1.0, hot keys move every "
              f"{cfg['interval']} batches (f={args.fluctuation}), n={n} on local[{n}], θ={theta}, "
              f"window={window}; per record {cfg['io_us']:g} µs I/O wait + {work} CPU steps. "
              f"Planners interleaved batch by batch; batch {WARMUP_BATCHES - 1} excluded; "
              f"medians of {reps} run(s) ({elapsed:.0f} s)")
        if args.quick:
            print("(--quick is a smoke run: batches this small make the merge stage too short "
                  "for the skew to outweigh a migration; read the full run's figures)")
        for cond, cond_runs in must.items():
            med = median_stream_rows(cond_runs)
            beside = "one CPU-bound process pinned to core 0" if cond == "hog" else \
                "no added load"
            print(f"\nSummary, {cond} ({beside}; load average at the end "
                  f"{os.getloadavg()[0]:.1f}): medians of {len(cond_runs)} interleaved run(s); "
                  "jobs/b = Spark jobs per batch (steady: batches without a migration, "
                  "migr.b: with one); CPU s/b = CPU seconds per batch of the driver, JVM and "
                  "Python workers")
            print(format_stream_table(med))
            print("\n".join(stream_goals(med, shifts)))
        print("\nDetails of the " + conditions[0] + " runs:")
        print(format_table(rows_b))
        print("plain = plain Spark (state.cogroup(batch) per batch, as updateStateByKey): "
              "its 'MB moved' is the whole state re-shuffled every batch")
        if "mixed" in by and by.get("mintable", {}).get("bytes_moved"):
            print(f"Mixed / MinTable migrated bytes = "
                  f"{by['mixed']['bytes_moved'] / by['mintable']['bytes_moved']:.2f} "
                  "(goal <= 0.5; Fang et al. ~0.33)")
        iv = cfg["interval"]
        if iv > 1:
            print(f"migrations after an interval's first batch (the distribution just "
                  f"moved) / later in an interval (it did not move: the plan's max/avg, "
                  f"planned to just under 1+θ, crossed 1+θ again by sampling noise): " +
                  ", ".join(
                      f"{p} {sum(r.rebalanced and r.seq % iv == 0 for r in h)}/"
                      f"{sum(r.rebalanced and r.seq % iv != 0 for r in h)}"
                      for p, h in hist.items() if p != PLAIN))
        if "none" in by:
            print("mean batch time vs none (median of per-run ratios): " + ", ".join(
                f"{r['planner']} {r['vs_none']:.2f}x" for r in rows_b))
            if crit_runs:
                crit = {p: statistics.median(c[p] / c["none"] for c in crit_runs)
                        for p in planners}
                print("straggler-bound time (Σ slowest task per stage) vs none: " + ", ".join(
                    f"{p} {v:.2f}x" for p, v in crit.items()))
                merge = {p: statistics.median(m[p] / m["none"] for m in merge_runs)
                         for p in planners}
                print("merge stage alone (the per-key work rebalancing targets) vs none: " +
                      ", ".join(f"{p} {v:.2f}x" for p, v in merge.items()))
        if prof_rows:
            print(f"\nWhere a batch's time goes (last run, batches >= {WARMUP_BATCHES}; means "
                  "per batch; migrating = carries the migration the batch before decided): route = shuffle-map stage of "
                  "the batch, merge = result stage (the per-key work), +jobs = later jobs "
                  "(migration), driver = wall outside any stage")
            print(format_profile(profile_summary(prof_rows, hist)))
            mam = merge_after_migration(prof_rows, hist)
            print("merge stage right after a migration / after none (s, mean; n after): " +
                  ", ".join(f"{p} {a:.2f}/{o:.2f} ({k})" for p, (a, o, k) in mam.items()
                            if k))
        png = plot_stream(hist, Path(args.out) / "bench_state_stream.png")
        if png:
            print(f"plot: {png}")
    finally:
        spark.stop()
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    p.add_argument("--out", default=str(ROOT / "bench-out"), help="folder for the plots")
    p.add_argument("--skip-stream", action="store_true", help="run part A only")
    p.add_argument("--skip-migration", action="store_true",
                   help="part A on a tiny state (1000 keys, one repeat)")
    p.add_argument("--only-stream", action="store_true", help="run part B only")
    add_stream_args(p)
    args = p.parse_args(argv)
    q = args.quick
    if args.only_stream:
        return bench_stream(args)
    spark = session()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        # ---------------------------------------------------------------- A
        nk, payload, reps = (20_000, 200, 3) if q else (200_000, 1000, 5)
        if args.skip_migration:
            nk, reps = 1000, 1
        results, jvm = bench_migration(spark, nk, payload, reps)
        print(f"\nA. migration of the keyed state: {nk} keys, n=4, ~10% of the bytes move, "
              f"median of {reps}; frames selected in the "
              f"{'JVM (bridge jar)' if jvm else 'Python (no bridge jar!)'}")
        print(f"{'scenario':>34} {'state MB':>8} {'delta s':>8} {'+stays s':>8} {'full s':>7} "
              f"{'delta/full':>10} {'MB moved':>9} {'full MB':>8} {'exact':>6} "
              f"{'frames read':>12}")
        for name, rows, res, planned, total in results:
            md, mf = statistics.median(rows["delta"]), statistics.median(rows["full"])
            ms = statistics.median(rows["delta+state"])
            d, f = res["delta"], res["full"]
            print(f"{name:>34} {total / 1e6:8.1f} {md:8.2f} {ms:8.2f} {mf:7.2f} "
                  f"{md / mf:10.2f} {d.bytes_moved / 1e6:9.2f} {f.bytes_moved / 1e6:8.1f} "
                  f"{str(abs(d.bytes_moved - planned) < 1e-6 * max(planned, 1)):>6} "
                  f"{res['frames'][0]:>5}/{res['frames'][1]:<6}")
        print("delta = migrate(): reading the touched frames, the shuffle of Δ, caching the "
              "arrivals; +stays = also filtering the stays out of the touched frames and reading "
              "the whole new state once (the operator fuses that filter into the next "
              "batch's merge); full = "
              "shuffle of every entry, cached; goal delta/full <= 0.30 with exactly the moved "
              "bytes ('exact': shuffled bytes == planned Σ S(k) of the moved keys); frames read "
              "= state frames a Python worker saw / frames of the new state")
        for name, rows, *_ in results:
            print(f"  {name}: " + "; ".join(f"{k} {[round(x, 2) for x in v]}"
                                             for k, v in rows.items()))
        if args.skip_stream:
            return 0
        # ---------------------------------------------------------------- B
        spark.stop()   # part B runs in its own local[n] session (one slot per partition)
        return bench_stream(args)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
