"""Balanced DataFrame ``groupBy().agg()`` and join on a skewed key, checked against Spark.

What it shows
    ``sb.group_by(df, "user", num_partitions=8).agg(...)`` places the rows with a fitted
    skew-aware partition function (computed inside the JVM, no Python UDF) and aggregates
    with a single exchange. ``sb.join(clicks, users, "user", strategy="split")`` cuts the
    hot key of the big side into pieces on several partitions and copies the matching rows
    of the small side to each piece; the result is exactly ``clicks.join(users, "user")``.

How to run
    ``python examples/dataframe_groupby_join.py`` where sparkbalance is installed (from a
    checkout: ``.venv/bin/python examples/dataframe_groupby_join.py``, or
    ``PYTHONPATH=. python ...``). Needs PySpark 3.5 or 4.x and Java 17, nothing else: on
    Spark 4.1+ the rows are placed with ``DataFrame.repartitionById``, before that by Spark's
    own hash of a value chosen to land on the target partition (still one exchange).
    Finishes in a few seconds on ``local[2]``.
"""
from __future__ import annotations

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


def clicks_and_users(spark):
    """Clicks: user 0 has half of the 20 000 clicks. Users: one row per user (500)."""
    from pyspark.sql import functions as F
    clicks = (spark.range(20_000)
              .select(F.when(F.col("id") % 2 == 0, F.lit(0))
                      .otherwise(F.col("id") % 500).cast("int").alias("user"),
                      (F.col("id") % 7).cast("double").alias("amount")))
    users = spark.range(500).select(F.col("id").cast("int").alias("user"),
                                    F.concat(F.lit("name-"), F.col("id")).alias("name"))
    return clicks, users


def _assert_same_rows(got, expected) -> None:
    """The same rows, in any order (no pandas: pyspark.testing needs it on Spark 3.5)."""
    assert got.columns == expected.columns, (got.columns, expected.columns)
    assert Counter(got.collect()) == Counter(expected.collect())


def main(spark=None) -> dict:
    """Run the example; returns the row counts of the two results."""
    own = spark is None
    spark = _session() if own else spark
    try:
        from pyspark.sql import functions as F

        clicks, users = clicks_and_users(spark)

        totals = (sb.group_by(clicks, "user", num_partitions=NUM_PARTITIONS, strategy="mixed")
                  .agg(F.sum("amount").alias("total"), F.count("*").alias("clicks")))
        plain = clicks.groupBy("user").agg(F.sum("amount").alias("total"),
                                           F.count("*").alias("clicks"))
        _assert_same_rows(totals, plain)
        print("group_by(...).agg(...): same", totals.count(), "rows as groupBy().agg()")
        totals.orderBy(F.desc("clicks")).show(3)

        joined = sb.join(clicks, users, "user", strategy="split",
                         num_partitions=NUM_PARTITIONS)
        _assert_same_rows(joined, clicks.join(users, "user"))
        print("join(..., strategy='split'): same", joined.count(), "rows as join()")
        return {"group_by": totals.count(), "join": joined.count()}
    finally:
        if own:
            spark.stop()


if __name__ == "__main__":
    main()
