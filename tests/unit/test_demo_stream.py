"""Spark-free pieces of the stream demo / state benchmark (sparkbalance.demo.stream)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from sparkbalance.demo.stream import (PlainRecord, _span, _union, batch_loads, busy_count,
                                      format_profile, format_table, make_batches,
                                      profile_summary, shifting_batches, summarise)
from sparkbalance.state.shifting import shifting_zipf_counts


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


def _rec(seq, secs, imb=1.5, moved=0.0, rebalanced=False, mig=0.0):
    return PlainRecord(seq, secs, imb, imb, 0, moved, 10.0, 3, 0.001, mig, rebalanced)


def test_summarise_skips_warmup_and_gives_ratios():
    hist = {"none": [_rec(0, 9.0), _rec(1, 1.0), _rec(2, 1.0)],
            "mixed": [_rec(0, 9.0), _rec(1, 0.5, moved=30.0, rebalanced=True, mig=0.2),
                      _rec(2, 0.5)],
            "mintable": [_rec(0, 9.0), _rec(1, 0.5, moved=60.0, rebalanced=True), _rec(2, 1)]}
    rows = {r["planner"]: r for r in summarise(hist)}
    assert rows["none"]["mean_s"] == 1.0 and rows["mixed"]["vs_none"] == 0.5
    assert rows["mixed"]["mig_s_batch"] == pytest.approx(0.1)
    assert rows["mixed"]["mig_s_each"] == pytest.approx(0.2)
    table = format_table(list(rows.values()))
    assert "0.50" in table.splitlines()[3]        # mixed bytes / mintable bytes


def _stage(a, b):
    return SimpleNamespace(submission_time_ms=a, completion_time_ms=b)


def test_union_and_span_of_stage_intervals():
    st = [_stage(0, 1000), _stage(500, 1500), _stage(3000, 3500)]
    assert _union(st, 4000) == pytest.approx(2.0)
    assert _span(st, 4000) == pytest.approx(3.5)
    assert _union([_stage(0, None)], 2000) == pytest.approx(2.0)   # still running


def test_profile_summary_splits_steady_and_migrating_batches():
    hist = {"mixed": [_rec(0, 1.0), _rec(1, 1.0, rebalanced=True), _rec(2, 1.0)]}
    base = dict(wall_s=1.0, jobs=1, stages=2, map_s=0.2, merge_s=0.6, extra_jobs=0,
                extra_s=0.0, outside_s=0.2, critical_s=0.8)
    rows = [dict(base, name="mixed", seq=0), dict(base, name="mixed", seq=1, jobs=2, extra_s=0.4),
            dict(base, name="mixed", seq=2)]
    out = {r["kind"]: r for r in profile_summary(rows, hist, skip=1)}
    assert out["steady"]["batches"] == 1 and out["migrating"]["jobs"] == 2.0
    assert "migrating" in format_profile(list(out.values()))


def test_planner_spec_with_its_own_theta():
    from sparkbalance.demo.stream import parse_spec
    assert parse_spec("mixed@0.2", 0.08) == ("mixed", 0.2)
    assert parse_spec("plain", 0.08) == ("plain", 0.08)
    with pytest.raises(ValueError, match="mixed@x"):
        parse_spec("mixed@x", 0.08)


def test_simulated_io_is_per_record_not_per_call():
    import time
    f = busy_count(work=0, io_us=200.0)
    t0 = time.perf_counter()
    for _ in range(100):          # 100 single-record keys: 20 ms owed, slept in chunks
        f(0, [1])
    took = time.perf_counter() - t0
    assert 0.015 <= took < 0.2
