"""The plain-Spark baseline of keyed state (sparkbalance.bench.plain)."""
from __future__ import annotations

from sparkbalance.bench.plain import PlainStateStream
from sparkbalance.bench.workloads import busy_count, make_batches
from sparkbalance.state.operator import KeyedStateOperator


def test_plain_baseline_keeps_the_operators_state(spark, sc):
    batches = make_batches(60, 2, 4, 300, 1.1, 2.0, seed=4, batches_per_interval=2)
    op = KeyedStateOperator(spark, 2, update_values=busy_count(0), initial=0,
                            planner="mixed", window=2)
    plain = PlainStateStream(spark, 2, busy_count(0), initial=0, window=2)
    try:
        for t, b in enumerate(batches):
            op.process(sc.parallelize(b, 2), batch_id=t)
            out = dict(plain.process(sc.parallelize(b, 2), batch_id=t).collect())
        assert plain.collect_state() == op.collect_state() == out
        assert plain.history[-1].bytes_moved > 0            # the whole state re-shuffled
    finally:
        op.close()
        plain.close()
