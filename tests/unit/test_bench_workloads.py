"""The benchmarks' workloads: shifting Zipf streams and costly per-record work
(sparkbalance.bench.workloads)."""
from __future__ import annotations

import time

import numpy as np
import pytest

from sparkbalance.bench.workloads import (RunResult, batch_loads, busy_count, busy_work,
                                          make_batches, shifting_batches, zipf_records)
from sparkbalance.bench.shifting import shifting_zipf_counts


def test_one_batch_per_interval_is_the_state_modules_stream():
    a = list(shifting_batches(300, 4, 5, 2000, z=1.0, f=1.0, seed=3))
    b = list(shifting_zipf_counts(300, 4, 5, z=1.0, records_per_batch=2000, f=1.0, seed=3))
    for (ka, ca), (kb, cb) in zip(a, b):
        assert ka.tolist() == kb.tolist() and ca.tolist() == cb.tolist()


def test_hot_keys_stay_within_an_interval_and_move_between_intervals():
    def top(k, c):
        return set(k[np.argsort(-c)[:3]].tolist())
    batches = list(shifting_batches(200, 4, 6, 20000, z=1.2, f=4.0, seed=1,
                                    batches_per_interval=3))
    tops = [top(k, c) for k, c in batches]
    assert tops[0] == tops[1] == tops[2]          # same frequencies, fresh samples
    assert tops[3] == tops[4] == tops[5]
    assert tops[2] != tops[3]                     # the interval boundary moved hot keys


def test_bad_interval_names_the_value():
    with pytest.raises(ValueError, match="batches_per_interval=0"):
        list(shifting_batches(10, 2, 2, 10, batches_per_interval=0))


def test_make_batches_has_the_records():
    bs = make_batches(50, 2, 3, 100, 1.0, 1.0, seed=0, batches_per_interval=2)
    assert [len(b) for b in bs] == [100, 100, 100]
    assert batch_loads(bs[0], 2).sum() == 100


def test_busy_count_counts():
    assert busy_count(work=2, io_us=1.0)(1, [1, 1, 1]) == (4, [4])


def test_simulated_io_is_per_record_not_per_call():
    f = busy_count(work=0, io_us=200.0)
    t0 = time.perf_counter()
    for _ in range(100):          # 100 single-record keys: 20 ms owed, slept in chunks
        f(0, [1])
    took = time.perf_counter() - t0
    assert 0.015 <= took < 0.2


def test_zipf_records_rank_zero_is_hottest():
    keys = zipf_records(50, 1.5, 5000, seed=2)
    counts = np.bincount(keys, minlength=50)
    assert keys.min() >= 0 and keys.max() < 50 and counts.argmax() == 0
    assert counts[0] > counts[10] > 0


def test_busy_work_value_and_reduce_imbalances():
    assert busy_work(5, 100) == 11
    r = RunResult("hash", [30, 10], [3.0, 1.0], [3.0, 1.0], 1.0, 0.0, {})
    assert r.imbalance == 1.5 and r.time_imbalance == 1.5
    assert RunResult("hash", [0, 0], [0.0, 0.0], [0.0, 0.0], 0.0, 0.0, {}).imbalance == 1.0
