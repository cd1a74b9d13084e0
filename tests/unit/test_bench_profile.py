"""Spark-free helpers of the batch profiler (sparkbalance.bench.profile)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from sparkbalance.bench.plain import PlainRecord
from sparkbalance.bench.profile import (format_profile, merge_after_migration, profile_means,
                                        profile_summary, stage_span, stage_union)


def _rec(seq, rebalanced=False):
    return PlainRecord(seq, 1.0, 1.5, 1.5, 0, 0.0, 10.0, 3, 0.001, 0.0, rebalanced)


def _stage(a, b):
    return SimpleNamespace(submission_time_ms=a, completion_time_ms=b)


def test_union_and_span_of_stage_intervals():
    st = [_stage(0, 1000), _stage(500, 1500), _stage(3000, 3500)]
    assert stage_union(st, 4000) == pytest.approx(2.0)
    assert stage_span(st, 4000) == pytest.approx(3.5)
    assert stage_union([_stage(0, None)], 2000) == pytest.approx(2.0)   # still running
    assert stage_span([], 2000) == 0.0 and stage_union([], 2000) == 0.0


def _rows():
    base = dict(wall_s=1.0, jobs=1, stages=2, map_s=0.2, merge_s=0.6, extra_jobs=0,
                extra_s=0.0, outside_s=0.2, critical_s=0.8)
    return [dict(base, name="mixed", seq=0), dict(base, name="mixed", seq=1, jobs=2, extra_s=0.4),
            dict(base, name="mixed", seq=2, merge_s=0.9, critical_s=1.0)]


def test_profile_summary_splits_steady_and_migrating_batches():
    """The migration batch 0 decided rides in batch 1: batch 1 is the migrating one."""
    hist = {"mixed": [_rec(0, rebalanced=True), _rec(1), _rec(2)]}
    out = {r["kind"]: r for r in profile_summary(_rows(), hist, skip=1)}
    assert out["steady"]["batches"] == 1 and out["migrating"]["jobs"] == 2.0
    assert "migrating" in format_profile(list(out.values()))


def test_merge_after_migration_and_means():
    hist = {"mixed": [_rec(0), _rec(1, rebalanced=True), _rec(2)]}
    after, other, count = merge_after_migration(_rows(), hist, skip=1)["mixed"]
    assert (after, other, count) == (pytest.approx(0.9), pytest.approx(0.6), 1)
    assert profile_means(_rows(), skip=1) == {"mixed": pytest.approx(0.9)}
    assert profile_means(_rows(), skip=0, field="merge_s") == {"mixed": pytest.approx(0.7)}
