"""A Spark ``applyInPandasWithState`` job moved to sparkbalance by changing one line.

What it shows
    A streaming count per user over a parquet file source (one file per trigger; a few hot
    users carry most of the rows, and the hot users change). The user's function, its
    ``GroupState`` calls and the ``writeStream`` chain are Spark's, unchanged; only
    ``stream.groupBy("user")`` becomes ``stateful(stream.groupBy("user"))``. The state is
    kept by the keyed-state operator, which measures each batch and moves the few hot users
    whose partitions are overloaded. Outputs go to the user's own ``foreachBatch``.
    The result is checked against the same query on Spark's own ``applyInPandasWithState``.

How to run
    From the repository root: ``.venv/bin/python examples/stateful_drop_in.py``
    (or ``PYTHONPATH=. python examples/stateful_drop_in.py``). Finishes in under a minute
    on ``local[2]``.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from typing import Iterator

import pandas as pd

from sparkbalance.state.pandas_state import stateful

NUM_BATCHES = 4
ROWS_PER_BATCH = 2_000


def _session():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").appName("sparkbalance-stateful")
             .config("spark.sql.shuffle.partitions", "4")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def count_per_user(key: tuple, pdfs: Iterator[pd.DataFrame], state) -> Iterator[pd.DataFrame]:
    """Spark's contract: the user's rows of this batch, the user's state; yield outputs."""
    n = sum(len(p) for p in pdfs)
    total = (state.get[0] if state.exists else 0) + n
    state.update((total,))
    yield pd.DataFrame({"user": [key[0]], "events": [total]})


def write_batch(folder: str, t: int) -> None:
    # Hot users move every 2 batches: half the rows go to 3 users, the rest spread out.
    hot = [f"u{(t // 2) * 3 + i}" for i in range(3)]
    users = [hot[i % 3] if i % 2 == 0 else f"u{100 + i % 200}" for i in range(ROWS_PER_BATCH)]
    pd.DataFrame({"user": users, "amount": range(ROWS_PER_BATCH)}).to_parquet(
        os.path.join(folder, f"batch-{t:03d}.parquet"))


def main(spark=None) -> None:
    own = spark is None
    spark = spark or _session()
    base = tempfile.mkdtemp(prefix="sb-stateful-example-")
    src = os.path.join(base, "in")
    os.makedirs(src)
    try:
        def events():
            return (spark.readStream.schema("user string, amount long")
                    .option("maxFilesPerTrigger", 1).parquet(src))

        queries = {}
        for name, grouped in (("spark", events().groupBy("user")),
                              ("sparkbalance", stateful(events().groupBy("user")))):  # the line
            queries[name] = (grouped
                             .applyInPandasWithState(count_per_user, "user string, events long",
                                                     "events long", "Update", "NoTimeout")
                             .writeStream.outputMode("update")
                             .option("checkpointLocation", os.path.join(base, "ck-" + name))
                             .foreachBatch(_collector(spark, os.path.join(base, "out-" + name)))
                             .start())
        for t in range(NUM_BATCHES):
            write_batch(src, t)
            for q in queries.values():
                q.processAllAvailable()
        results = {name: _last_counts(spark, os.path.join(base, "out-" + name))
                   for name in queries}
        for q in queries.values():
            q.stop()
        assert results["spark"] == results["sparkbalance"], "differs from Spark's own"
        print(f"{len(results['sparkbalance'])} users, the same counts as Spark's "
              "applyInPandasWithState")
    finally:
        shutil.rmtree(base, ignore_errors=True)
        if own:
            spark.stop()


def _collector(spark, out: str):
    """A foreachBatch sink idempotent by batch id: one parquet folder per batch."""
    def write(df, batch_id: int) -> None:
        df.write.mode("overwrite").parquet(os.path.join(out, f"batch={batch_id}"))
    return write


def _last_counts(spark, out: str) -> dict:
    from pyspark.sql import functions as F
    rows = spark.read.parquet(out).groupBy("user").agg(F.max("events").alias("n")).collect()
    return {r.user: r.n for r in rows}


if __name__ == "__main__":
    main()
