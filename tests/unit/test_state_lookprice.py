"""The look-ahead's price as the user pays it (batches with it minus without) and the
chance of a shift by the batch's age: what ``lookahead="auto"`` decides on."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from sparkbalance.state.control.hazard import ShiftHazard
from sparkbalance.state.control.lookahead import Lookahead
from sparkbalance.state.control.lookprice import MIN_SAMPLES, REFRESH, LookPrice


@settings(max_examples=60, deadline=None)
@given(fixed=st.floats(0.0, 2.0), b=st.floats(0.0, 1e-3), price=st.floats(0.0, 0.5),
       records=st.integers(100, 100_000), seed=st.integers(0, 2**16))
def test_the_price_is_the_seconds_a_batch_pays_more_whatever_its_balance(fixed, b, price,
                                                                         records, seed):
    # t = F + b · L_max (+ price when looked ahead); a looked-ahead batch is better
    # balanced (its L_max lower), which must not count as a cheaper look-ahead.
    rng = np.random.default_rng(seed)
    lp = LookPrice()
    for i in range(2 * MIN_SAMPLES):
        looked = bool(i % 2)
        load = records / 8 * (rng.uniform(1.0, 1.2) if looked else rng.uniform(1.5, 3.0))
        lp.observe(looked, fixed + b * load + price * looked, records, load)
    assert lp.known
    assert math.isclose(lp.price(b), price, rel_tol=1e-6, abs_tol=1e-9)


@settings(max_examples=40, deadline=None)
@given(per_record=st.floats(1e-7, 1e-5), sizes=st.lists(st.integers(1000, 50_000),
                                                       min_size=6, max_size=12))
def test_batches_of_different_sizes_compare_per_unit_of_work(per_record, sizes):
    lp = LookPrice()
    for i, n in enumerate(sizes):
        lp.observe(bool(i % 2), 0.2 * n / 1000 + per_record * n * (i % 2), n)
    assert lp.known
    assert math.isclose(lp.price(0.0, 10_000), per_record * 10_000, rel_tol=1e-6)
    assert math.isclose(lp.price(0.0), per_record * sizes[-1], rel_tol=1e-6)


def test_one_noisy_batch_does_not_move_the_median():
    lp = LookPrice()
    for s in (0.50, 0.52, 0.49, 0.51, 0.50):
        lp.observe(False, s, 1000)
    for s in (0.55, 0.56, 5.0, 0.54, 0.55):      # one batch stalled by another job
        lp.observe(True, s, 1000)
    assert abs(lp.price(0.0) - 0.05) < 0.011


def test_unknown_until_both_kinds_were_seen_and_moves_and_bad_values_are_kept_out():
    lp = LookPrice()
    for _ in range(MIN_SAMPLES):
        lp.observe(True, 0.6, 1000)
        lp.observe(False, 0.5, 1000, moved=True)     # the move's excess is not the price
        lp.observe(False, math.nan, 1000)
        lp.observe(False, 0.5, 0)
    assert lp.counts == (0, MIN_SAMPLES) and lp.price(0.0) is None
    for _ in range(MIN_SAMPLES):
        lp.observe(False, 0.5, 1000)
    assert lp.known and abs(lp.price(0.0) - 0.1) < 1e-12


def test_exploring_asks_for_the_kind_it_lacks_then_refreshes_a_stale_one():
    lp = LookPrice()
    asked = []
    for _ in range(2 * MIN_SAMPLES):
        kind = lp.explore()
        asked.append(kind)
        lp.observe(kind, 0.5, 1000)
    assert asked.count(True) == asked.count(False) == MIN_SAMPLES
    assert lp.explore() is None
    for _ in range(REFRESH):                     # only batches without the look-ahead
        lp.observe(False, 0.5, 1000)
    assert lp.explore() is True


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="min_samples"):
        LookPrice(samples=2, min_samples=3)


@settings(max_examples=30, deadline=None)
@given(period=st.integers(2, 10), periods=st.integers(4, 8))
def test_a_rhythm_is_learned_the_shift_batches_likely_the_others_not(period, periods):
    hz = ShiftHazard()
    for t in range(period * periods):
        hz.observe(t % period == period - 1)
    assert hz.age == 1
    assert hz.chance(period) > 0.75
    assert all(hz.chance(a) < 0.25 for a in range(1, period))


@settings(max_examples=30, deadline=None)
@given(rate=st.floats(0.1, 0.9), seed=st.integers(0, 2**16))
def test_a_stream_without_rhythm_has_about_its_mean_rate_at_every_age(rate, seed):
    rng = np.random.default_rng(seed)
    hz = ShiftHazard()
    for _ in range(400):
        hz.observe(bool(rng.random() < rate))
    assert 0.0 <= hz.chance() <= 1.0
    assert all(0.0 <= hz.chance(a) <= 1.0 for a in range(1, 30))


def test_the_first_move_from_the_initial_layout_starts_the_clock_and_is_not_a_shift():
    hz = ShiftHazard()
    for _ in range(3):
        hz.observe(False)                        # the hash layout's batches
    assert hz.chance() == 0.0 and not hz.started
    hz.observe(True)                             # the first plan removes its imbalance
    assert hz.started and hz.age == 1 and sum(hz.seen.values()) == 0
    assert hz.chance() == 1.0                    # another shift expected ...
    for _ in range(10):
        hz.observe(False)
    assert hz.chance() < 0.1                     # ... until quiet batches say otherwise


def test_auto_decides_on_the_measured_price_not_the_parts_boundary():
    # The parts measurement saw 0.05 s; the batches with the look-ahead took 0.10 s more.
    # A shift batch's lag of 0.08 s pays the first, not the second.
    la = Lookahead("auto")
    la.expect(map_stage=True)
    la.observe_tally(0.05)
    la.observe_reroute(0.0)
    for t in range(12):
        la.observe(0.08 if t % 3 == 2 else 0.0)
    assert la.hazard.age == 1
    la.observe(0.0)
    la.observe(0.0)                               # the coming batch is a shift batch
    assert la.hazard.chance() > 0.8
    assert la.boundary_s == 0.05 and la.wanted()
    for looked in (True, False) * 3:
        la.observe_batch(looked, 0.5 + 0.10 * looked, 1000)
    assert abs(la.boundary_s - 0.10) < 1e-9 and not la.wanted()
