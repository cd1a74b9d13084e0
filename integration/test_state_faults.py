"""Keyed state on two executor JVMs losing one mid-stream: the state stays exact and the
recomputation stays a chain (bounded Python workers), with migrations in most batches.

Runs last in its session on purpose: it kills an executor (local-cluster starts no
replacement, so a second case runs on a new session).
"""
from __future__ import annotations

import operator
import threading
import time

import pytest

from conftest import build_cluster_session, executor_ids
from sparkbalance.bench.cpu import count_and_rss, is_pyspark, tree_usage
from sparkbalance.state.operator import KeyedStateOperator
from sparkbalance.bench.shifting import batch_records, shifting_zipf_counts


def _python_workers(root: int) -> int:
    """Python processes (daemons and workers) below the process ``root`` (the driver JVM:
    local-cluster executors are its children; the executor JVMs are not counted)."""
    return count_and_rss(tree_usage(root), is_pyspark)[0]


class _Peak:
    """The most Python workers seen while a block runs (sampled every 0.25 s)."""

    def __init__(self, root: int) -> None:
        self.root, self.peak, self._stop = root, 0, threading.Event()

    def __enter__(self) -> "_Peak":
        def run() -> None:
            while not self._stop.is_set():
                self.peak = max(self.peak, _python_workers(self.root))
                time.sleep(0.25)
        self._t = threading.Thread(target=run, daemon=True)
        self._t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._t.join()



def _holders_once_gone(sc, rdd, executor: str) -> list[list[str]]:
    """Per partition of the cached ``rdd``, the executors holding its block, once the
    block manager has dropped ``executor``'s blocks (at most 30 s)."""
    deadline = time.monotonic() + 30.0
    while True:
        where = sc._jvm.io.sparkbalance.bridge.StateFiles.blockLocations(
            rdd._jrdd.rdd().id(), rdd.getNumPartitions())
        holders = [list(where[i]) for i in range(rdd.getNumPartitions())]
        if not any(h.endswith(f"_{executor}") for hs in holders for h in hs) \
                or time.monotonic() > deadline:
            return holders
        time.sleep(0.5)


@pytest.fixture
def two_executors(cluster_spark):
    """A local-cluster session with both executors: the shared one, or (after a test here
    killed one: local-cluster does not start a replacement) a new one, stopped after."""
    live = cluster_spark.sparkContext._jsc is not None   # an earlier case stopped it
    if live and len(executor_ids(cluster_spark.sparkContext)) >= 2:
        yield cluster_spark
        return
    if live:
        cluster_spark.stop()
    session = build_cluster_session()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.mark.timeout(1800)   # two executors on a shared 2-core machine: minutes
@pytest.mark.parametrize("mode", ["truncated", "rebased", "replicated"])
def test_executor_lost_mid_stream_keeps_the_state_exact(two_executors, tmp_path, mode):
    """Without a checkpoint_dir the lineage is cut every truncate_every batches (reliably:
    the context has a checkpoint directory); with one, every commit rebases the state on
    its files, so the lost blocks are read back from the last commit; cached at a
    replicated storage level, no state block is lost at all (no truncation either:
    truncate_every=100)."""
    from pyspark import StorageLevel
    cluster_spark = two_executors
    sc = cluster_spark.sparkContext
    sc.setCheckpointDir(str(tmp_path / "spark-ck"))   # reliable truncation survives the loss
    driver = int(sc._jvm.ProcessHandle.current().pid())
    batches = [batch_records(k, c, seed=t) for t, (k, c) in enumerate(
        shifting_zipf_counts(120, 4, 10, z=1.1, records_per_batch=480, f=2.0, seed=9))]
    extra = {"truncated": {}, "rebased": {"checkpoint_dir": tmp_path / "ck"},
             "replicated": {"storage_level": StorageLevel.MEMORY_AND_DISK_2,
                            "truncate_every": 100}}[mode]
    op = KeyedStateOperator(cluster_spark, 4, update=operator.add, initial=0,
                            planner="mixed", theta=0.02, trigger="paper", **extra)
    ref: dict = {}
    killed, peak_after, peak_before = None, 0, 0
    try:
        for t, b in enumerate(batches):
            for k, v in b:
                ref[k] = ref.get(k, 0) + v
            want = {k: ref[k] for k, _ in b}
            if killed is None and t >= 4 and op.pending_migration:
                execs = executor_ids(sc)
                assert len(execs) == 2, execs
                killed = (t, execs[0])
                sc._jsc.sc().killExecutor(execs[0])   # its cached state and shuffle files go
                time.sleep(2.0)
                if mode == "replicated":   # every block of the state still has a holder
                    holders = _holders_once_gone(sc, op._state.anchor, execs[0])
                    assert all(holders), holders
            with _Peak(driver) as peak:
                out = dict(op.process(sc.parallelize(b, 4), batch_id=t).collect())
            if killed is not None and t == killed[0]:
                peak_after = peak.peak
            elif killed is None:
                peak_before = max(peak_before, peak.peak)
            assert out == want, t
        assert killed is not None, "no pending migration to kill an executor under"
        assert sum(h.rebalanced for h in op.history) >= len(batches) // 2
        assert op.collect_state() == ref
        print(f"\nexecutor {killed[1]} killed before batch {killed[0]}: Python processes "
              f"peak {peak_after} in that batch, {peak_before} before")
        # recomputation is a chain since the last truncation, not a fan-out per migration
        assert peak_after <= 24, (peak_after, peak_before)
    finally:
        op.close()
        if killed is not None:
            sc._jsc.sc().requestExecutors(1)
