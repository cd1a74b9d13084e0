"""Time-aware weights: balance by measured task time, not by record counts.

What it shows
    Partition 1 of a stage is slow (here: a sleep per record, standing for a slow executor
    or a costly key range). ``sb.open_listener`` records the stage's task durations (through
    the JVM bridge jar when it is loaded, else a py4j SparkListener) while the stage runs
    under a hash partitioner, inside ``sb.sparkbalance_job_group``, so only these jobs are
    measured. ``sb.fit_partitioner(..., weights="time", listener=..., current=...)`` turns
    the records into seconds per record of each partition and fits time-aware grouping
    ("tag", Yang et al.): its completion times t_i show partition 1 as the slowest, and heavy
    keys are sent less often to it.

How to run
    ``python examples/time_aware_weights.py`` where sparkbalance is installed (from a checkout:
    ``.venv/bin/python examples/time_aware_weights.py``, or ``PYTHONPATH=. python ...``). Needs
    PySpark 3.5 or 4.x and Java 17, nothing else. Finishes in seconds on ``local[2]``.
"""
from __future__ import annotations

import os
import sys
import time

import sparkbalance as sb
from sparkbalance.routing import HashPartitioner

NUM_PARTITIONS = 4
SLOW_PARTITION = 1
JOB_GROUP = "sparkbalance-example-time"


def _session():
    # Executors start Python workers that import sparkbalance: use this interpreter.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").appName("sparkbalance-example")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def work(pid, records):
    """The stage's per-partition work: 4x slower per record on the slow partition."""
    n = 0
    for _ in records:
        n += 1
        time.sleep(0.008 if pid == SLOW_PARTITION else 0.002)
    yield n


def main(spark=None):
    """Run the example; returns the fitted partition function."""
    own = spark is None
    spark = _session() if own else spark
    try:
        sc = spark.sparkContext
        pairs = sc.parallelize([(k % 40, 1) for k in range(800)], 2)
        current = HashPartitioner(NUM_PARTITIONS)         # how the stage is routed today

        with sb.open_listener(spark, JOB_GROUP) as listener, \
                sb.sparkbalance_job_group(sc, JOB_GROUP):
            pairs.partitionBy(NUM_PARTITIONS, current).mapPartitionsWithIndex(work).collect()

        f = sb.fit_partitioner(pairs, NUM_PARTITIONS, strategy="tag", weights="time",
                               listener=listener, current=current)
        # t_i: measured seconds per record of partition i, scaled to mean 1 (only ratios matter)
        times = [round(float(t), 2) for t in f.completion_times]
        print(f"relative completion time t_i by partition: {times}")
        slowest = max(range(NUM_PARTITIONS), key=lambda i: times[i])
        assert slowest == SLOW_PARTITION, f"expected partition {SLOW_PARTITION} slowest"
        print(f"partition {slowest} is the slowest: TAG sends heavy keys there least often")
        return f
    finally:
        if own:
            spark.stop()


if __name__ == "__main__":
    main()
