"""One line for an unchanged job: `sb.enable(spark)`.

How to run: `python examples/enable_unchanged_job.py` (a local[2] session), or `main(spark)`
with a session of your own (neither changed nor stopped: the example turns the mode off
again).

The job below is written as for plain Spark — `groupBy().applyInPandas` and
`repartition(n, "user")` + `mapInPandas` over a table where five users hold 60 % of the rows.
After `sb.enable(spark)` each of those calls first runs a small skew check (a few rows of a
few input partitions) and goes through sparkbalance only when the check predicts the
slowest task at least 25 % shorter; the results are the same either way. `sb.disable()`
puts Spark back exactly. `sparkbalance.spark.enable.decisions()` says what each call did.
"""
from __future__ import annotations

import os
import sys

import pandas as pd
from pyspark.sql import SparkSession

import sparkbalance as sb
from sparkbalance.spark.enable import decisions

PARTITIONS = 8


def summarize(pdf: pd.DataFrame) -> pd.DataFrame:
    """A per-user step plain Spark cannot split (it sees all of a user's rows at once)."""
    return pd.DataFrame({"user": [pdf["user"].iloc[0]], "rows": [len(pdf)],
                         "total": [float(pdf["amount"].sum())]})


def double(batches):
    for pdf in batches:
        yield pdf.assign(amount=pdf["amount"] * 2)


def job(orders):
    """The user's job, unchanged: nothing here mentions sparkbalance."""
    per_user = orders.groupBy("user").applyInPandas(
        summarize, "user string, rows long, total double")
    doubled = orders.repartition(PARTITIONS, "user").mapInPandas(double, orders.schema)
    return per_user, doubled


def main(spark=None) -> list:
    own = spark is None
    if own:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        spark = (SparkSession.builder.master("local[2]").appName("enable-unchanged-job")
                 .config("spark.ui.enabled", "false").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
    rows = [(f"user-{i % 5}" if i % 5 < 3 else f"user-{100 + i % 211}", float(i % 7))
            for i in range(2000)]
    orders = spark.createDataFrame(rows, "user string, amount double").repartition(4).cache()
    try:
        plain = [sorted(d.collect()) for d in job(orders)]
        sb.enable(spark)                      # the one line
        seen = len(decisions())
        balanced = [sorted(d.collect()) for d in job(orders)]
        made = decisions()[seen:]
    finally:
        sb.disable(spark)                     # Spark's own methods back, exactly
        orders.unpersist()
    assert balanced == plain, "sb.enable must not change a result"
    for d in made:
        gain = "-" if d.gain is None else f"{d.gain:.2f}"
        print(f"{d.call}({', '.join(d.keys)}): {'balanced' if d.balanced else 'plain'}, "
              f"predicted slowest-task ratio plain/balanced {gain}")
    if own:
        spark.stop()
    return made


if __name__ == "__main__":
    main()
