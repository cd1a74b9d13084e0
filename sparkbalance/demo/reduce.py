"""Demo: a skewed, costly keyed reduce under every registered strategy, side by side.

``python -m sparkbalance demo --part reduce [--quick] [--keys K] [--skew Z] [--records M]
[--partitions N] [--work-us U] [--strategies a,b,...]``

A Zipf(z) keyed workload (K keys, M records) is routed by each strategy of the registry
(:func:`sparkbalance.strategies.available`); after the shuffle every record costs about
``U`` microseconds of Python work (the "heavy per-record reduce" whose cost lands where the
key lands, unlike a map-side combine; :func:`sparkbalance.bench.workloads.costly_reduce`),
partials are merged per key and the result is checked against plain Spark's. Printed per
strategy: records per partition, max/avg of records and of measured task seconds, the
stage's critical path and the job's wall time.
"""
from __future__ import annotations

import argparse
import operator

import numpy as np

from ..bench.report import format_reduce_table
from ..bench.session import local_session
from ..bench.workloads import costly_reduce, loops_for_us, zipf_records

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
    (("--skew",), dict(type=float, help="reduce: Zipf exponent (default 1.2)")),
    (("--records",), dict(type=int,
                          help="reduce: records (default 200000, quick 30000)")),
    (("--partitions",), dict(type=int, help="reduce: partitions (default 4)")),
    (("--work-us",), dict(type=float, help="reduce: approximate Python work per record after "
                          "the shuffle, µs (default 30, quick 20)")),
    (("--strategies",), dict(help="reduce: comma list of registry strategies (default: all "
                             f"registered but {', '.join(SKIPPED)})")),
]


def demo_strategies() -> list[str]:
    """The registry's strategies the demo runs by default, baseline first.

    Example
    -------
    >>> demo_strategies()[:2]
    ['hash', 'pkg']
    """
    from .. import strategies
    return [name for kind in _KIND_ORDER for name in strategies.available(kind)
            if name not in SKIPPED]


def _resolve(args: argparse.Namespace) -> argparse.Namespace:
    q = bool(getattr(args, "quick", False))
    defaults = dict(keys=1000 if q else 10_000, skew=1.2, records=30_000 if q else 200_000,
                    partitions=4, work_us=20.0 if q else 30.0, strategies=None)
    out = argparse.Namespace(**{k: getattr(args, k, None) for k in defaults})
    for k, v in defaults.items():
        if getattr(out, k) is None:
            setattr(out, k, v)
    if out.strategies is None:
        out.strategies = ",".join(demo_strategies())
    return out


def main(args: argparse.Namespace) -> int:
    """Run the reduce part of ``python -m sparkbalance demo``.

    Returns a process exit code: 1 if any result differs from plain Spark's.

    Example
    -------
    >>> main(argparse.Namespace(quick=True))                      # doctest: +SKIP
    0
    """
    from .. import strategies
    args = _resolve(args)
    names = [strategies.get(s).name for s in args.strategies.split(",") if s]  # names the bad one
    spark = local_session(2, "sparkbalance-demo", bridge=False,
                          conf={"spark.default.parallelism": "4"})
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
              f"{args.partitions} partitions, ~{args.work_us:g} us/record, local[2]")
        print(f"strategies: {', '.join(names)}\n")
        costly_reduce(rdd, args.partitions, "hash", 1)  # warm-up: Python workers, JIT, caches
        results = []
        ok = True
        for name in names:
            r = costly_reduce(rdd, args.partitions, name, loops)
            if r.result != expected:
                ok = False
                print(f"!! {name}: result differs from plain Spark's")
            results.append(r)
        print(format_reduce_table(results, args.partitions))
        print("\nrec max/avg: records of the fullest partition / mean (1.00 = perfect); "
              "time max/avg: the same for measured task seconds;\ncrit.path: the slowest "
              "costly task (crit.cpu: its CPU seconds, robust to other processes); wall: the "
              "job (shuffle + costly stage); fit: statistics + planning.")
        print(f"results equal plain Spark's reduceByKey: {'yes' if ok else 'NO'}")
        return 0 if ok else 1
    finally:
        spark.stop()
