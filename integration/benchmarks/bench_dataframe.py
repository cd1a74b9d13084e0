"""Benchmark: balanced DataFrame groupBy / join vs plain Spark (AQE on) on Zipf-skewed keys.

Aggregation: a holistic per-group computation (``collect_list`` then a costly JVM-side
``transform`` — a chain of ``sha2`` over every element), so the work runs after the
exchange, in proportion to the rows of each key; partial aggregation cannot move it to the
map side and AQE does not split aggregations. Compared: plain ``groupBy`` (AQE on),
``repartition(n, key)`` + ``groupBy``, and ``sparkbalance.group_by`` (strategies mixed,
keygroups).

Join: a skewed fact table joined with a dimension table (one row per key), then a costly
per-row expression on the joined rows. Plain Spark with AQE's skew-join handling on (its
byte thresholds lowered to 1 KB so that only its factor rule decides; broadcast joins off
so both sides shuffle) vs ``sparkbalance.join(strategy="split")`` (hot-key split).
In both benchmarks AQE's partition coalescing is off (every method keeps n partitions):
on this small data AQE would merge all n partitions into one or two tasks and the
comparison would measure that instead of skew.

Figures per configuration (medians over repeats):
  wall    : job wall-clock seconds on this machine (local[2]: 2 task slots).
  span cpu: one-wave stage makespan = CPU seconds of the longest task of the post-exchange
            stage (sparkbalance.spark.metrics.listener.TaskMetricsListener); what the stage takes
            with >= n free cores (on 2 shared cores the n tasks queue, so wall time hides the
            skew, and run times swing with the other processes' load; CPU time does not).
  stage cpu: total CPU seconds of that stage (the work itself; ours should not add any).
  rows    : max/avg rows per partition of the post-exchange stage (from the key counts and
            each method's partition function; plain Spark's is pmod(murmur3(k), n)).
  stats   : seconds of our statistics pass + planning, and its share of our total.

Usage: python integration/benchmarks/bench_dataframe.py [--quick]
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

import sparkbalance as sb  # noqa: E402
from sparkbalance.planning.split import plan_split  # noqa: E402
from sparkbalance.spark.sql import dataframe as sbdf
from sparkbalance.spark.sql.keystats import key_stats  # noqa: E402

ZIPF = (1.0, 1.5)


def build_session():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").appName("bench-dataframe")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "2g")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true")
             .config("spark.sql.adaptive.enabled", "true")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def zipf_keys(rows: int, num_keys: int, z: float, seed: int) -> np.ndarray:
    """Keys 0..K-1 with P(rank r) ∝ r^-z, shuffled ids so heavy keys are not 0, 1, 2..."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, num_keys + 1) ** z
    ranks = rng.choice(num_keys, size=rows, p=p / p.sum())
    ids = rng.permutation(num_keys)
    return ids[ranks].astype(np.int64)


def sha_chain(col, depth: int):
    """Costly JVM-side per-row work: sha2(repeat(sha2(x), depth)) hashes 64*depth bytes.

    (A literal chain of ``depth`` nested sha2 calls would exceed the analyzer's iteration
    limit for large depths; the repeat keeps the cost linear in ``depth`` in one call.)
    """
    from pyspark.sql import functions as F
    return F.sha2(F.repeat(F.sha2(col.cast("string"), 256), depth), 256)


def run_job(spark, df):
    """Run ``df`` to completion (noop sink).

    Returns wall seconds, and for the last (post-exchange) stage: the longest task's CPU
    seconds (the one-wave makespan in CPU terms) and the stage's total CPU seconds.
    Task CPU time (JVM thread CPU; all of the work here is JVM-side) does not grow when
    other processes compete for the cores, unlike run time: this machine is shared.
    """
    from sparkbalance.spark.metrics.listener import TaskMetricsListener
    with TaskMetricsListener(spark) as lst:
        t0 = time.perf_counter()
        df.write.format("noop").mode("overwrite").save()
        wall = time.perf_counter() - t0
    tasks = [t for t in lst.tasks(successful_only=True)]
    last = max(t.stage_id for t in tasks)
    cpu = [t.cpu_time_ns / 1e9 for t in tasks if t.stage_id == last]
    return wall, max(cpu), sum(cpu)


def measure(spark, make, repeats):
    walls, spans, totals = [], [], []
    for _ in range(repeats):
        w, s, t = run_job(spark, make())
        walls.append(w)
        spans.append(s)
        totals.append(t)
    return med(walls), med(spans), med(totals)


def plain_rows(spark, df, n):
    """Rows per partition under Spark's hash partitioning pmod(murmur3(k, 42), n)."""
    from pyspark.sql import functions as F
    got = dict(df.groupBy(F.pmod(F.hash("k"), F.lit(n)).alias("p")).count().collect())
    return np.array([got.get(i, 0) for i in range(n)], dtype=np.float64)


def ratio(a):
    return float(a.max() / a.mean()) if a.mean() > 0 else 1.0


def med(xs):
    return statistics.median(xs)


def bench_aggregation(spark, args, out):
    from pyspark.sql import functions as F
    n, depth = args.partitions, args.depth
    spark.conf.set("spark.sql.shuffle.partitions", str(n))
    # AQE coalesces partitions below its advisory size (64 MB): on this small data it merges
    # plain's n partitions into one or two tasks (measured: span 2.7x repartition(n, k)'s
    # with equal row counts). Keep n partitions everywhere: the comparison is about placement.
    spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")
    print(f"\n== skewed aggregation: {args.rows} rows, {args.keys} keys, n={n}, sha2 over "
          f"{64 * depth} B/row, AQE on, median of {args.repeats} ==")
    print(f"{'z':>4} {'method':<22} {'wall s':>7} {'span cpu':>8} {'span/plain':>10} "
          f"{'stage cpu':>9} {'rows max/avg':>12} {'stats s':>8} {'stats %':>7}")

    def work(grouped):
        vs = grouped.agg(F.collect_list("v").alias("vs"))
        return vs.select("k", F.size(F.filter(F.transform("vs", lambda x: sha_chain(x, depth)),
                                              lambda h: h.startswith("0"))).alias("c"))

    for z in ZIPF:
        keys = zipf_keys(args.rows, args.keys, z, seed=11)
        import pandas as pd
        pdf = pd.DataFrame({"k": keys, "v": np.arange(args.rows, dtype=np.int64)})
        df = spark.createDataFrame(pdf).repartition(2).cache()
        df.count()
        counts = np.bincount(keys, minlength=args.keys).astype(np.float64)
        plain_dist = plain_rows(spark, df, n)
        methods = {
            "plain groupBy (AQE)": (lambda: work(df.groupBy("k")), plain_dist, 0.0),
            "repartition(n,k)": (lambda: work(df.repartition(n, "k").groupBy("k")),
                                 plain_dist, 0.0),
        }
        for strategy in args.strategies:
            t0 = time.perf_counter()
            stats = key_stats(df, "k")
            t1 = time.perf_counter()
            f = sbdf.fit_partitioner(df, n, "k", strategy=strategy, stats=stats)
            stats_s = time.perf_counter() - t0
            print(f"     ({strategy}: statistics pass {t1 - t0:.2f} s for {len(stats)} keys, "
                  f"fit {time.perf_counter() - t1:.3f} s)", flush=True)
            dist = np.bincount(f.assign(stats.keys), weights=stats.counts, minlength=n)
            methods[f"ours {strategy}"] = (
                (lambda f=f: work(sb.group_by(df, "k", num_partitions=n, partitioner=f))),
                dist, stats_s)
        base_span = None
        for name, (make, dist, stats_s) in methods.items():
            wall, span, total = measure(spark, make, args.repeats)
            base_span = span if base_span is None else base_span
            share = stats_s / (stats_s + wall) if stats_s else 0.0
            print(f"{z:>4} {name:<22} {wall:>7.2f} {span:>8.2f} {span / base_span:>10.2f} "
                  f"{total:>9.2f} {ratio(dist):>12.2f} {stats_s:>8.2f} {100 * share:>6.1f}%",
                  flush=True)
            out.append(("agg", z, name, wall, span, span / base_span, ratio(dist), stats_s))
        lb = max(1.0, counts.max() / (counts.sum() / n))
        print(f"{z:>4} {'(key-grouping bound)':<22} {'':>7} {'':>7} {'':>10} {lb:>12.2f}")
        df.unpersist()
    spark.conf.unset("spark.sql.adaptive.coalescePartitions.enabled")


def bench_join(spark, args, out):
    from pyspark.sql import functions as F
    n, depth = args.partitions, args.depth
    spark.conf.set("spark.sql.shuffle.partitions", str(n))
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    spark.conf.set("spark.sql.adaptive.skewJoin.enabled", "true")
    print(f"\n== skewed join: {args.rows} x {args.keys} rows, n={n}, sha2 over {64 * depth} B "
          f"per output row, broadcast off, median of {args.repeats} ==")
    print(f"{'z':>4} {'method':<26} {'wall s':>7} {'wall/AQE':>8} {'span cpu':>8} "
          f"{'span/AQE':>8} {'stage cpu':>9} {'stats s':>8} {'stats %':>7}")
    for z in ZIPF:
        keys = zipf_keys(args.rows, args.keys, z, seed=13)
        import pandas as pd
        left = spark.createDataFrame(pd.DataFrame(
            {"k": keys, "v": np.arange(args.rows, dtype=np.int64)})).repartition(2).cache()
        right = spark.range(args.keys).select(F.col("id").alias("k"),
                                              F.concat(F.lit("name"), F.col("id")).alias("name"))
        right = right.repartition(2).cache()
        left.count(), right.count()
        # AQE's skew thresholds (256 MB, 64 MB advisory) would never fire on this data: put
        # the byte floor at 1 KB so that only the factor (a partition > 5x the median) decides,
        # and let skewed partitions be cut to the non-skewed average (advisory 1 KB).
        # Coalescing is off: on small data it merges all n partitions into one task.
        spark.conf.set("spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes", "1024")
        spark.conf.set("spark.sql.adaptive.advisoryPartitionSizeInBytes", "1024")
        spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")

        def costly(j):
            return j.select("k", sha_chain(F.concat(F.col("v").cast("string"), F.col("name")),
                                           depth).alias("h"))

        t0 = time.perf_counter()
        stats = key_stats(left, "k")
        plan = plan_split(stats, n)
        stats_s = time.perf_counter() - t0
        methods = {
            "plain SMJ, AQE skew-join": (lambda: costly(left.join(right, "k")), 0.0),
            "ours split (inner)": (lambda: costly(sb.join(
                left, right, "k", num_partitions=n, strategy="split", stats=stats)), stats_s),
            "plain left outer, AQE": (lambda: costly(left.join(right, "k", "left")), 0.0),
            "ours split (left outer)": (lambda: costly(sb.join(
                left, right, "k", "left", num_partitions=n, strategy="split", stats=stats)),
                stats_s),
        }
        base = None
        for name, (make, st) in methods.items():
            wall, span, total = measure(spark, make, args.repeats)
            if name.startswith("plain"):
                base = (wall, span)
            share = st / (st + wall) if st else 0.0
            print(f"{z:>4} {name:<26} {wall:>7.2f} {wall / base[0]:>8.2f} {span:>8.2f} "
                  f"{span / base[1]:>8.2f} {total:>9.2f} {st:>8.2f} {100 * share:>6.1f}%",
                  flush=True)
            out.append(("join", z, name, wall, span, span / base[1], wall / base[0], st))
        print(f"{z:>4} plan: {plan.explain()}")
        left.unpersist()
        right.unpersist()
    spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.unset("spark.sql.adaptive.coalescePartitions.enabled")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--depth", type=int, default=None,
                    help="per-row cost: sha2 over 64*depth bytes")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--only", choices=("agg", "join"), default=None)
    args = ap.parse_args(argv)
    args.rows = args.rows or (40_000 if args.quick else 200_000)
    args.depth = args.depth or (30 if args.quick else 300)
    args.repeats = args.repeats or (1 if args.quick else 3)
    from sparkbalance import strategies
    args.strategies = []
    for s in ("mixed", "keygroups"):
        try:
            strategies.get(s).load()
            args.strategies.append(s)
        except (ImportError, AttributeError):
            pass
    args.strategies = args.strategies or ["hash"]
    spark = build_session()
    out: list = []
    try:
        if args.only in (None, "agg"):
            bench_aggregation(spark, args, out)
        if args.only in (None, "join"):
            bench_join(spark, args, out)
    finally:
        spark.stop()
    return out


if __name__ == "__main__":
    main()
