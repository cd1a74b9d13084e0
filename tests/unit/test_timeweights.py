"""Time-aware weights from task records: Spark-free specification tests."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkbalance.spark.metrics.records import TaskRecord
from sparkbalance.stats.keystats import KeyStats
from sparkbalance.stats.timeweights import (
    completion_times,
    key_costs,
    measured_stage,
    partition_records,
    partition_seconds,
    seconds_per_record_by_executor,
    seconds_per_record_by_partition,
    successful_attempts,
    time_weighted_stats,
)

_TID = iter(range(10**9))


def task(partition: int, run_ms: int, *, stage: int = 1, attempt: int = 0, ok: bool = True,
         executor: str = "0", finish: int = 1000, shuffle_records: int = 0,
         records: int = 0) -> TaskRecord:
    return TaskRecord(stage_id=stage, stage_attempt=attempt, partition_id=partition,
                      task_id=next(_TID), attempt=0, executor_id=executor, host="h",
                      launch_time_ms=finish - run_ms, finish_time_ms=finish,
                      duration_ms=run_ms + 5, run_time_ms=run_ms, cpu_time_ns=run_ms * 10**6,
                      records_read=records, bytes_read=0, shuffle_records_read=shuffle_records,
                      shuffle_bytes_read=0, shuffle_records_written=0, shuffle_bytes_written=0,
                      successful=ok, speculative=False, job_group=None)


def test_failed_attempts_and_older_stage_attempts_do_not_count():
    ts = [task(0, 5000, ok=False), task(0, 100, attempt=0), task(0, 300, attempt=1),
          task(1, 200)]
    best = successful_attempts(ts)
    assert best[0].run_time_ms == 300  # latest stage attempt wins
    assert best[1].run_time_ms == 200


def test_speculative_duplicate_keeps_the_first_finisher():
    ts = [task(0, 900, finish=2000), task(0, 100, finish=1500)]
    assert successful_attempts(ts)[0].finish_time_ms == 1500


def test_default_stage_is_the_last_one():
    ts = [task(0, 10, stage=0), task(0, 70, stage=4)]
    assert partition_seconds(ts, 1).tolist() == [0.07]
    assert partition_seconds(ts, 1, stage_id=0).tolist() == [0.01]


def test_missing_partitions_are_nan_in_seconds_and_median_in_rates():
    ts = [task(0, 100), task(2, 300)]
    assert np.isnan(partition_seconds(ts, 4)[[1, 3]]).all()
    rate = seconds_per_record_by_partition(ts, 4, records=[100, 0, 100, 100])
    assert rate.tolist() == pytest.approx([0.001, 0.002, 0.003, 0.002])


def test_records_default_to_shuffle_then_input_metrics():
    ts = [task(0, 100, shuffle_records=50), task(1, 100, records=25)]
    assert partition_records(ts).tolist() == [50, 25]
    assert seconds_per_record_by_partition(ts).tolist() == pytest.approx([0.002, 0.004])


def test_zero_time_is_floored_not_zero():
    ts = [task(0, 0), task(1, 100), task(2, 100)]
    rate = seconds_per_record_by_partition(ts, records=[10, 10, 10])
    assert rate.min() > 0


def test_no_evidence_raises_with_a_reason():
    with pytest.raises(ValueError, match="seconds per record"):
        seconds_per_record_by_partition([task(0, 100)], records=[0])
    with pytest.raises(ValueError, match="empty"):
        partition_seconds([], 2)
    with pytest.raises(ValueError, match="time="):
        partition_seconds([task(0, 1)], time="wall")


def test_executor_rate_is_the_median_so_a_straggler_does_not_define_it():
    ts = [task(0, 100, executor="0"), task(1, 100, executor="0"), task(2, 5000, executor="0"),
          task(3, 400, executor="1")]
    rates = seconds_per_record_by_executor(ts, records=[100, 100, 100, 100])
    assert rates == pytest.approx({"0": 0.001, "1": 0.004})


def test_key_costs_validate_partition_range():
    assert key_costs([2, 3], [1, 0], [1.0, 10.0]).tolist() == [20.0, 3.0]
    with pytest.raises(ValueError, match="key_partition"):
        key_costs([1], [2], [1.0, 1.0])
    with pytest.raises(ValueError, match="equal length"):
        key_costs([1, 2], [0], [1.0])


def test_completion_times_normalised_and_equal_for_equal_speed():
    ts = [task(p, 200) for p in range(4)]
    assert completion_times(ts, 4, records=[50] * 4, normalize=True).tolist() == [1.0] * 4
    with pytest.raises(ValueError, match="num_partitions=0"):
        completion_times(ts, 0)


def test_time_weighted_stats_costs_keys_by_where_they_ran():
    stats = KeyStats.from_counts({"a": 60, "b": 40, "c": 100})
    ts = [task(0, 100), task(1, 400)]
    out = time_weighted_stats(stats, ts, [0, 0, 1])
    assert out.cost.tolist() == pytest.approx([0.06, 0.04, 0.4])
    assert out.counts.tolist() == stats.counts.tolist()
    assert list(out.keys) == list(stats.keys)


def test_time_weighted_stats_by_executor():
    stats = KeyStats.from_counts({1: 10, 2: 10, 3: 10})
    ts = [task(0, 10, executor="a"), task(1, 12, executor="a"), task(2, 40, executor="b")]
    out = time_weighted_stats(stats, ts, [0, 1, 2], by="executor")
    assert out.cost.tolist() == pytest.approx([0.011, 0.011, 0.04])


def test_time_weighted_stats_rejects_misaligned_partitions():
    stats = KeyStats.from_counts({"a": 1, "b": 2})
    with pytest.raises(ValueError, match="one partition per key"):
        time_weighted_stats(stats, [task(0, 1)], [0])
    with pytest.raises(ValueError, match="by="):
        time_weighted_stats(stats, [task(0, 1)], [0, 0], by="host")


@given(st.lists(st.tuples(st.integers(1, 2000), st.integers(1, 500)), min_size=1, max_size=12))
def test_cost_sums_to_measured_seconds_when_stats_cover_all_keys(parts):
    # One key per partition: c(k) must equal the partition's measured seconds.
    stats = KeyStats(np.arange(len(parts)), [r for _, r in parts])
    ts = [task(p, ms) for p, (ms, _) in enumerate(parts)]
    out = time_weighted_stats(stats, ts, np.arange(len(parts)))
    secs = np.array([ms for ms, _ in parts]) / 1000.0
    floor = 1e-3 * np.median(secs / [r for _, r in parts]) * np.array([r for _, r in parts])
    assert np.allclose(out.cost, np.maximum(secs, floor))


def test_task_record_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        task(0, 1).run_time_ms = 3  # type: ignore[misc]


def test_measured_stage_prefers_the_keyed_stage_over_a_later_job():
    keyed = [task(p, 100 * (p + 1), stage=3) for p in range(4)]
    later_stats_job = [task(p, 5, stage=7) for p in range(2)]
    ts = keyed + later_stats_job
    assert measured_stage(ts, 4) == 3 and measured_stage(ts) == 7
    stats = KeyStats.from_counts({p: 100 for p in range(4)})
    out = time_weighted_stats(stats, ts, [0, 1, 2, 3], num_partitions=4)
    assert out.cost.tolist() == pytest.approx([0.1, 0.2, 0.3, 0.4])
    assert completion_times(ts, 4, records=[100] * 4).tolist() == pytest.approx(
        [0.001, 0.002, 0.003, 0.004])
