"""Recovery cost of the keyed state after many migrations, on ``local-cluster[2,1,1024]``.

One :class:`~sparkbalance.state.operator.KeyedStateOperator` (planner ``mixed``, θ = 0.02,
``trigger="paper"``, 4 partitions) runs ``--batches`` batches whose hot keys shift every
batch, so most batches migrate. The outputs RDD of batch 2 is kept (consumed once). Then:

1. *late read*: count batch 2's outputs again (its cache was released after batch 3);
2. *lost executor*: kill one executor JVM, ask for a new one, and collect the whole state
   (``collect_state``), checked against a plain-Python reference.

For each: wall seconds, CPU seconds of the driver JVM and everything below it (executor
JVMs, Python daemons and workers; exited children included), the peak count of Python
processes below the driver JVM and the peak RSS (MB) of the executor JVMs and of those
Python processes, sampled every 0.2 s. ``--truncate-every`` sets the operator's lineage
truncation period (default: the operator's default); ``--durable`` gives the operator a
``checkpoint_dir`` (each batch commits, and the state is based on the committed files);
``--replicate`` caches the state at ``MEMORY_AND_DISK_2`` (a replica of each block on the
other executor, so the lost executor's blocks are still cached).

``python integration/benchmarks/bench_recovery.py [--batches 30] [--truncate-every 100]
[--durable | --replicate]``
(minutes on a shared 2-core machine; run it niced).
"""
from __future__ import annotations

import argparse
import operator
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "integration"))

from conftest import build_cluster_session, executor_ids  # noqa: E402

from sparkbalance.bench.cpu import (ProcessTreeCPU, count_and_rss, is_jvm,  # noqa: E402
                                    is_pyspark, tree_usage)
from sparkbalance.state.operator import KeyedStateOperator  # noqa: E402
from sparkbalance.bench.shifting import batch_records, shifting_zipf_counts  # noqa: E402

def tree_cpu(root: int) -> float:
    """CPU seconds of ``root`` and every process below it, exited children included."""
    return ProcessTreeCPU(root).seconds()


class Peak:
    """Peak Python processes and RSS below the driver JVM while a block runs."""

    def __init__(self, root: int) -> None:
        self.root, self._stop = root, threading.Event()
        self.workers = 0
        self.py_mb = self.exec_mb = 0.0

    def sample(self) -> None:
        procs = tree_usage(self.root)
        workers, py_mb = count_and_rss(procs, is_pyspark)
        self.workers = max(self.workers, workers)
        self.py_mb = max(self.py_mb, py_mb)
        self.exec_mb = max(self.exec_mb, count_and_rss(procs, is_jvm)[1])

    def __enter__(self) -> "Peak":
        def run() -> None:
            while not self._stop.is_set():
                self.sample()
                time.sleep(0.2)
        self._t = threading.Thread(target=run, daemon=True)
        self.wall, self.cpu = time.perf_counter(), tree_cpu(self.root)
        self._t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._t.join()
        self.wall = time.perf_counter() - self.wall
        self.cpu = tree_cpu(self.root) - self.cpu

    def row(self, label: str) -> str:
        return (f"{label:>24} {self.wall:7.1f} {self.cpu:7.1f} {self.workers:4d} "
                f"{self.py_mb:8.0f} {self.exec_mb:8.0f}")



def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=30)
    ap.add_argument("--truncate-every", type=int, default=None)
    ap.add_argument("--replicate", action="store_true",
                    help="cache the state at StorageLevel.MEMORY_AND_DISK_2 (a replica of "
                         "every state block on the other executor)")
    ap.add_argument("--durable", action="store_true",
                    help="give the operator a checkpoint_dir: every batch commits and the "
                         "state is rebased on the committed files")
    args = ap.parse_args(argv)
    spark = build_cluster_session()
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    import tempfile
    tmp = tempfile.mkdtemp(prefix="sb-recovery-")
    sc.setCheckpointDir(os.path.join(tmp, "spark-ck"))
    driver = int(sc._jvm.ProcessHandle.current().pid())
    extra = {} if args.truncate_every is None else {"truncate_every": args.truncate_every}
    if args.durable:
        extra["checkpoint_dir"] = os.path.join(tmp, "state-ck")
    if args.replicate:
        from pyspark import StorageLevel
        extra["storage_level"] = StorageLevel.MEMORY_AND_DISK_2
    op = KeyedStateOperator(spark, 4, update=operator.add, initial=0, planner="mixed",
                            theta=0.02, trigger="paper", **extra)
    batches = [batch_records(k, c, seed=t) for t, (k, c) in enumerate(
        shifting_zipf_counts(120, 4, args.batches, z=1.1, records_per_batch=480, f=2.0,
                             seed=9))]
    ref: dict = {}
    early, early_want = None, None
    per_batch = []
    for t, b in enumerate(batches):
        for k, v in b:
            ref[k] = ref.get(k, 0) + v
        with Peak(driver) as pk:
            out = op.process(sc.parallelize(b, 4), batch_id=t)
            n = out.count()
        per_batch.append(pk)
        if t == 2:
            early, early_want = out, n
    print(f"{args.batches} batches, {sum(h.rebalanced for h in op.history)} migrated, "
          f"truncate_every={op.truncate_every}, checkpoint_dir={op.checkpoint_dir}, "
          f"storage level {op._level}")
    print(f"{'':>24} {'wall s':>7} {'cpu s':>7} {'#py':>4} {'py MB':>8} {'exec MB':>8}")
    last = per_batch[-5:]
    print(f"{'batch (median, last 5)':>24} "
          f"{sorted(p.wall for p in last)[2]:7.1f} {sorted(p.cpu for p in last)[2]:7.1f} "
          f"{max(p.workers for p in last):4d} {max(p.py_mb for p in last):8.0f} "
          f"{max(p.exec_mb for p in last):8.0f}")
    with Peak(driver) as pk:
        got = early.count()
    assert got == early_want, (got, early_want)
    print(pk.row("late read of batch 2"))
    execs = executor_ids(sc)
    sc._jsc.sc().killExecutor(execs[0])
    time.sleep(2.0)
    with Peak(driver) as pk:
        state = op.collect_state()
    print(pk.row("state after a lost exec"))
    assert state == ref, "state differs from the reference after the executor loss"
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    op.close()
    sc._jsc.sc().requestExecutors(1)
    spark.stop()


if __name__ == "__main__":
    main()
