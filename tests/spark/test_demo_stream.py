"""The stream benchmark's plain-Spark baseline and profiler (sparkbalance.demo.stream)."""
from __future__ import annotations

from sparkbalance.demo.stream import (PLAIN, BatchProfiler, busy_count, make_batches,
                                      run_streams)
from sparkbalance.state.operator import KeyedStateOperator


def test_plain_baseline_keeps_the_operators_state(spark, sc):
    batches = make_batches(60, 2, 4, 300, 1.1, 2.0, seed=4, batches_per_interval=2)
    op = KeyedStateOperator(spark, 2, update_values=busy_count(0), initial=0,
                            planner="mixed", window=2)
    from sparkbalance.demo.stream import PlainStateStream
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


def test_profiler_counts_one_job_per_plain_batch(spark):
    batches = make_batches(40, 2, 3, 200, 1.0, 1.0, seed=2)
    prof = BatchProfiler(spark)
    try:
        hist = run_streams(spark, ["none", PLAIN], batches, num_partitions=2, work=0,
                           progress=False, profiler=prof)
        rows = prof.rows()
    finally:
        prof.close()
    assert len(rows) == 6 and {r["name"] for r in rows} == {"none", PLAIN}
    for r in rows:
        assert r["jobs"] == 1 and r["stages"] == 2, r
        assert 0 <= r["in_stages_s"] <= r["wall_s"] + 0.05
    assert [h.seq for h in hist[PLAIN]] == [0, 1, 2]
