"""Rows per partition of every candidate placement, counted in one job (for ``sb.diagnose``).

:func:`sparkbalance.spark.diagnose.skew_report.diagnose` fits each key-grouping strategy on bounded key
statistics (the heaviest keys listed, the rest as totals), then needs the load each fitted
function *and* plain Spark's hash would put on each partition, tail keys included, without
bringing the keys to the driver. Here every row (DataFrame) or every aggregated key (pair
RDD) is placed by all of them at once, and only ``(functions + 1) x n`` sums come back.

Examples
--------
>>> spark_loads, loads, null_rows = df_loads(df, ["k"], 8, {"mixed": f})   # doctest: +SKIP
>>> loads["mixed"].max() / loads["mixed"].mean()                            # doctest: +SKIP
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from sparkbalance.routing.base import PartitionFunction
from sparkbalance.stats.keystats import as_key_array
from sparkbalance.spark.sql.route import NULL_PARTITION

__all__ = ["df_loads", "rdd_loads"]


def df_loads(df: Any, cols: Sequence[str], n: int, fitted: dict[str, PartitionFunction]
              ) -> tuple[np.ndarray, dict[str, np.ndarray], int]:
    """Rows per partition of plain Spark's hash and of each fitted function, and the
    null-key rows: one job whose result is ``(len(fitted) + 1) x n`` counts, whatever the
    number of keys. Each function's partition is the SQL expression the placement itself
    computes (:func:`~sparkbalance.spark.sql.route.with_partition_id`), so the predicted
    loads are those of the placement, unlisted tail keys included."""
    from pyspark.sql import functions as F
    from sparkbalance.spark.sql import hash_columns as sqlhash
    from sparkbalance.spark.sql.route import with_partition_id
    cols = sqlhash.check_key_columns(df, cols)
    rows = df.select(*[sqlhash.column_ref(df, c) for c in cols])
    cells = [F.struct(F.lit(-1).alias("s"), F.pmod(F.hash(*cols), F.lit(n)).alias("p"))]
    for i, f in enumerate(fitted.values()):
        rows = with_partition_id(rows, f, *cols, name=f"__sb_p{i}")
        cells.append(F.struct(F.lit(i).alias("s"), F.col(f"__sb_p{i}").alias("p")))
    agg = (rows.select(F.explode(F.array(*cells)).alias("c"),
                       sqlhash.any_null(rows, cols).cast("long").alias("z"))
           .groupBy("c.s", "c.p").agg(F.count(F.lit(1)).alias("n"), F.sum("z").alias("z")))
    table = np.zeros((len(fitted) + 1, n))
    null_rows = 0
    for r in agg.collect():
        table[r["s"] + 1, r["p"]] += r["n"]
        null_rows += r["z"] if r["s"] == -1 else 0
    return table[0], dict(zip(fitted, table[1:])), int(null_rows)


def rdd_loads(rdd: Any, n: int, fitted: dict[str, PartitionFunction]
               ) -> tuple[np.ndarray, dict[str, np.ndarray], int]:
    """As :func:`df_loads` for a pair RDD: per-key counts stay on the executors, each
    partition of them is placed by every function (vectorised ``assign``) and only the
    ``(len(fitted) + 1) x n`` sums reach the driver."""
    from operator import add

    from pyspark.rdd import portable_hash
    fs = list(fitted.values())

    def loads(part: Any) -> Any:
        keys, counts = [], []
        table = np.zeros((len(fs) + 1, n))
        nulls = 0
        for k, c in part:
            if k is None:   # portable_hash(None) == 0: Spark's partition 0, as ours
                table[:, NULL_PARTITION] += c
                nulls += c
                continue
            table[0, portable_hash(k) % n] += c
            keys.append(k)
            counts.append(c)
        if keys:
            arr, w = as_key_array(keys), np.asarray(counts, float)
            for i, f in enumerate(fs):
                table[i + 1] += np.bincount(f.assign(arr), weights=w, minlength=n)
        yield table, nulls

    counts = rdd.map(lambda kv: (kv[0], 1)).reduceByKey(add)
    table, nulls = counts.mapPartitions(loads).treeReduce(
        lambda a, b: (a[0] + b[0], a[1] + b[1]))
    return table[0], dict(zip(fitted, table[1:])), int(nulls)
