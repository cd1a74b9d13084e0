"""Bounded key statistics, Spark-free: KeyStats' tail and distinct count, TopCounts merges."""
from __future__ import annotations

import random

import numpy as np
import pytest

from sparkbalance.spark.rdd.keystats import TopCounts
from sparkbalance.stats.keystats import KeyStats


def test_tail_and_distinct_are_carried_and_checked():
    s = KeyStats.from_counts({"a": 5, "b": 1, "c": 2})
    assert s.tail_count == 0 and s.distinct == 3 and s.data_count == 8
    t = s.top(2)
    assert t.keys.tolist() == ["a", "c"] and t.tail_count == 1 and t.distinct == 3
    assert t.data_count == s.data_count
    w = t.with_cost(t.cost * 2)
    assert w.tail_count == 1 and w.num_distinct == 3
    with pytest.raises(ValueError, match="tail_count"):
        KeyStats(np.array([1]), [1.0], tail_count=-1)
    with pytest.raises(ValueError, match="num_distinct"):
        KeyStats(np.array([1, 2]), [1.0, 1.0], num_distinct=1)


def test_top_counts_merged_in_any_tree_equal_the_exact_top():
    rng = random.Random(4)
    counts = {k: rng.randrange(1, 1000) for k in range(500)}
    rows = list(counts.items())
    parts = [rows[i::7] for i in range(7)]
    k = 12
    summaries = [TopCounts.of(p, k) for p in parts]
    assert all(len(s) <= k for s in summaries)
    rng.shuffle(summaries)
    out = summaries[0]
    for s in summaries[1:]:
        out = out.merge(s) if rng.random() < 0.5 else s.merge(out)
    want = sorted(counts.values(), reverse=True)[:k]
    assert [c for _, c in out.rows()] == want
    assert all(counts[key] == c for key, c in out.rows())
    assert out.tail == sum(counts.values()) - sum(want)
    assert out.distinct == 500


def test_time_weights_count_the_tail_records():
    """Partition 0 ran 100 listed + 100 tail records in 0.2 s: 1 ms per record, not 2."""
    from types import SimpleNamespace as T

    from sparkbalance.stats.timeweights import time_weighted_stats
    ts = [T(stage_id=3, stage_attempt=0, partition_id=p, successful=True, finish_time_ms=1,
            run_time_ms=ms, executor_id="0") for p, ms in [(0, 200), (1, 200)]]
    s = KeyStats(np.array(["a", "b"]), [100.0, 100.0], tail_count=200.0)
    assert time_weighted_stats(s, ts, [0, 1]).cost.tolist() == pytest.approx([0.1, 0.1])


def test_first_look_is_the_fewest_rows_that_show_a_floor_key_min_listed_times():
    from sparkbalance.spark.rdd.bounded import MIN_LISTED, significant
    from sparkbalance.spark.sql.keystats import FIRST_LOOK_MIN, first_look_records

    for n in (2, 4, 16, 64):
        look = first_look_records(n, 0.08)
        assert look >= FIRST_LOOK_MIN
        # in the look a key at the listing floor's share shows MIN_LISTED times on average
        assert look * 0.08 / (2 * n) >= MIN_LISTED
        if look > FIRST_LOOK_MIN:   # no more rows than that: the floor is MIN_LISTED there
            assert significant(look, n, 0.08) == MIN_LISTED
    assert first_look_records(16, 0.08) == 2_000
    assert first_look_records(64) > first_look_records(16)   # more partitions, rarer floor
    with pytest.raises(ValueError, match="theta=0"):
        first_look_records(16, 0.0)
