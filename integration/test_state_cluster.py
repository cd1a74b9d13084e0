"""Keyed state on two executor JVMs: migrations across executors keep the state exact."""
from __future__ import annotations

import operator

from sparkbalance.state.operator import KeyedStateOperator
from sparkbalance.state.shifting import batch_records, shifting_zipf_counts


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
