"""Demo: a skewed, costly keyed reduce under every registered strategy, side by side.

``python -m sparkbalance demo --part reduce [--quick] [--keys K] [--skew Z] [--records M]
[--partitions N] [--wait-us W] [--work-us U] [--strategies a,b,...]``

A Zipf(z) keyed workload (K keys, M records) is routed by each strategy of the registry
(:func:`sparkbalance.strategies.available`); after the shuffle every record costs ``W`` µs
of waiting (an I/O-bound step, e.g. a lookup in an external store) and about ``U`` µs of
Python work (the "heavy per-record reduce" whose cost lands where the key lands, unlike a
map-side combine; :func:`sparkbalance.bench.workloads.costly_reduce`). The session is
``local[N]``: the N costly tasks wait side by side even on a 2-core machine, as on N cores,
so the job's wall time is set by the slowest partition and the balance shows in it (with
CPU-bound work and N > cores the cores are busy either way and no placement shortens the
job),
partials are merged per key and the result is checked against plain Spark's. Printed per
strategy: records per partition, max/avg of records and of measured task seconds, the
stage's critical path (wall and CPU seconds of the slowest costly task) and the job's wall
time.

Run once each in sequence, the wall times of strategies with identical placements differed
by 3x (order and warm-up). So the key statistics are gathered once, every strategy is
fitted once on them, one warm-up round runs every strategy with a trivial reduce (Python
workers, imports, caches), and then ``--repeats`` rounds run every strategy in an order
that alternates (forward, backward) so that load drift on a shared machine hits all alike;
each figure is the median over the rounds.
"""
from __future__ import annotations

import argparse
import dataclasses
import operator
import statistics
import time

import numpy as np

from sparkbalance.bench.report import format_reduce_table
from sparkbalance.bench.session import local_session
from sparkbalance.bench.workloads import RunResult, costly_reduce, loops_for_us, zipf_records

__all__ = ["OPTIONS", "SKIPPED", "demo_strategies", "main"]

#: Registered strategies the demo leaves out by default: MixedBF tries every n_back of
#: Mixed (Fang et al.) and plans the same table here, only slower.
SKIPPED: tuple[str, ...] = ("mixedbf",)
#: Order of the table: the baseline, the splitting strategies, then the key groupings.
_KIND_ORDER = ("hash", "split", "table", "keygroups")

#: Options of the reduce part: (flags, argparse keywords); None defaults are resolved by
#: :func:`main` (full or ``--quick``).
OPTIONS: list[tuple[tuple[str, ...], dict]] = [
    (("--keys",), dict(type=int, help="reduce: distinct keys (default 10000, quick 1000)")),
    (("--skew",), dict(type=float, help="reduce: Zipf exponent (default 1.0)")),
    (("--records",), dict(type=int,
                          help="reduce: records (default 100000, quick 30000)")),
    (("--repeats",), dict(type=int, help="reduce: interleaved rounds whose medians are shown "
                          "(default 3, quick 1), after one warm-up round")),
    (("--partitions",), dict(type=int, help="reduce: partitions, and the task slots of the "
                             "local[N] session (default 8)")),
    (("--wait-us",), dict(type=float, help="reduce: waiting (I/O-like) per record after the "
                          "shuffle, µs (default 100, quick 60)")),
    (("--work-us",), dict(type=float, help="reduce: approximate Python work per record after "
                          "the shuffle, µs (default 2)")),
    (("--strategies",), dict(help="reduce: comma list of registry strategies (default: all "
                             f"registered but {', '.join(SKIPPED)})")),
]


def demo_strategies() -> list[str]:
    """The registry's strategies the demo runs by default, baseline first.

    Examples
    --------
    >>> demo_strategies()[:2]
    ['hash', 'pkg']
    """
    from sparkbalance import strategies
    return [name for kind in _KIND_ORDER for name in strategies.available(kind)
            if name not in SKIPPED]


def _resolve(args: argparse.Namespace) -> argparse.Namespace:
    q = bool(getattr(args, "quick", False))
    # 100,000 records x 100 µs over 8 slots (1.25 s per slot when even, ~2.5 s when plain
    # hashing leaves one partition at twice the mean): a warm-up and three rounds of the
    # eleven strategies take about two minutes. Zipf 1.0 over 10,000 keys: the hottest key
    # holds 10 % of the records, under a partition's 12.5 %, so a key grouping can even
    # the partitions out (at z = 1.2 one key holds 21 % and only splitting gets below it).
    defaults = dict(keys=1000 if q else 10_000, skew=1.0, records=30_000 if q else 100_000,
                    partitions=8, wait_us=60.0 if q else 100.0, work_us=2.0,
                    strategies=None, repeats=1 if q else 3)
    out = argparse.Namespace(**{k: getattr(args, k, None) for k in defaults})
    for k, v in defaults.items():
        if getattr(out, k) is None:
            setattr(out, k, v)
    if out.strategies is None:
        out.strategies = ",".join(demo_strategies())
    if out.repeats < 1:
        raise ValueError(f"--repeats {out.repeats}; expected >= 1")
    if out.partitions < 1:
        raise ValueError(f"--partitions {out.partitions}; expected >= 1")
    if out.wait_us < 0 or out.work_us < 0:
        raise ValueError(f"--wait-us {out.wait_us:g} / --work-us {out.work_us:g}; "
                         "expected >= 0")
    return out


def median_run(runs: list[RunResult]) -> RunResult:
    """One strategy's rounds as one row: the median of each figure over the rounds.

    Records, task seconds and CPU seconds are medians per partition, the wall time the
    median wall; a splitting strategy's placement may differ between rounds, so its
    records are medians too.

    Examples
    --------
    >>> a = RunResult("hash", [3, 1], [0.3, 0.1], [0.2, 0.1], 0.5, 0.0, {})
    >>> b = dataclasses.replace(a, seconds=[0.5, 0.1], wall=0.9)
    >>> c = dataclasses.replace(a, seconds=[0.4, 0.2], wall=0.7)
    >>> m = median_run([a, b, c]); m.seconds, m.wall
    ([0.4, 0.1], 0.7)
    """
    def per_partition(field: str) -> list:
        return [statistics.median(col) for col in zip(*(getattr(r, field) for r in runs))]

    return dataclasses.replace(runs[0], records=[int(x) for x in per_partition("records")],
                               seconds=per_partition("seconds"), cpu=per_partition("cpu"),
                               wall=statistics.median(r.wall for r in runs))


def main(args: argparse.Namespace) -> int:
    """Run the reduce part of ``python -m sparkbalance demo``.

    Returns a process exit code: 1 if any result differs from plain Spark's.

    Examples
    --------
    >>> main(argparse.Namespace(quick=True))                      # doctest: +SKIP
    0
    """
    from sparkbalance import strategies
    from sparkbalance.spark.rdd.keystats import gather_key_stats
    args = _resolve(args)
    names = [strategies.get(s).name for s in args.strategies.split(",") if s]  # names the bad one
    spark = local_session(args.partitions, "sparkbalance-demo", bridge=False,
                          conf={"spark.default.parallelism": str(args.partitions)})
    sc = spark.sparkContext
    try:
        keys = zipf_records(args.keys, args.skew, args.records)
        values = (np.arange(args.records) % 97).tolist()
        rdd = sc.parallelize(list(zip(keys.tolist(), values)), 4).cache()
        rdd.count()
        expected = dict(rdd.mapValues(lambda v: 2 * v + 1).reduceByKey(operator.add).collect())
        loops = loops_for_us(args.work_us)
        p1 = np.bincount(keys).max() / args.records
        print(f"\nsparkbalance demo: skewed costly reduce — {args.records} records, {args.keys} "
              f"keys, Zipf z={args.skew} (hottest key {p1:.1%} of records), "
              f"{args.partitions} partitions; per record after the shuffle {args.wait_us:g} "
              f"us of waiting + ~{args.work_us:g} us of CPU, local[{args.partitions}]")
        print(f"strategies: {', '.join(names)}\n")
        t0 = time.perf_counter()
        stats = gather_key_stats(rdd)  # once: every strategy plans on the same statistics
        stats_s = time.perf_counter() - t0
        for name in names:  # warm-up round, not counted: workers, imports, caches
            costly_reduce(rdd, args.partitions, name, 1, stats=stats)
        runs: dict[str, list[RunResult]] = {name: [] for name in names}
        wrong: set[str] = set()
        for i in range(args.repeats):
            for name in names if i % 2 == 0 else names[::-1]:
                r = costly_reduce(rdd, args.partitions, name, loops, args.wait_us,
                                  stats=stats)
                if r.result != expected and name not in wrong:
                    wrong.add(name)
                    print(f"!! {name}: result differs from plain Spark's")
                runs[name].append(r)
        ok = not wrong
        results = [median_run(runs[name]) for name in names]
        print(format_reduce_table(results, args.partitions))
        rounds = (f"medians of {args.repeats} interleaved rounds (order alternating)"
                  if args.repeats > 1 else "one round")
        print(f"\n{rounds} after a warm-up round; key statistics gathered once "
              f"({stats_s:.2f} s).\n"
              "rec max/avg: records of the fullest partition / mean (1.00 = perfect); "
              "time max/avg: the same for measured task seconds;\ncrit.path: the slowest "
              "costly task (crit.cpu: its CPU seconds, robust to other processes); wall: the "
              "job (shuffle + costly stage); fit: planning on those statistics.\n"
              "The statistics pass is shared here, outside the wall times; sb.partition_by's "
              "default (auto) needs none, it plans from\nthe shuffle's own map-output counts "
              "(integration/benchmarks/bench_endtoend.py times whole jobs that way).")
        print(f"results equal plain Spark's reduceByKey: {'yes' if ok else 'NO'}")
        return 0 if ok else 1
    finally:
        spark.stop()
