"""The share of a move's planned gain the next batch keeps (state/control/realized.py), and
the payoff model's use of it."""
from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given, settings, strategies as st

from sparkbalance.routing.table import RoutingTable
from sparkbalance.state.control.controller import Controller
from sparkbalance.state.control.layout import TableLayout
from sparkbalance.state.control.payoff import PayoffModel
from sparkbalance.state.control.realized import MAX_SAMPLE, RealizedGain

N = 4
works = st.dictionaries(st.integers(0, 40), st.integers(0, 200), min_size=1, max_size=30)


def _measure(c: Controller, work: dict, layout: TableLayout):
    keys = list(dict.fromkeys([*work, *layout.table.routes]))
    where = np.asarray(layout.fn.assign(keys))
    cost = np.array([work.get(k, 0) for k in keys], dtype=np.float64)
    return c.measure_keys(keys, cost, np.ones(len(keys)), where, layout, len(keys),
                          float(len(keys)))


@settings(max_examples=60, deadline=None)
@given(st.lists(works, min_size=2, max_size=8), st.floats(0.01, 3.0))
def test_the_share_stays_in_0_1_and_each_sample_in_its_clip(batches, gain):
    rg, left = RealizedGain(), TableLayout(N, N, RoutingTable())
    for a, b in zip(batches, batches[1:]):
        keys = sorted(a)
        plan = TableLayout(N, N, RoutingTable({k: (i % N) for i, k in enumerate(keys)}, 1))
        rg.planned(left, plan, gain)
        ks = np.array(sorted(b))
        sample = rg.observe(ks, np.array([b[k] for k in ks], dtype=np.float64))
        assert sample is None or 0.0 <= sample <= MAX_SAMPLE
        assert 0.0 <= rg.share <= 1.0


@settings(max_examples=40, deadline=None)
@given(works)
def test_a_plan_the_next_batch_repeats_keeps_all_of_its_gain(work):
    """A batch like the planned one keeps the whole planned gain: the share stays 1."""
    c = Controller("mixed", 0.05)
    left = TableLayout(N, N, RoutingTable())
    m = _measure(c, work, left)
    d = c.plan(m, left)
    gain = m.imbalance - d.imbalance_after
    if d.layout == left or gain <= 1e-9:
        return
    c.realized.planned(left, d.layout, gain)
    ks = np.array(sorted(work))
    sample = c.realized.observe(ks, np.array([work[k] for k in ks], dtype=np.float64))
    assert abs(sample - 1.0) < 1e-9 and c.realized.share == 1.0


def test_a_plan_made_on_the_batch_it_rides_in_is_measured_on_the_one_after():
    rg, left = RealizedGain(), TableLayout(N, N, RoutingTable())
    plan = TableLayout(N, N, RoutingTable({0: 1}, 1))
    rg.planned(left, plan, 0.5, skip=1)
    assert rg.observe(np.array([0, 1]), np.array([5.0, 1.0])) is None   # its own batch
    assert rg.observe(np.array([0, 1]), np.array([5.0, 1.0])) is not None
    assert rg.observe(np.array([0, 1]), np.array([5.0, 1.0])) is None   # measured once


def test_the_payoff_model_counts_only_the_share_kept():
    pm = PayoffModel()
    for x in (100, 200, 300, 150):
        pm.observe_batch(0.1 + 0.001 * x, x)
    full = pm.judge(2.0, 1.0, 200, 100, 0.0)
    half = pm.judge(2.0, 1.0, 200, 100, 0.0, realized=0.5)
    assert abs(half.saving_s - full.saving_s / 2) < 1e-12
    assert pm.judge(2.0, 1.0, 200, 100, 0.0, realized=float("nan")).saving_s == full.saving_s


def test_a_drifting_stream_teaches_a_share_below_one():
    """Hot keys that hand their load to other keys from batch to batch: a plan fitted to
    one batch keeps less than its gain on the next."""
    c = Controller("mixed", 0.05)
    left = TableLayout(N, N, RoutingTable())
    rng = np.random.default_rng(0)
    for t in range(6):
        hot = rng.choice(200, size=4, replace=False).tolist()
        work = Counter({k: 5 for k in range(200)})
        work.update({k: 400 for k in hot})
        m = _measure(c, dict(work), left)
        c.observe_batch(1.0, m)
        d = c.plan(m, left)
        if d.layout != left:
            c.realized.planned(left, d.layout, m.imbalance - d.imbalance_after)
    assert c.realized.seen >= 3 and c.realized.share < 0.8
