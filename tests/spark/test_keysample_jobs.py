"""The key sample's jobs and driver round trips: a plan whose last sample went on to the
spread is sampled in one job (the same rows), uniform keys stay a one-task look, and the
partition lists sent to ``runJob`` cost no round trip per element."""
from __future__ import annotations

import threading

import pytest

from sparkbalance.spark.session.jobs import next_job_id
from sparkbalance.spark.sql.keysample import prefixes
from sparkbalance.spark.sql.keysample import forget_kept_samples, sample_keys

N = 4
ROWS = 8_000
PARTS = 8


def _frame(spark, skewed: bool, salt: int):
    key = "IF(id % 2 = 0, 7, id)" if skewed else "id"
    # salt: a plan of its own (its range's end), so other tests' samples do not count here
    return spark.range(0, ROWS + salt, numPartitions=PARTS).selectExpr(f"{key} AS k")


def _sample(df):
    forget_kept_samples()     # these count the sample's jobs, not a kept sample's none
    return sample_keys(df, ["k"], N, rows=2_000, look=200,
                       could_matter=lambda c, rows: c.max() >= 20)


def test_a_skewed_plan_seen_before_is_sampled_in_one_job(spark, sc):
    j0 = next_job_id(sc)
    first = _sample(_frame(spark, True, 101))
    j1 = next_job_id(sc)
    again = _sample(_frame(spark, True, 101))    # a new DataFrame, the same plan
    j2 = next_job_id(sc)
    assert (j1 - j0, j2 - j1) == (2, 1)
    assert first.spread and again.spread
    assert again.rows == first.rows == 2_000
    assert again.keys[0] == first.keys[0] == 7


def test_uniform_keys_stay_a_one_task_look(spark, sc):
    for _ in range(2):
        j0 = next_job_id(sc)
        got = _sample(_frame(spark, False, 202))
        assert next_job_id(sc) - j0 == 1 and not got.spread and got.rows == 2_000 // PARTS
        info = sc.statusTracker().getJobInfo(j0)
        assert sum(sc.statusTracker().getStageInfo(s).numTasks for s in info.stageIds) == 1


def test_a_plan_whose_one_job_sample_shows_no_heavy_key_goes_back_to_the_look(spark, sc):
    def sample(could):
        forget_kept_samples()
        j0 = next_job_id(sc)
        got = sample_keys(_frame(spark, True, 303), ["k"], N, rows=2_000, look=200,
                          could_matter=lambda c, rows: could)
        return next_job_id(sc) - j0, got.rows
    assert sample(True) == (2, 2_000)      # look, then spread
    assert sample(False) == (1, 2_000)     # remembered: one job; it shows no heavy key...
    assert sample(False) == (1, 250)       # ...so the next is the look alone


def test_a_range_sampled_before_is_not_sampled_again_a_cache_is(spark, sc):
    forget_kept_samples()
    first = sample_keys(_frame(spark, True, 404), ["k"], N, rows=2_000, look=200,
                        could_matter=lambda c, rows: c.max() >= 20)
    j0 = next_job_id(sc)
    again = sample_keys(_frame(spark, True, 404), ["k"], N, rows=2_000, look=200,
                        could_matter=lambda c, rows: c.max() >= 20)
    assert next_job_id(sc) == j0 and again.remembered and not first.remembered
    assert (again.keys, again.counts.tolist(), again.rows) == (first.keys,
                                                               first.counts.tolist(), first.rows)
    cached = spark.range(0, 600, numPartitions=2).selectExpr("id % 3 AS k").cache()
    cached.count()
    try:
        for _ in range(2):          # a cache's rows are not its plan's: sampled each time
            j0 = next_job_id(sc)
            got = sample_keys(cached, ["k"], N, rows=300, look=100,
                              could_matter=lambda c, rows: False)
            assert next_job_id(sc) > j0 and not got.remembered and got.rows > 0
    finally:
        cached.unpersist()


@pytest.mark.parametrize("parts", [[0], list(range(1, 8)), list(range(16))])
def test_partition_lists_are_built_once(spark, sc, parts):
    client = sc._gateway._gateway_client
    real, calls, me = client.send_command, [0], threading.get_ident()

    def counting(*a, **k):
        calls[0] += threading.get_ident() == me   # not a listener's callback elsewhere
        return real(*a, **k)
    prefixes._java_ints(sc, parts)
    client.send_command = counting
    try:
        java = prefixes._java_ints(sc, parts)
    finally:
        client.send_command = real
    assert calls[0] == 0
    assert [int(java.get(i)) for i in range(java.size())] == parts
