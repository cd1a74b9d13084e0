"""Keyed state on two executor JVMs: migrations across executors keep the state exact."""
from __future__ import annotations

import operator

from sparkbalance.state.operator import KeyedStateOperator
from sparkbalance.bench.shifting import batch_records, shifting_zipf_counts


def test_state_exact_across_executors_with_migrations_and_restart(cluster_spark, tmp_path):
    sc = cluster_spark.sparkContext
    batches = [batch_records(k, c, seed=t) for t, (k, c) in enumerate(
        shifting_zipf_counts(80, 4, 8, z=1.1, records_per_batch=400, f=2.0, seed=4))]
    ref: dict = {}
    for b in batches:
        for k, v in b:
            ref[k] = ref.get(k, 0) + v
    op = KeyedStateOperator(cluster_spark, 4, update=operator.add, initial=0, planner="mixed",
                            theta=0.05, checkpoint_dir=tmp_path / "ck", truncate_every=3,
                            trigger="paper")
    for t, b in enumerate(batches[:5]):
        op.process(sc.parallelize(b, 4), batch_id=t)
    assert sum(h.rebalanced for h in op.history) >= 1
    op.close()
    op2 = KeyedStateOperator(cluster_spark, 4, update=operator.add, initial=0, planner="mixed",
                             theta=0.05, checkpoint_dir=tmp_path / "ck", truncate_every=3,
                            trigger="paper")
    for t, b in enumerate(batches[5:], start=5):
        op2.process(sc.parallelize(b, 4), batch_id=t)
    assert op2.collect_state() == ref
    op2.scale(3)
    assert op2.collect_state() == ref
    op2.close()


def test_random_key_delta_with_a_task_retried_once_is_exact(cluster_spark, tmp_path):
    """A table delta of more keys than frames whose map task of partition 1 fails once
    (Spark retries it: task.maxFailures is 4 on a cluster):
    after the retry, every key is on its new partition exactly once with its entry, and
    the keys-out = keys-in check holds (one job: the retried task's first attempt added
    nothing to the counts)."""
    import random

    from pyspark import StorageLevel

    from sparkbalance.routing.table import RoutingTable
    from sparkbalance.state.frames import format as fr
    from sparkbalance.state.frames.rdds import as_frames, frame_ops
    from sparkbalance.state.control.layout import TableLayout
    from sparkbalance.state.frames.migration import migrate

    failed = tmp_path / "failed"

    def fail_first_attempt(pid, frames):
        # partition 1's frames; the first attempt of each task reading them fails after
        # half of them (a local function: the executors cannot import this module)
        from pyspark import TaskContext

        frames = list(frames)
        if pid == 1 and TaskContext.get().attemptNumber() == 0:
            yield from frames[:len(frames) // 2]
            with open(failed, "a") as out:
                out.write("attempt 0\n")
            raise RuntimeError("injected failure of attempt 0")
        yield from frames

    sc = cluster_spark.sparkContext
    n, keys, G = 4, 2000, 16
    old = TableLayout(n, n)
    rng = random.Random(5)
    routes = {k: rng.randrange(n) for k in rng.sample(range(keys), 400)}
    new = TableLayout(n, n, RoutingTable(routes, 1))
    ops = frame_ops(sc)
    base = as_frames(sc.parallelize(range(keys), 4).map(lambda k: (k, [k * 3, 1.0, None]))
                     .partitionBy(n, old.fn).mapPartitions(lambda it: fr.frames_of_entries(it, G)))
    state = ops.map_frames(base, fail_first_attempt)
    res = migrate(ops, state, old, new, G, StorageLevel.MEMORY_AND_DISK,
                  candidates=frozenset(routes))
    assert failed.read_text().count("attempt 0") >= 1     # the failure was injected
    moved = sum(1 for k in range(keys) if new.fn(k) != old.fn(k))
    assert res.keys_moved == moved and res.bytes_moved == float(moved)
    got = res.rdd.mapPartitionsWithIndex(
        lambda pid, it: [(pid, fr.frames_to_block(it))]).collect()
    for pid, block in got:
        assert block == {k: [k * 3, 1.0, None] for k in range(keys) if new.fn(k) == pid}
    for c in res.cached:
        c.unpersist()
