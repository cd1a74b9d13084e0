"""A driver process for the driver-kill test (``test_driver_kill.py``): a 20-batch stream
through a ``KeyedStateOperator`` with a checkpoint directory, delivering each batch's
outputs to a sink (one file per batch id, replaced atomically: delivery is idempotent).

Run: ``python driver_kill_stream.py <checkpoint_dir> <sink_dir> <master>``. Killed at any
point, it is simply started again: it resumes from the checkpoint; a replayed batch is not
applied again, and the replay of the last committed batch returns its kept outputs, which
are delivered (the previous run may have died between the commit and the delivery).
"""
from __future__ import annotations

import operator
import os
import pickle
import sys
import time
from pathlib import Path

NUM_BATCHES = 20
ROOT = Path(__file__).resolve().parents[1]
BRIDGE_JAR = ROOT / "jvm_bridge" / "build" / "sparkbalance-bridge.jar"


def stream() -> list[list[tuple]]:
    from sparkbalance.bench.shifting import batch_records, shifting_zipf_counts
    return [batch_records(k, c, seed=t) for t, (k, c) in enumerate(
        shifting_zipf_counts(60, 3, NUM_BATCHES, z=1.1, records_per_batch=200, f=2.0,
                             seed=19))]


def reference() -> tuple[dict, list[dict]]:
    """Plain Python: the final state and every batch's outputs."""
    state: dict = {}
    outs = []
    for b in stream():
        for k, v in b:
            state[k] = state.get(k, 0) + v
        outs.append({k: state[k] for k in {k for k, _ in b}})
    return state, outs


def _deliver(sink: Path, name: str, obj: object) -> None:
    tmp = sink / f".{name}.tmp"
    tmp.write_bytes(pickle.dumps(obj))
    os.replace(tmp, sink / name)


def main(ck: str, sink_dir: str, master: str) -> None:
    from pyspark.sql import SparkSession

    from sparkbalance.state.durability.lease import LeaseError
    from sparkbalance.state.operator import KeyedStateOperator

    sink = Path(sink_dir)
    sink.mkdir(parents=True, exist_ok=True)
    builder = (SparkSession.builder.master(master).appName("sparkbalance-driver-kill")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.default.parallelism", "3")
               .config("spark.executor.memory", "512m")
               .config("spark.executorEnv.PYTHONPATH", os.environ.get("PYTHONPATH", "")))
    if BRIDGE_JAR.exists():
        builder = builder.config("spark.jars", str(BRIDGE_JAR))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    sc = spark.sparkContext
    # The killed run's process is gone and this host can tell: its lease is taken over at
    # once (the default 30 s lease_timeout would only pass for a live or remote owner).
    waited = 0.0
    while True:
        t0 = time.monotonic()
        try:
            op = KeyedStateOperator(spark, 3, update=operator.add, initial=0, planner="mixed",
                                    theta=0.05, checkpoint_dir=ck, truncate_every=4)
            break
        except LeaseError as e:
            print(f"waiting: {e}", flush=True)
            time.sleep(1.0)
            waited += time.monotonic() - t0
    print(f"lease handled in {waited + op._lease.acquire_seconds:.3f} s", flush=True)
    print(f"resumed last_batch_id={op.last_batch_id}", flush=True)
    for t, b in enumerate(stream()):
        out = op.process(sc.parallelize(b, 3), batch_id=t)
        if out is None:
            continue                              # applied and delivered before
        _deliver(sink, f"batch-{t:03d}.pkl", dict(out.collect()))
        print(f"delivered {t}", flush=True)
    _deliver(sink, "final.pkl", op.collect_state())
    op.close()
    spark.stop()
    print("done", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
