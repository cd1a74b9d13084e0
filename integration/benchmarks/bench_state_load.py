"""Load of the keyed state at 10^6 keys, n = 8 partitions, on ``local[2]``.

One :class:`~sparkbalance.state.operator.KeyedStateOperator` (planner ``mixed``) first takes
a batch holding every one of ``--keys`` keys (the state then has 10^6 keys), then
``--batches`` batches of ``--records`` Zipf-skewed records whose hot keys move every batch,
so most batches migrate. Per batch: wall seconds, whether the state moved and how many keys,
RSS (from ``/proc``) of the Python driver, the driver JVM and the Python workers (summed),
and what reached the Python driver: the items every ``collect``-like call loaded from the
JVM (PySpark's ``_load_from_socket``, counted by wrapping it). "Nothing collects all keys"
means that count stays far below the state's key count in every batch.

``python integration/benchmarks/bench_state_load.py [--keys 1000000] [--batches 10]``
(run it niced on a shared machine; it prints ``uptime`` with the table).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sparkbalance.bench.cpu import (ProcessTreeCPU, count_and_rss, is_jvm,  # noqa: E402
                                    is_pyspark, tree_usage)
from sparkbalance.bench.session import local_session  # noqa: E402
from sparkbalance.state.operator import KeyedStateOperator  # noqa: E402

def memory() -> dict[str, float]:
    """RSS in MB of this Python driver, its JVM and the JVM's Python workers (summed), and
    the CPU seconds of all of them (exited workers included)."""
    me = os.getpid()
    procs = tree_usage(me, include_root=True)       # this driver first
    # the Python workers are below the JVM, the only JVM below this driver in local mode
    num_workers, workers_mb = count_and_rss(procs[1:], is_pyspark)
    return {"py_driver": procs[0].rss_mb, "jvm": count_and_rss(procs[1:], is_jvm)[1],
            "py_workers": workers_mb, "num_workers": num_workers,
            "cpu": ProcessTreeCPU(me).seconds()}


class Collected:
    """Counts the items every collect-like call loads into the Python driver.

    Wraps ``_load_from_socket`` in every loaded PySpark module that imported it (RDD and
    DataFrame ``collect``, ``take``, ``first`` read their results through it).
    """

    def __init__(self) -> None:
        import pyspark.util
        self.items = 0
        self.calls = 0
        real = pyspark.util._load_from_socket
        counter = self

        @contextlib.contextmanager
        def counting(*args, **kwargs):
            with real(*args, **kwargs) as stream:
                counter.calls += 1

                def counted():
                    for x in stream:
                        counter.items += 1
                        yield x
                yield counted()
        for name, mod in list(sys.modules.items()):
            if name.startswith("pyspark") and getattr(mod, "_load_from_socket", None) is real:
                mod._load_from_socket = counting

    def take(self) -> tuple[int, int]:
        out = (self.items, self.calls)
        self.items = self.calls = 0
        return out


def zipf_batch(rng: np.random.Generator, num_keys: int, records: int, shift: int) -> list:
    """``records`` (key, 1) pairs, Zipf(1.1) ranks mapped to keys rotated by ``shift``."""
    ranks = np.minimum(rng.zipf(1.1, records) - 1, num_keys - 1)
    keys = (ranks * 7919 + shift) % num_keys
    return [(int(k), 1) for k in keys]


def _add(state: int, value: int) -> int:
    return state + value


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--batches", type=int, default=10)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--partitions", type=int, default=8)
    args = ap.parse_args(argv)
    spark = local_session(2, "sparkbalance-bench-state-load",
                          conf={"spark.driver.memory": "2g"})
    sc = spark.sparkContext
    collected = Collected()
    # A running count per key (the operator needs an update function).
    op = KeyedStateOperator(spark, args.partitions, update=_add, initial=0, planner="mixed",
                            theta=0.05)
    rng = np.random.default_rng(7)
    rows = []
    cpu_start = memory()["cpu"]
    t0 = time.perf_counter()
    first = sc.range(0, args.keys, numSlices=8).map(lambda k: (k, 1))
    op.process(first).count()
    items, calls = collected.take()
    rows.append(("fill", time.perf_counter() - t0, False, 0, items, calls, memory()))
    for b in range(args.batches):
        batch = sc.parallelize(zipf_batch(rng, args.keys, args.records, 104_729 * (b + 1)), 8)
        t0 = time.perf_counter()
        op.process(batch).count()
        dt = time.perf_counter() - t0
        rec = op.history[-1]
        items, calls = collected.take()
        rows.append((b, dt, rec.rebalanced, rec.keys_moved, items, calls, memory()))
    print(f"state keys: {op.history[-1].num_keys}, n = {args.partitions}, local[2], "
          f"{args.records} records/batch")
    print("cpu s: CPU seconds of the batch, Python driver + driver JVM (executors, local "
          "mode) + Python workers (live ones and those that ended)")
    print(f"{'batch':>5} {'s':>7} {'cpu s':>6} {'moved':>5} {'keys moved':>10} "
          f"{'items->py':>9} {'calls':>5} {'py drv MB':>9} {'JVM MB':>7} {'workers MB':>10} "
          f"{'#w':>3}")
    cpu0 = cpu_start
    for name, secs, moved, keys, items, calls, mem in rows:
        print(f"{name!s:>5} {secs:7.2f} {mem['cpu'] - cpu0:6.1f} {str(bool(moved)):>5} "
              f"{keys:10d} {items:9d} {calls:5d} {mem['py_driver']:9.0f} {mem['jvm']:7.0f} "
              f"{mem['py_workers']:10.0f} {mem['num_workers']:3d}")
        cpu0 = mem["cpu"]
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    op.close()
    spark.stop()


if __name__ == "__main__":
    main()
