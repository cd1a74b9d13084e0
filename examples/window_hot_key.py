"""A window over a hot partition key, split exactly.

How to run: `python examples/window_hot_key.py` (a local[2] session), or `main(spark)` with
a session of your own (neither changed nor stopped).

One user holds 30 % of the clicks. `Window.partitionBy("user").orderBy("ts")` puts all of
them in one task in plain Spark; `sb.with_window_columns` (here imported from its module)
cuts that user's rows into ranges of `ts` spread over the partitions, computes each window
over its range and corrects it from small per-range summaries, and returns the same rows
as `df.withColumns(...)`.
"""
from __future__ import annotations

import logging
import os
import sys

from pyspark.sql import SparkSession, Window, functions as F

from sparkbalance.spark.window.windows import explain_split, with_window_columns

PARTITIONS = 8


def _largest_share(df) -> float:
    """Rows of the fullest partition over the mean (partitions as the windows ran on)."""
    sizes = [r["count"] for r in df.groupBy(F.spark_partition_id()).count().collect()]
    return max(sizes) / (sum(sizes) / len(sizes))


def main(spark=None) -> dict:
    own = spark is None
    if own:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
        spark = (SparkSession.builder.master("local[2]").appName("window-hot-key")
                 .config("spark.sql.adaptive.enabled", "false")  # partition sizes as computed
                 .config("spark.ui.enabled", "false").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
    clicks = spark.range(40_000).select(
        F.when(F.col("id") % 10 < 3, F.lit(0)).otherwise(F.col("id") % 997 + 1).alias("user"),
        F.col("id").alias("ts"), (F.col("id") * 7 % 13).alias("amount"))
    w = Window.partitionBy("user").orderBy("ts")
    columns = {
        "n": F.row_number().over(w),
        "running": F.sum("amount").over(w),
        "prev": F.lag("amount").over(w),
        "last5": F.avg("amount").over(w.rowsBetween(-4, 0)),
        "share": F.cume_dist().over(w),
        "user_total": F.sum("amount").over(Window.partitionBy("user")),
    }
    # The hot user's 12,000 rows are few enough that the payoff rule would run these columns
    # as plain Spark (its excess is less than the split's own work, docs/windows.md):
    # forced here, on this small data, to show the split.
    old_mode = spark.conf.get("spark.sparkbalance.window.split", None)
    spark.conf.set("spark.sparkbalance.window.split", "always")
    kinds = explain_split(clicks, **columns)
    print("how each column is computed:", kinds)
    balanced = with_window_columns(clicks, PARTITIONS, **columns)
    plain = clicks.withColumns(columns)
    shares = {"balanced": _largest_share(balanced), "plain": _largest_share(plain)}
    print(f"largest partition / mean: balanced {shares['balanced']:.2f}, "
          f"plain {shares['plain']:.2f}")
    same = balanced.exceptAll(plain).count() == 0 and plain.exceptAll(balanced).count() == 0
    print("same rows as df.withColumns:", same)
    assert same, "with_window_columns must return df.withColumns' rows"
    assert all(not k.startswith("plain") for k in kinds.values()), kinds
    balanced.where("user = 0").orderBy("ts").show(5)
    if old_mode is None:
        spark.conf.unset("spark.sparkbalance.window.split")
    else:
        spark.conf.set("spark.sparkbalance.window.split", old_mode)
    if own:
        spark.stop()
    return {"kinds": kinds, **shares}


if __name__ == "__main__":
    main()
