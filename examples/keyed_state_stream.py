"""Keyed state over a stream of batches whose hot keys shift, rebalanced by moving only a few keys.

What it shows
    ``sb.KeyedStateOperator`` keeps a running sum per key across batches. Each batch is
    routed with the current partition function and merged with the cached state without
    shuffling the state; when the batch's load is out of balance (max/mean above 1 + θ) the
    planner ("mixed": routing table, Fang et al.) computes a new routing table and only the
    keys whose partition changed move. ``op.history`` has one row per batch: imbalance
    before/after, keys and bytes moved, seconds. A last batch's hot keys are known ahead
    (a scheduled event): ``op.rebalance(forecast)`` moves the state to the plan for them
    before the batch runs. The final state equals a plain count.

How to run
    ``python examples/keyed_state_stream.py`` where sparkbalance is installed (from a checkout:
    ``.venv/bin/python examples/keyed_state_stream.py``, or ``PYTHONPATH=. python ...``). Needs
    PySpark 3.5 or 4.x and Java 17, nothing else. Finishes in seconds on ``local[2]``.
    Pass ``checkpoint_dir=`` to the operator to make it restartable.
"""
from __future__ import annotations

import os
import sys
from collections import Counter

import sparkbalance as sb

NUM_PARTITIONS = 4
NUM_BATCHES = 3


def _session():
    # Executors start Python workers that import sparkbalance: use this interpreter.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").appName("sparkbalance-example")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def batch_records(t: int) -> list[tuple[str, int]]:
    """Batch t: 400 keys once each, plus 100 records each of 3 hot keys that shift every batch."""
    hot = [f"k{(37 * t + 11 * j) % 400}" for j in range(3)]
    return [(f"k{i}", 1) for i in range(400)] + [(k, 1) for k in hot for _ in range(100)]


def main(spark=None) -> list:
    """Run the example; returns ``op.history`` (one record per batch)."""
    own = spark is None
    spark = _session() if own else spark
    try:
        sc = spark.sparkContext
        batches = [sc.parallelize(batch_records(t), 2) for t in range(NUM_BATCHES)]
        op = sb.KeyedStateOperator(spark, NUM_PARTITIONS, update=lambda s, v: s + v,
                                   initial=0, planner="mixed", theta=0.2)
        try:
            for batch_id, rdd in enumerate(batches):
                op.process(rdd, batch_id=batch_id).count()   # consume this batch's outputs
            # The next batch's hot keys are known ahead: move first, then run it.
            coming = batch_records(NUM_BATCHES)
            moved = op.rebalance(Counter(k for k, _ in coming))   # {key: predicted work}
            op.process(sc.parallelize(coming, 2), batch_id=NUM_BATCHES).count()
            print("batch  imbalance before -> after  keys moved  bytes moved  seconds")
            for h in op.history:
                print(f"{h.batch_id:5}  {h.imbalance_before:16.2f} -> {h.imbalance_after:5.2f}"
                      f"  {h.keys_moved:10}  {h.bytes_moved:11.0f}  {h.batch_seconds:7.2f}")
            print(f"moved ahead of batch {NUM_BATCHES}: "
                  f"{moved.keys_moved if moved else 0} keys")
            expected = Counter(k for t in range(NUM_BATCHES + 1) for k, _ in batch_records(t))
            assert op.collect_state() == dict(expected), "state differs from a plain count"
            print(f"state of {len(expected)} keys equals a plain count; routing table size "
                  f"{op.history[-1].table_size}")
            return list(op.history)
        finally:
            op.close()
    finally:
        if own:
            spark.stop()


if __name__ == "__main__":
    main()
