"""Child driver of ``test_bridge_on_demand.py``: one session, sparkbalance's JVM features run.

``python bridge_on_demand_app.py MASTER MODE OUT.json`` with MODE ``plain`` (the README's
``SparkSession.builder...getOrCreate()``: the bridge comes on first use) or ``configured``
(``sparkbalance.configure(builder)``: the jar is there from launch). The package is put on
this driver's ``sys.path`` by hand, not through ``PYTHONPATH``, so the executors' Python
finds sparkbalance only if sparkbalance ships it. Writes what it saw as JSON.
"""
from __future__ import annotations

import json
import logging
import operator
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                    format="[app] %(levelname)s %(name)s %(message)s")
logging.getLogger("sparkbalance.spark.session").setLevel(logging.INFO)


def main(master: str, mode: str, out_path: str) -> None:
    from pyspark.sql import SparkSession

    import sparkbalance as sb
    from sparkbalance.bench.shifting import batch_records, shifting_zipf_counts
    from sparkbalance.spark.rdd import mapstats
    from sparkbalance.spark.session.bridge import RECORDER_CLASS, class_available
    from sparkbalance.spark.session.executor_python import ensure_executor_python
    from sparkbalance.spark.session.jvm_loader import bridge
    from sparkbalance.state.frames.rdds import frame_ops
    from sparkbalance.state.operator import KeyedStateOperator

    builder = (SparkSession.builder.master(master).appName(f"sparkbalance-on-demand-{mode}")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.executor.memory", "768m").config("spark.driver.memory", "1g")
               .config("spark.sql.shuffle.partitions", "4"))
    if mode == "configured":
        builder = sb.configure(builder)
    spark = builder.getOrCreate()
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    out: dict = {"spark": spark.version, "at_start": class_available(sc, RECORDER_CLASS),
                 "driver_module": sb.__file__}

    # the cluster masters' question (one probe task, pickled by value), asked here before
    # sparkbalance shipped anything
    from sparkbalance.spark.session.executor_python import _job_probe
    out["probe_before"] = _job_probe(sc)

    # the README's default call: strategy 'auto', zero-pass statistics (JVM MapStats and
    # its PairSerializer in the executors' shuffle), on skewed keys
    recs = [(k % 7 if k % 3 else k, 1) for k in range(3000)] + [("hot", i) for i in range(900)]
    pairs = sc.parallelize(recs, 4)
    shuffled = sb.partition_by(pairs, 8)
    fn = mapstats.fitted_function(shuffled)
    placed = shuffled.mapPartitionsWithIndex(lambda i, it: ((i, kv) for kv in it)).collect()
    out["zero_pass"] = {
        "fitted": type(fn).__name__,
        "records": sorted(repr(kv) for _, kv in placed) == sorted(map(repr, recs)),
        "placed_as_fitted": fn is not None and all(fn(k) == i for i, (k, _) in placed),
        "placement": sorted(repr((i, k)) for i, (k, _) in placed)}
    out["reduce"] = sorted(map(repr, sb.reduce_by_key(pairs, operator.add, 8).collect()))
    out["bridge"] = repr(bridge(sc).loaded if bridge(sc) is not None else None)
    out["python"] = ensure_executor_python(sc)
    out["executor_modules"] = sorted(set(sc.parallelize(range(4), 4).map(
        lambda _: __import__("sparkbalance").__file__).collect()))

    # the keyed state with its frames selected in the JVM, across executors
    batches = [batch_records(k, c, seed=t) for t, (k, c) in enumerate(
        shifting_zipf_counts(60, 4, 5, z=1.1, records_per_batch=300, f=2.0, seed=3))]
    ref: dict = {}
    for b in batches:
        for k, v in b:
            ref[k] = ref.get(k, 0) + v
    op = KeyedStateOperator(spark, 4, update=operator.add, initial=0, planner="mixed",
                            theta=0.05, trigger="paper")
    for t, b in enumerate(batches):
        op.process(sc.parallelize(b, 4), batch_id=t)
    state = op.collect_state()
    out["state"] = {"jvm_frames": frame_ops(sc).jvm, "exact": state == ref,
                    "rebalanced": sum(h.rebalanced for h in op.history),
                    "items": sorted(map(repr, state.items()))}
    op.close()
    out["jars"] = str(sc._jsc.sc().listJars().mkString(",")).split(",")
    Path(out_path).write_text(json.dumps(out))
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:4])
