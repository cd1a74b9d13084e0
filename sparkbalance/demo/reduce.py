"""Demo: a skewed, costly keyed reduce under every available strategy, side by side.

``python -m sparkbalance demo --part reduce [--quick] [--keys K] [--skew Z] [--records M]
[--partitions N] [--work-us U]``

A Zipf(z) keyed workload (K keys, M records) is routed by each strategy; after the shuffle
every record costs about ``U`` microseconds of Python work (the "heavy per-record reduce"
whose cost lands where the key lands, unlike a map-side combine), partials are merged per key
and the result is checked against plain Spark's. Printed per strategy: records per
partition, max/avg of records and of measured task seconds, the stage's critical path and
the job's wall time.
"""
from __future__ import annotations

import argparse
import operator
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

__all__ = ["main", "zipf_records", "costly_reduce", "RunResult", "available_strategies",
           "busy_work"]

DEMO_STRATEGIES = ("hash", "pkg", "dchoices", "wchoices", "tag", "mixed", "mintable", "minmig",
                   "readj", "keygroups")


def zipf_records(num_keys: int, skew: float, num_records: int, seed: int = 7) -> np.ndarray:
    """``num_records`` key ids drawn from Zipf(skew) over ``num_keys`` keys (rank 0 hottest)."""
    ranks = np.arange(1, num_keys + 1, dtype=np.float64)
    p = ranks ** -float(skew)
    p /= p.sum()
    rng = np.random.default_rng(seed)
    return rng.choice(num_keys, size=num_records, p=p).astype(np.int64)


def busy_work(v: int, loops: int) -> int:
    """About ``loops`` iterations of pure-Python arithmetic, then ``2 v + 1``."""
    x = v
    for i in range(loops):
        x = (x * 31 + i) & 0xFFFF
    return 2 * v + 1 + (x & 0)


def _loops_for_us(work_us: float) -> int:
    # CPU time, not wall time: on a busy machine wall time would overstate the cost per loop.
    t0 = time.process_time()
    n = 400_000
    busy_work(1, n)
    per_loop = max(time.process_time() - t0, 1e-6) / n
    return max(1, int(work_us * 1e-6 / per_loop))


@dataclass
class RunResult:
    strategy: str
    records: list[int]       # records per partition after routing
    seconds: list[float]     # measured task seconds per partition (the costly part)
    cpu: list[float]         # CPU seconds of the same (insensitive to other processes)
    wall: float              # job wall time (routing shuffle + costly stage + collect)
    fit_seconds: float       # statistics + fitting
    result: dict             # key -> reduced value

    @property
    def imbalance(self) -> float:
        r = np.asarray(self.records, dtype=float)
        return float(r.max() / r.mean()) if r.mean() > 0 else 1.0

    @property
    def time_imbalance(self) -> float:
        s = np.asarray(self.seconds, dtype=float)
        return float(s.max() / s.mean()) if s.mean() > 0 else 1.0


def _costly_partition(loops: int) -> Callable[[int, Iterator[Any]], Iterator[Any]]:
    def run(index: int, records: Iterator[Any]) -> Iterator[Any]:
        t0, c0 = time.perf_counter(), time.process_time()
        acc: dict = {}
        count = 0
        for k, v in records:
            acc[k] = acc.get(k, 0) + busy_work(v, loops)
            count += 1
        yield ("meta", (index, count, time.perf_counter() - t0, time.process_time() - c0))
        for kv in acc.items():
            yield ("data", kv)
    return run


def costly_reduce(rdd: Any, num_partitions: int, strategy: str, loops: int,
                  **params: Any) -> RunResult:
    """Route ``rdd`` with ``strategy``, run the costly per-record reduce, merge partials."""
    from sparkbalance.spark.rdd import fit_partitioner
    from sparkbalance.spark.listener import sparkbalance_job_group

    t0 = time.perf_counter()
    f = fit_partitioner(rdd, num_partitions, strategy, **params)
    fit_s = time.perf_counter() - t0
    with sparkbalance_job_group(rdd.context, "sparkbalance-demo", f"demo reduce: {strategy}"):
        t1 = time.perf_counter()
        rows = (rdd.partitionBy(num_partitions, f)
                .mapPartitionsWithIndex(_costly_partition(loops)).collect())
        wall = time.perf_counter() - t1
    records = [0] * num_partitions
    seconds = [0.0] * num_partitions
    cpu = [0.0] * num_partitions
    result: dict = {}
    for tag, payload in rows:
        if tag == "meta":
            i, c, s, cs = payload
            records[i], seconds[i], cpu[i] = c, s, cs
        else:  # final merge of the (<= d per key) partials: one number per key
            k, v = payload
            result[k] = result.get(k, 0) + v
    return RunResult(strategy, records, seconds, cpu, wall, fit_s, result)


def available_strategies(wanted: tuple[str, ...] = DEMO_STRATEGIES) -> list[str]:
    """Strategies of ``wanted`` that are registered and whose fitter imports and runs."""
    from sparkbalance import strategies
    from sparkbalance.stats import KeyStats

    out = []
    probe = KeyStats.from_counts({i: 10 - i for i in range(10)})
    for name in wanted:
        if name not in strategies.available():
            continue
        try:
            strategies.fit(name, probe, 2)
        except Exception:  # noqa: BLE001 - a planner still being written: skip it
            continue
        out.append(name)
    return out


def _parse(argv: list[str], quick: bool) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m sparkbalance demo --part reduce")
    p.add_argument("--keys", type=int, default=1000 if quick else 10_000)
    p.add_argument("--skew", type=float, default=1.2)
    p.add_argument("--records", type=int, default=30_000 if quick else 200_000)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--work-us", type=float, default=20.0 if quick else 30.0,
                   help="approximate Python work per record after the shuffle (microseconds)")
    p.add_argument("--strategies", default=",".join(DEMO_STRATEGIES))
    args, _ = p.parse_known_args(argv)
    return args


def _table(results: list[RunResult], n: int) -> str:
    head = (f"{'strategy':<10} {'records/partition':<{max(18, 8 * n)}} {'rec max/avg':>11} "
            f"{'time max/avg':>12} {'crit.path s':>11} {'crit.cpu s':>10} {'cpu vs hash':>11} "
            f"{'wall s':>7} {'vs hash':>7} {'fit s':>6}")
    lines = [head, "-" * len(head)]
    base = next((r.wall for r in results if r.strategy == "hash"), None)
    base_cpu = next((max(r.cpu) for r in results if r.strategy == "hash"), None)
    for r in results:
        parts = " ".join(f"{c:>7d}" for c in r.records)
        ratio = f"{r.wall / base:6.2f}x" if base else "   -  "
        cpu_ratio = f"{max(r.cpu) / base_cpu:10.2f}x" if base_cpu else "   -  "
        lines.append(f"{r.strategy:<10} {parts:<{max(18, 8 * n)}} {r.imbalance:>11.2f} "
                     f"{r.time_imbalance:>12.2f} {max(r.seconds):>11.2f} {max(r.cpu):>10.2f} "
                     f"{cpu_ratio:>11} {r.wall:>7.2f} {ratio:>7} {r.fit_seconds:>6.2f}")
    return "\n".join(lines)


def main(quick: bool = False, out: str = "demo-out", argv: list[str] | None = None) -> int:
    """Run the demo; returns a process exit code (1 if any result differs from Spark's)."""
    args = _parse(list(argv or []), quick)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("sparkbalance-demo")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.default.parallelism", "4").getOrCreate())
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    try:
        keys = zipf_records(args.keys, args.skew, args.records)
        values = (np.arange(args.records) % 97).tolist()
        rdd = sc.parallelize(list(zip(keys.tolist(), values)), 4).cache()
        rdd.count()
        expected = dict(rdd.mapValues(lambda v: 2 * v + 1).reduceByKey(operator.add).collect())
        loops = _loops_for_us(args.work_us)
        wanted = tuple(s for s in args.strategies.split(",") if s)
        names = available_strategies(wanted)
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
        print(_table(results, args.partitions))
        print("\nrec max/avg: records of the fullest partition / mean (1.00 = perfect); "
              "time max/avg: the same for measured task seconds;\ncrit.path: the slowest "
              "costly task (crit.cpu: its CPU seconds, robust to other processes); wall: the "
              "job (shuffle + costly stage); fit: statistics + planning.")
        print(f"results equal plain Spark's reduceByKey: {'yes' if ok else 'NO'}")
        return 0 if ok else 1
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main(quick="--quick" in sys.argv, argv=sys.argv[1:]))
