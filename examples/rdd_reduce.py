"""A skewed ``reduceByKey`` balanced by sparkbalance, checked against plain Spark.

What it shows
    One hot key holds half of the records. ``sb.reduce_by_key`` with a key-grouping strategy
    ("mixed": hash plus a small routing table) and with a splitting strategy ("pkg": Partial
    Key Grouping, each record goes to the less loaded of two partitions and the partial sums
    are merged) gives exactly the result of ``rdd.reduceByKey``. ``sb.fit_partitioner``
    returns the fitted partition function itself, so you can see where the keys go.

How to run
    ``python examples/rdd_reduce.py`` where sparkbalance is installed (from a checkout:
    ``.venv/bin/python examples/rdd_reduce.py``, or ``PYTHONPATH=. python ...``). Needs
    PySpark 3.5 or 4.x and Java 17, nothing else. Finishes in seconds on ``local[2]``.
"""
from __future__ import annotations

import operator
import os
import sys
from collections import Counter

import sparkbalance as sb

NUM_PARTITIONS = 8


def _session():
    # Executors start Python workers that import sparkbalance: use this interpreter.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").appName("sparkbalance-example")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def skewed_pairs(sc):
    """20 000 records: key "hot" 10 000 times, 1 000 other keys 10 times each."""
    records = [("hot", 1)] * 10_000 + [(f"k{i}", 1) for i in range(1_000) for _ in range(10)]
    return sc.parallelize(records, 4)


def main(spark=None) -> dict:
    """Run the example; returns ``{strategy: records per partition}`` for "hash" and "mixed"."""
    own = spark is None
    spark = _session() if own else spark
    try:
        sc = spark.sparkContext
        pairs = skewed_pairs(sc).cache()
        expected = dict(pairs.reduceByKey(operator.add).collect())

        for strategy in ("mixed", "pkg"):
            totals = dict(sb.reduce_by_key(pairs, operator.add, NUM_PARTITIONS,
                                           strategy=strategy).collect())
            assert totals == expected, f"{strategy}: result differs from reduceByKey"
            print(f"reduce_by_key(strategy={strategy!r}): same {len(totals)} totals as "
                  f"reduceByKey, hot -> {totals['hot']}")

        # Where do the records go? Count records per partition under each function.
        loads = {}
        counts = Counter(dict(pairs.countByKey()))
        for strategy in ("hash", "mixed"):
            f = sb.fit_partitioner(pairs, NUM_PARTITIONS, strategy=strategy)
            per_part = [0] * NUM_PARTITIONS
            for key, c in counts.items():
                per_part[f(key)] += c
            loads[strategy] = per_part
            print(f"{strategy:>6}: records per partition {per_part}")
        # Under "mixed" the hot key is one partition's whole load (a key-grouping function
        # cannot split a key: "pkg" can) and the other records are spread evenly.
        rest = sorted(loads["mixed"])[:-1]
        assert max(rest) - min(rest) <= 0.1 * sum(rest) / len(rest), loads["mixed"]
        pairs.unpersist()
        return loads
    finally:
        if own:
            spark.stop()


if __name__ == "__main__":
    main()
