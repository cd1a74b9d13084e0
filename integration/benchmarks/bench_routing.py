"""Routing benchmark: overhead, imbalance, and wall time of a skewed reduce.

``python -m sparkbalance bench routing [--quick] [-- --part a,b,c]`` or
``python integration/benchmarks/bench_routing.py [--quick] [--part a,b,c]``

(a) Routing overhead on uniform keys: ``partition_by(rdd, n, strategy)`` vs
    ``rdd.partitionBy(n)`` (PySpark's portable_hash), Spark local[2], job = partitionBy +
    count, medians of repeats; plus the per-record cost of the partition function alone
    (ns/call, no Spark, of what the adapter calls per record: a key-grouping function's
    ``partition`` in its own map loop, else the guarded function's bound ``__call__``). Goal: <= 1.05x for the key-grouping strategies. Row "auto/0-pass":
    the default path, ``partition_by(rdd, n)`` with map-output statistics (map stage into
    m = 32 n key groups + the plan + the coalesced read), timed whole.
(b) Imbalance max/avg of hash vs PKG vs D-Choices vs W-Choices vs TAG on Zipf z in
    {0.8, 1.0, 1.5}, n in {8, 32}, 10^6 records over 10^5 keys, simulated with the same
    partition functions (``assign``), 5 sources (map tasks) each with its own local load
    vector, as in the experiments of Nasir et al. (Partial Key Grouping). Also the key-grouping lower bound max(1, p_1 n).
    tag-iid = TAG with the paper's i.i.d. segment draws (tag: systematic placement).
    A heterogeneous variant (one partition in four twice as slow) compares time
    imbalance max/avg of l_i = t_i m_i: TAG vs the count-balancing strategies.
(c) Wall time of a skewed reduce with a costly per-record function after the shuffle:
    hash vs each splitting strategy and Mixed, local[2], medians of repeats.
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sparkbalance import strategies  # noqa: E402
from sparkbalance.bench.cpu import ProcessTreeCPU  # noqa: E402
from sparkbalance.bench.session import local_session  # noqa: E402
from sparkbalance.bench.workloads import costly_reduce, loops_for_us, zipf_records  # noqa: E402
from sparkbalance.strategies.splitting import fit_dchoices, fit_wchoices  # noqa: E402
from sparkbalance.routing.hash import HashPartitioner  # noqa: E402
from sparkbalance.routing.pkg import PKGPartitioner  # noqa: E402
from sparkbalance.strategies.splitting import fit_tag  # noqa: E402
from sparkbalance.stats import KeyStats  # noqa: E402

SOURCES = 5  # map tasks ("sources" of Nasir et al.), each with its own local load vector


# ------------------------------------------------------------------------------- (b)
def _simulate(f, keys: np.ndarray, n: int, t: np.ndarray | None = None) -> float:
    """Imbalance max/avg of the loads when ``SOURCES`` fresh copies of f route the stream."""
    if f.splits_keys:
        parts = np.concatenate([f.assign(chunk) for chunk in np.array_split(keys, SOURCES)])
    else:
        uniq, inv = np.unique(keys, return_inverse=True)
        parts = f.assign(uniq)[inv]
    loads = np.bincount(parts, minlength=n).astype(float)
    if t is not None:
        loads = loads * t
    return float(loads.max() / loads.mean())


def part_b(quick: bool) -> None:
    m = 200_000 if quick else 1_000_000
    num_keys = 100_000
    print(f"\n(b) imbalance max/avg (1.00 = perfect), {m} records, {num_keys} keys, Zipf, "
          f"{SOURCES} sources with local load estimation")
    head = (f"{'z':>4} {'n':>3} {'p1':>6} {'KG-LB':>6} {'hash':>7} {'pkg':>7} {'dchoices':>8} "
            f"{'wchoices':>8} {'tag':>7} {'tag-iid':>7} {'hash/pkg excess':>16} {'sim s':>6}")
    print(head + "\n" + "-" * len(head))
    for z in (0.8, 1.0, 1.5):
        keys = zipf_records(num_keys, z, m, seed=11)
        uniq, counts = np.unique(keys, return_counts=True)
        stats = KeyStats(uniq, counts)
        p1 = counts.max() / m
        for n in (8, 32):
            t0 = time.perf_counter()
            fs = {"hash": HashPartitioner(n), "pkg": PKGPartitioner(n),
                  "dchoices": fit_dchoices(stats, n), "wchoices": fit_wchoices(stats, n),
                  "tag": fit_tag(stats, n), "tag-iid": fit_tag(stats, n, placement="random")}
            lam = {name: _simulate(f, keys, n) for name, f in fs.items()}
            ex = (lam["hash"] - 1) / max(lam["pkg"] - 1, 1e-9)
            print(f"{z:>4} {n:>3} {p1:>6.3f} {max(1.0, p1 * n):>6.2f} {lam['hash']:>7.3f} "
                  f"{lam['pkg']:>7.3f} {lam['dchoices']:>8.3f} {lam['wchoices']:>8.3f} "
                  f"{lam['tag']:>7.3f} {lam['tag-iid']:>7.3f} {ex:>15.0f}x "
                  f"{time.perf_counter() - t0:>6.1f}")
    # Heterogeneous partitions: every fourth partition takes twice as long per record.
    print("\n(b') heterogeneous partitions (t_i = 2 on every 4th partition, else 1): "
          "time imbalance max/avg of l_i = t_i m_i")
    head = f"{'z':>4} {'n':>3} {'hash':>7} {'pkg':>7} {'wchoices':>8} {'tag(t)':>7}"
    print(head + "\n" + "-" * len(head))
    for z in (1.0, 1.5):
        keys = zipf_records(num_keys, z, m, seed=11)
        uniq, counts = np.unique(keys, return_counts=True)
        stats = KeyStats(uniq, counts)
        for n in (8, 32):
            t = np.where(np.arange(n) % 4 == 3, 2.0, 1.0)
            fs = {"hash": HashPartitioner(n), "pkg": PKGPartitioner(n),
                  "wchoices": fit_wchoices(stats, n), "tag": fit_tag(stats, n, completion_times=t)}
            lam = {name: _simulate(f, keys, n, t) for name, f in fs.items()}
            print(f"{z:>4} {n:>3} {lam['hash']:>7.3f} {lam['pkg']:>7.3f} {lam['wchoices']:>8.3f} "
                  f"{lam['tag']:>7.3f}")


# ------------------------------------------------------------------------------- Spark
def registered(wanted: tuple[str, ...]) -> list[str]:
    """The names of ``wanted`` the strategy registry has, in that order."""
    known = set(strategies.available())
    return [name for name in wanted if name in known]


def _ns_per_call(fn, keys: list) -> float:
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for k in keys:
            fn(k)
        best = min(best, (time.perf_counter() - t0) / len(keys) * 1e9)
    return best


def part_a(sc, quick: bool, repeats: int) -> None:
    from pyspark.rdd import portable_hash

    from sparkbalance.routing import partition_func
    from sparkbalance.spark.rdd import mapstats
    from sparkbalance.spark.rdd.shuffle import inlinable
    from sparkbalance.spark.rdd.key_errors import KeyGuard
    from sparkbalance.spark.rdd.adapters import fit_partitioner, partition_by
    n = 8
    m = 200_000 if quick else 500_000
    rng = np.random.default_rng(5)
    data = list(zip(rng.integers(0, 10 * m, m).tolist(), range(m)))  # ~uniform, mostly distinct
    rdd = sc.parallelize(data, 4).cache()
    rdd.count()
    names = registered(("hash", "mixed", "mintable", "minmig", "readj", "keygroups",
                                  "pkg", "dchoices", "wchoices", "tag"))
    fitted = {name: fit_partitioner(rdd, n, strategy=name) for name in names}  # stats/fit not timed
    zero_pass = mapstats.available(sc)
    # Same functions without the per-process memo of PartitionFunction.__call__ and without
    # the adapter's KeyGuard (bound .partition): the floor of a Python partitionFunc. And
    # the fitted instance handed to rdd.partitionBy as it is ("instance"): CPython calls an
    # instance through its class's call slot, ~110 ns more per record than the bound
    # method the adapters pass (routing.base.partition_func).
    direct = {f"{name}/direct": fitted[name].partition for name in ("hash", "mixed")
              if name in fitted}
    if "hash" in fitted:
        direct["hash/instance"] = fitted["hash"]

    tree = ProcessTreeCPU()  # this driver, its JVM and the JVM's Python workers

    def timed(run) -> tuple[float, float]:
        t0, c0 = time.perf_counter(), tree.seconds()
        run()
        return time.perf_counter() - t0, tree.seconds() - c0

    runs: dict[str, Any] = {"spark": lambda: rdd.partitionBy(n).count()}
    if zero_pass:
        runs["auto/0-pass"] = lambda: partition_by(rdd, n).count()
    runs.update({name: (lambda f=fitted[name]: partition_by(rdd, n, f).count())
                 for name in names})  # the adapter, as a user calls it (fit not timed)
    runs.update({name: (lambda f=fn: rdd.partitionBy(n, f).count())
                 for name, fn in direct.items()})
    for run in runs.values():  # warm-up: every variant's first run pays session costs
        run()
    walls: dict[str, list[float]] = {k: [] for k in runs}
    cpus: dict[str, list[float]] = {k: [] for k in runs}
    # Interleaved, each round in a new (seeded) random order: load drift hits all alike, and
    # no variant always runs next to the same one. With alternating order "hash" always ran
    # beside "auto/0-pass" and measured 1.24x; in random order 1.00x (what a job leaves
    # behind - shuffle files to clean, garbage - is paid by the next job).
    order = random.Random(11)
    for _ in range(repeats):
        for name in order.sample(list(runs), len(runs)):
            w, c = timed(runs[name])
            walls[name].append(w)
            cpus[name].append(c)
    timings = {k: v for k, v in walls.items()}
    cpu = {k: statistics.median(v) for k, v in cpus.items()}
    base = statistics.median(timings["spark"])
    os.environ.setdefault("PYTHONHASHSEED", "0")  # portable_hash refuses to run without it
    sample = [k for k, _ in data[:100_000]]
    ns_base = _ns_per_call(portable_hash, sample)
    print(f"\n(a) routing overhead, uniform keys: partitionBy({n}) + count of {m} records, "
          f"local[2], medians of {repeats} interleaved in random order after a warm-up; "
          "cpu = driver + JVM + Python workers")
    head = (f"{'strategy':<10} {'kind':<9} {'median s':>9} {'vs partitionBy':>15} "
            f"{'cpu s':>6} {'vs':>6} {'ns/call':>8} {'vs portable_hash':>17}")
    print(head + "\n" + "-" * len(head))
    cpu0 = cpu["spark"]

    def cpu_cols(name: str) -> str:
        return f"{cpu[name]:>6.2f} {cpu[name] / cpu0:>5.2f}x"

    print(f"{'(spark)':<10} {'-':<9} {base:>9.2f} {1.0:>14.2f}x {cpu_cols('spark')} "
          f"{ns_base:>8.0f} {1.0:>16.2f}x")
    for name in names:
        f = fitted[name]
        med = statistics.median(timings[name])
        # what the adapter calls per record: a key-grouping function's partition (inlined
        # in the adapter's own map loop, spark.fnshuffle), else the guarded function's
        # bound __call__ handed to PySpark
        ns = _ns_per_call(f.partition if inlinable(f) else
                          partition_func(KeyGuard(f.fresh() if f.splits_keys else f)), sample)
        kind = "split" if f.splits_keys else "group"
        print(f"{name:<10} {kind:<9} {med:>9.2f} {med / base:>14.2f}x {cpu_cols(name)} "
              f"{ns:>8.0f} {ns / ns_base:>16.2f}x")
    if zero_pass:
        med = statistics.median(timings["auto/0-pass"])
        print(f"{'auto/0-pass':<10} {'groups':<9} {med:>9.2f} {med / base:>14.2f}x "
              f"{cpu_cols('auto/0-pass')} {'-':>8} {'-':>17}")
    for name, fn in direct.items():
        med = statistics.median(timings[name])
        ns = _ns_per_call(fn, sample)
        kind = "instance" if name.endswith("/instance") else "no memo"
        print(f"{name:<14} {kind:<8} {med:>9.2f} {med / base:>14.2f}x {cpu_cols(name)} "
              f"{ns:>8.0f} {ns / ns_base:>16.2f}x")
    rdd.unpersist()


def part_c(sc, quick: bool, repeats: int) -> None:
    n = 2  # = cores of local[2]: a partition's excess load is the stage's excess time
    m = 60_000 if quick else 200_000
    z, keys_n, work_us = 1.5, 2000, 30.0
    keys = zipf_records(keys_n, z, m, seed=3)
    rdd = sc.parallelize(list(zip(keys.tolist(), (np.arange(m) % 97).tolist())), 4).cache()
    rdd.count()
    loops = loops_for_us(work_us)
    names = registered(("hash", "pkg", "dchoices", "wchoices", "tag", "mixed"))
    costly_reduce(rdd, n, "hash", 1)  # warm-up
    runs: dict[str, list] = {k: [] for k in names}
    for i in range(repeats):
        order = names if i % 2 == 0 else names[::-1]  # alternate order: load drift cancels
        for name in order:
            runs[name].append(costly_reduce(rdd, n, name, loops))
    base_wall = statistics.median(r.wall for r in runs["hash"])
    base_crit = statistics.median(max(r.seconds) for r in runs["hash"])
    base_cpu = statistics.median(max(r.cpu) for r in runs["hash"])
    print(f"\n(c) skewed costly reduce: {m} records, {keys_n} keys, Zipf z={z} (hottest key "
          f"{np.bincount(keys).max() / m:.1%}), ~{work_us:g} us/record after the shuffle, "
          f"n={n} on local[2], median of {repeats}")
    head = (f"{'strategy':<10} {'rec max/avg':>11} {'time max/avg':>12} {'crit.path s':>11} "
            f"{'vs hash':>8} {'crit.cpu s':>10} {'vs hash':>8} {'wall s':>7} {'vs hash':>8}")
    print(head + "\n" + "-" * len(head))
    for name in names:
        rs = runs[name]
        crit = statistics.median(max(r.seconds) for r in rs)
        wall = statistics.median(r.wall for r in rs)
        cpu = statistics.median(max(r.cpu) for r in rs)
        print(f"{name:<10} {statistics.median(r.imbalance for r in rs):>11.2f} "
              f"{statistics.median(r.time_imbalance for r in rs):>12.2f} {crit:>11.2f} "
              f"{crit / base_crit:>7.2f}x {cpu:>10.2f} {cpu / base_cpu:>7.2f}x "
              f"{wall:>7.2f} {wall / base_wall:>7.2f}x")
    print("crit.path: slowest costly task (wall); crit.cpu: its CPU seconds (robust to other "
          "processes on a shared machine); wall: the whole job.")
    rdd.unpersist()


def parts_ok(spec: str) -> bool:
    """Whether ``spec`` names only parts of this benchmark (a, b, c)."""
    return bool(spec) and set(spec.split(",")) <= {"a", "b", "c"}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes, 3 repeats")
    p.add_argument("--part", default="a,b,c", help="comma list of the parts to run (a,b,c)")
    p.add_argument("--repeats", type=int, default=None, help="default 5, quick 3")
    args = p.parse_args(argv)
    if not parts_ok(args.part):
        p.error(f"--part {args.part!r}; expected a comma list of a, b, c")
    parts = set(args.part.split(","))
    repeats = args.repeats or (3 if args.quick else 5)
    if "b" in parts:
        part_b(args.quick)
    if parts & {"a", "c"}:
        spark = local_session(2, "bench-routing", bridge=True)
        try:
            if "a" in parts:
                part_a(spark.sparkContext, args.quick, repeats)
            if "c" in parts:
                part_c(spark.sparkContext, args.quick, repeats)
        finally:
            spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
