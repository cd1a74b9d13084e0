"""The driver-side cut and placement of hot window keys (no Spark)."""
from __future__ import annotations

import numpy as np
import pytest

from sparkbalance.spark.window.segments import HotKey, assign_segments, cut_segments


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
