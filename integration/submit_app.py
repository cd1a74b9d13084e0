"""The application ``integration/test_spark_submit.py`` runs with ``spark-submit``.

Its Python (driver and executors) has no sparkbalance installed: the package comes from the
``--py-files`` zip, the bridge from ``--jars``. Every result is compared with plain Spark's
here; the JSON written to ``argv[1]`` tells the test what ran where.

Not a test module (pytest collects ``test_*.py`` only).
"""
from __future__ import annotations

import json
import operator
import sys
import time

_T0 = time.time()


def _step(name: str) -> None:
    # progress on stderr: the test shows it when the application fails or is slow
    print(f"[submit_app {time.time() - _T0:6.1f}s] {name}", file=sys.stderr, flush=True)


def _executor_module(_):
    import sparkbalance
    yield sparkbalance.__file__


def main(out_path: str) -> None:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import sparkbalance as sb
    from sparkbalance.spark.session.bridge import bridge_available
    from sparkbalance.state.operator import KeyedStateOperator
    from sparkbalance.bench.shifting import batch_records, shifting_zipf_counts

    spark = sb.configure(SparkSession.builder.appName("sparkbalance-submit")).getOrCreate()
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    out: dict = {"driver_module": sb.__file__, "bridge": bridge_available(spark),
                 "executor_modules": sorted(set(
                     sc.parallelize(range(4), 4).mapPartitions(_executor_module).collect()))}

    _step("session up")
    # RDD adapters: key-grouping and splitting strategies equal plain Spark.
    data = [(i % 7 if i % 3 else 0, i) for i in range(3000)]
    rdd = sc.parallelize(data, 4)
    other = sc.parallelize([(k, -k) for k in range(-2, 9)], 2)
    plain = sorted(rdd.reduceByKey(operator.add, 4).collect())
    plain_groups = sorted((k, sorted(v)) for k, v in rdd.groupByKey(4).collect())
    plain_join = sorted(rdd.join(other, 4).collect())
    rdd_ok = {}
    for strategy in ("mixed", "pkg", "keygroups"):
        rdd_ok[strategy] = (
            sorted(sb.reduce_by_key(rdd, operator.add, 4, strategy).collect()) == plain
            and sorted((k, sorted(v)) for k, v in
                       sb.group_by_key(rdd, 4, strategy).collect()) == plain_groups
            and sorted(sb.join(rdd, other, 4, strategy).collect()) == plain_join)
    out["rdd"] = rdd_ok
    _step("rdd adapters done")

    # DataFrame groupBy and join (placement without a Python UDF, 3.5 and 4.x alike).
    df = spark.createDataFrame(data, "k int, v long")
    dim = spark.createDataFrame([(k, f"n{k}") for k in range(-2, 9)], "k int, name string")
    got = sorted(sb.group_by(df, "k", num_partitions=4).agg(F.sum("v").alias("s")).collect())
    want = sorted(df.groupBy("k").agg(F.sum("v").alias("s")).collect())
    jgot = sorted(sb.join(df, dim, "k", num_partitions=4).collect())
    jwant = sorted(df.join(dim, "k").collect())
    out["dataframe"] = {"group_by": got == want, "join": jgot == jwant}
    _step("dataframe done")

    # Keyed-state stream with migrations, costs measured by the JVM recorder.
    batches = [batch_records(k, c, seed=t) for t, (k, c) in enumerate(
        shifting_zipf_counts(60, 4, 6, z=1.1, records_per_batch=300, f=2.0, seed=4))]
    ref: dict = {}
    for b in batches:
        for k, v in b:
            ref[k] = ref.get(k, 0) + v
    with sb.open_listener(spark, prefer="jvm") as listener:
        op = KeyedStateOperator(spark, 4, update=operator.add, initial=0, planner="mixed",
                                theta=0.05, listener=listener)
        for t, b in enumerate(batches):
            op.process(sc.parallelize(b, 4), batch_id=t)
        out["state"] = {"exact": op.collect_state() == ref,
                        "migrations": sum(h.rebalanced for h in op.history),
                        "recorder": type(listener).__name__,
                        "tasks_recorded": len(listener.tasks())}
        op.close()
    _step("keyed state done")
    spark.stop()
    with open(out_path, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main(sys.argv[1])
