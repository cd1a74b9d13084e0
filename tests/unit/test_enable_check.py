"""The skew check's prediction (pure: numpy only, no Spark)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from sparkbalance.spark.enable.check import (MIN_HOT_SAMPLES, listed_gain, predicted_gain)
from sparkbalance.spark.rdd.bounded import listed_stats


@pytest.mark.parametrize("keys, n", [(10_000, 8), (400, 4), (5_000, 200)])
def test_uniform_keys_predict_no_gain_whatever_the_noise(keys, n):
    rng = np.random.default_rng(1)
    tokens = rng.integers(0, keys, 2048)
    assert predicted_gain(tokens, tokens % n, n) == 1.0


def test_colliding_hot_keys_predict_the_cut():
    # three keys of 25 % each on one partition, the rest spread: plain 75 % + 25 %/4,
    # balanced 25 % (the heaviest key) -> 3.25x
    tokens = np.array([1] * 250 + [2] * 250 + [3] * 250 + list(range(100, 350)))
    homes = np.where(tokens < 100, 0, tokens % 4)
    assert predicted_gain(tokens, homes, 4) == pytest.approx((750 + 250 / 4) / 250)


def test_one_dominant_key_cannot_be_fixed_by_placement():
    tokens = np.array([0] * 900 + list(range(1, 101)))
    assert predicted_gain(tokens, tokens % 8, 8) == pytest.approx((900 + 100 / 8) / 900)


def test_arbitrary_hashable_keys_are_counted_as_keys():
    tokens = [("a", 1)] * 40 + [("b", 2)] * 40 + [f"k{i}" for i in range(20)]
    assert predicted_gain(tokens, [0] * 80 + [i % 2 for i in range(20)], 2) > 1.5


def test_a_key_seen_rarely_is_never_hot():
    tokens = np.array([7] * (MIN_HOT_SAMPLES - 1) + list(range(100, 110)))
    assert predicted_gain(tokens, np.zeros(len(tokens), int), 64) == 1.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=1, max_size=400), st.integers(1, 32))
def test_the_prediction_is_at_least_one_and_finite(tokens, n):
    homes = [t % n for t in tokens]
    g = predicted_gain(tokens, homes, n)
    assert 1.0 <= g < float("inf")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=1, max_size=400), st.integers(1, 32))
def test_the_listing_of_the_bounded_sample_predicts_as_every_row_does(tokens, n):
    # the check reads auto's bounded sample, which lists only keys above a floor: every
    # key hot enough to count is listed, so the prediction is the same
    counts: dict[int, int] = {}
    for t in tokens:
        counts[t] = counts.get(t, 0) + 1
    listed = listed_stats(counts, len(tokens), n)
    keys = listed.keys.tolist()
    got = listed_gain(listed.counts, [k % n for k in keys], len(tokens), n)
    assert got == pytest.approx(predicted_gain(tokens, [t % n for t in tokens], n))
