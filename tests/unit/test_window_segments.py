"""The driver-side cut and placement of hot window keys (no Spark)."""
from __future__ import annotations

import numpy as np
import pytest

from hypothesis import given, settings, strategies as st

from sparkbalance.spark.window.segments import (MIN_SEGMENT_SHARE, HotKey, assign_segments,
                                                 cut_segments, fill_segments)


def test_ties_never_start_two_segments():
    h = HotKey(("a",), 100.0, sample=[(1,)] * 3 + [(2,)] * 5 + [(3,), (4,)])
    cut_segments([h], seg_rows=10.0)           # asks for 10 segments of 10 rows
    assert h.bounds == [(2,), (3,), (4,)]      # only where the value changes
    assert h.cuts == [0, 3, 8, 9]
    assert h.sizes() == pytest.approx([30.0, 50.0, 10.0, 10.0])


def test_nulls_and_nan_are_values_like_any_other():
    nan = float("nan")
    h = HotKey(("a",), 8.0, sample=[(None,), (None,), (1.0,), (nan,), (nan,)])
    cut_segments([h], seg_rows=2.0)
    assert h.cuts == [0, 2, 3]                 # the two NaN are peers, as the nulls are


def test_a_key_without_a_sample_is_one_segment():
    h = HotKey(("a",), 50.0)
    cut_segments([h], seg_rows=10.0)
    assert h.segments == 1 and h.sizes() == [50.0]


def test_segments_go_largest_first_to_the_emptiest_partition():
    a = HotKey(("a",), 9.0, sample=[(i,) for i in range(9)])
    cut_segments([a], seg_rows=3.0)
    assign_segments([a], np.array([4.0, 0.0, 1.0, 2.0]))
    assert a.pids == [1, 2, 3]
    loads = np.array([4.0, 0.0, 1.0, 2.0])
    np.add.at(loads, a.pids, a.sizes())
    assert loads.max() == 5.0


def test_a_hot_key_fills_the_partitions_room_in_one_range_each():
    # 90 % of 600,000 rows over 16 partitions of even cold rows: 16 ranges, one per
    # partition (not the 58 of a quarter of a mean partition each), every partition even
    h = HotKey(("a",), 540_000.0, sample=[(i,) for i in range(11_520)])
    cold = np.full(16, 60_000.0 / 16)
    fill_segments([h], cold)
    assert h.segments == 16 and sorted(h.pids) == list(range(16))
    loads = cold.copy()
    np.add.at(loads, h.pids, h.sizes())
    assert loads.max() / loads.mean() == pytest.approx(1.0, abs=1e-3)


def test_a_partition_fuller_than_the_level_takes_no_hot_rows():
    h = HotKey(("a",), 8.0, sample=[(i,) for i in range(8)])
    fill_segments([h], np.array([0.0, 2.0, 4.0, 6.0]))
    assert 3 not in h.pids and h.cuts == [0, 5, 7]


@settings(max_examples=200, deadline=None)
@given(cold=st.lists(st.floats(0.0, 1e4), min_size=1, max_size=24),
       keys=st.lists(st.tuples(st.floats(1.0, 5e4), st.integers(0, 300), st.integers(1, 40)),
                     min_size=1, max_size=5))
def test_filled_ranges_cover_each_key_in_order_on_valid_partitions(cold, keys):
    hot = [HotKey((j,), c, sample=sorted((v % d,) for v in range(m)))
           for j, (c, m, d) in enumerate(keys)]
    loads = np.array(cold)
    fill_segments(hot, loads)
    total = loads.sum() + sum(h.count for h in hot)
    for h in hot:
        # boundaries strictly increase through the sample, never between two peers
        assert h.cuts[0] == 0 and all(a < b for a, b in zip(h.cuts, h.cuts[1:]))
        assert all(h.sample[i - 1] != h.sample[i] for i in h.cuts[1:])
        assert h.bounds == [h.sample[i] for i in h.cuts[1:]]
        assert len(h.pids) == h.segments and all(0 <= p < len(cold) for p in h.pids)
        assert sum(h.sizes()) == pytest.approx(h.count)
    # without ties or a thin sample, no partition ends far above the even level
    if all(len(set(h.sample)) == len(h.sample) >= 200 for h in hot):
        after = loads.copy()
        for h in hot:
            np.add.at(after, h.pids, h.sizes())
        level = max(loads.max(), total / len(cold))
        step = max(h.count / len(h.sample) for h in hot)
        assert after.max() <= level + (MIN_SEGMENT_SHARE * total / len(cold)
                                       + 2 * step) * len(hot) + 1e-6


def test_rows_halo_zone_holds_the_rows_it_needs_without_a_count():
    from sparkbalance.spark.window.zones import plan_rows_halo
    # 1,000 rows sampled 1 in 10: a lag of 3 needs 3 rows; a zone 3 sampled rows wide
    # holds at least those 3 sampled rows, so no counting job is needed
    h = HotKey(("a",), 1000.0, sample=[(i,) for i in range(0, 1000, 10)])
    cut_segments([h], seg_rows=250.0)
    assert plan_rows_halo([h], before=3, after=0) is False
    for s in range(1, h.segments):
        assert h.cuts[s] - h.sample.index(h.before[s]) >= 3


def test_a_far_reaching_rows_halo_is_counted_instead():
    from sparkbalance.spark.window.zones import plan_rows_halo
    h = HotKey(("a",), 100_000.0, sample=[(i,) for i in range(0, 100_000, 100)])
    cut_segments([h], seg_rows=10_000.0)
    assert plan_rows_halo([h], before=2_000, after=0) is True   # 2,000 steps of 100 rows


def test_payoff_rule_weighs_the_excess_against_the_splits_cost():
    from sparkbalance.spark.window.payoff import FIXED_ROWS, OVERHEAD_PER_ROW, decide, split_cost
    n, rows = 16, 1_000_000.0
    # a core per partition: the hot task's excess over the mean task is what the split saves
    assert decide(np.array([0.3 * rows]), rows, n, "auto", cores=16)[0]
    # ... but a key of 10 % saves less than the split's cost per call (its planning and JIT)
    assert not decide(np.array([0.1 * rows]), rows, n, "auto", cores=16)[0]
    # on 4 cores a CPU-bound window of 10^6 rows takes N / 4 anyway: 90 % pays, 30 % not
    assert decide(np.array([0.9 * rows]), rows, n, "auto", cores=4)[0]
    assert not decide(np.array([0.3 * rows]), rows, n, "auto", cores=4)[0]
    # on 2 cores not even 90 % (its task's 406,250 rows past an even share of 2 cores
    # cost less than the split's own work there)
    no, why = decide(np.array([0.9 * rows]), rows, n, "auto", cores=2)
    assert not no and "406250 more than an even share of 2 cores" in why
    # the first look's bound is named as one
    assert "holds at most" in decide(np.array([0.1 * rows]), rows, n, "auto", cores=2,
                                     bound=True)[1]
    # cores beyond the partitions do not count; the rule at its edge
    assert split_cost(rows, 16) == OVERHEAD_PER_ROW * rows / 16 + FIXED_ROWS
    edge = split_cost(rows, n) / (1 - 1 / n)
    assert decide(np.array([edge]), rows, n, "auto", cores=64)[0]
    assert not decide(np.array([edge * 0.99]), rows, n, "auto", cores=64)[0]
    # a small hot key never pays the fixed cost, whatever its share
    assert not decide(np.array([6_000.0]), 20_000.0, n, "auto")[0]
    assert decide(np.array([6_000.0]), 20_000.0, n, "always")[0]
    assert not decide(np.array([6e5]), 1e6, n, "never")[0]
    assert decide(np.array([]), 1e6, n, "always") == (
        False, "no key holds more than half a partition's mean rows")
    import doctest
    import sparkbalance.spark.window.payoff as mod
    assert doctest.testmod(mod).failed == 0


def test_payoff_cores_from_the_master():
    from sparkbalance.spark.window.payoff import _slots_of
    assert _slots_of("local[16]") == 16 and _slots_of("local[4,2]") == 4
    assert _slots_of("local-cluster[4,2,1024]") == 8
    assert _slots_of("yarn") is None and _slots_of("local[*]") is None


def test_warm_cold_keys_are_listed_and_the_rest_hashed():
    from sparkbalance.spark.window.cold import WARM_SHARE, cold_partition, place_warm
    from pyspark.sql.types import DoubleType, LongType, StringType
    n, total = 4, 1000.0
    keys, counts = ["a", "b", "c"], np.array([100.0, 60.0, 0.5 * WARM_SHARE * total / n])
    loads, warm = place_warm(keys, counts, total, null_rows=40.0, n=n)
    # only keys above WARM_SHARE of the mean partition are listed, heaviest first (LPT);
    # the rest (800 rows) is assumed spread evenly, the null keys on partition 0
    assert warm == [("a", 1), ("b", 2)]
    assert loads.tolist() == pytest.approx([240.0, 300.0, 260.0, 200.0])
    assert sum(loads) == pytest.approx(total)
    sql = cold_partition(["k"], [StringType()], warm, n)
    assert sql.startswith("CASE WHEN `k` IS NULL THEN 0 WHEN `k` IN (")
    assert sql.endswith("ELSE pmod(hash(`k`), 4) END")
    # a float key is hashed as key + 0.0: -0.0 and 0.0 are one window partition
    sql = cold_partition(["k", "j"], [DoubleType(), LongType()], [], n)
    assert "hash((CAST(`k` AS DOUBLE) + CAST(0 AS DOUBLE)), `j`)" in sql


def test_first_look_bounds_the_hottest_key_from_above():
    from sparkbalance.spark.window.sample import KeySample, top_bound
    m, total = 2048, 1e6
    ks = KeySample(["a"], np.array([0.1 * total]), {"a": [()] * 205}, total, 0.0, False, m)
    b = top_bound(ks)
    assert 0.1 * total < b < 0.13 * total     # three standard errors above, not far above
    exact = KeySample(["a"], np.array([7.0]), {"a": [()] * 7}, 10.0, 0.0, True, 10)
    assert top_bound(exact) == 7.0
    empty = KeySample([], np.zeros(0), {}, 0.0, 0.0, True, 0)
    assert top_bound(empty) == 0.0
