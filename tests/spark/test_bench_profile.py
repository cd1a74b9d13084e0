"""The batch profiler over interleaved stream runs (sparkbalance.bench.profile, .streams)."""
from __future__ import annotations

from sparkbalance.bench.plain import PLAIN
from sparkbalance.bench.profile import BatchProfiler
from sparkbalance.bench.streams import run_streams
from sparkbalance.bench.workloads import make_batches


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
