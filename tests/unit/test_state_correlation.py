"""The keyed state's correlation planner (Xing et al.) without Spark: the group-map layout,
the combined COR-GLB / pairwise planner and the controller's windowed decisions."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkbalance import strategies
from sparkbalance.planning.correlation import CorrelationPlanner, series_imbalance
from sparkbalance.state.control.controller import Controller, Measurement
from sparkbalance.state.control.planners import initial_layout
from sparkbalance.state.control.layout import GroupLayout


def _measure(layout: GroupLayout, cost: np.ndarray) -> Measurement:
    loads = np.bincount(layout.group_to_partition(), weights=cost,
                        minlength=layout.num_physical).astype(float)
    active = np.sort(layout.phys)
    lam = float(loads[active].max() / loads[active].mean())
    return Measurement(loads, active, lam, None, cost, np.ones_like(cost), None,
                       cost.shape[0], float(cost.shape[0]))


def _square(groups: int, t: int, period: int = 6) -> np.ndarray:
    """Groups 0..m/2-1 hot in the first half of every period, the rest in the second."""
    first = (t % period) < period // 2
    return np.array([10.0 if (g < groups // 2) == first else 1.0 for g in range(groups)])


def test_a_group_map_layout_routes_any_group_to_any_of_its_partitions():
    lay = GroupLayout.initial(3, num_groups=6)
    new = lay.after_map(np.array([2, 0, 1, 2, 0, 1]), 3)
    assert new.group_to_partition().tolist() == [2, 0, 1, 2, 0, 1]
    assert new.interval_of_group().tolist() == [2, 0, 1, 2, 0, 1]
    assert new.version == lay.version + 1 and new != lay
    from sparkbalance.routing.keygroups import key_group
    assert [new.fn.partition(k) for k in range(20)] == \
        [int(new.owner[key_group(k, 6)]) for k in range(20)]
    again = pickle.loads(pickle.dumps(new))
    assert again == new and again.fn.assign(list(range(50))).tolist() == \
        new.fn.assign(list(range(50))).tolist()
    grown = new.after_map(np.array([3, 0, 1, 2, 0, 1]), 4)
    assert grown.num_physical == 4 and grown.phys.tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="outside phys"):
        GroupLayout(2, 3, 4, np.array([0, 2, 4]), np.array([0, 1]), 0, np.array([0, 2, 1, 0]))
    with pytest.raises(ValueError, match="every one of 6 groups"):
        lay.after_map(np.array([0, 1, 3, 0, 1, 2]), 3)


def test_an_interval_layout_pickled_before_group_maps_still_loads():
    lay = GroupLayout.initial(2, num_groups=4)
    state = dict(lay.__dict__)
    state.pop("owner")
    old = GroupLayout.__new__(GroupLayout)
    old.__dict__.update(state)          # what an older pickle restores
    assert old.owner is None and old.group_to_partition().tolist() == [0, 0, 1, 1]


def test_correlation_is_a_state_only_key_group_strategy():
    for name in ("correlation", "correlation-pairwise"):
        spec = strategies.get(name)
        assert spec.kind == "keygroups" and spec.state_only
        assert name not in strategies.KEY_GROUPING
        with pytest.raises(ValueError, match="keyed state only"):
            strategies.resolve(name)
    assert {"k", "mode", "improved", "theta", "epsilon"} <= \
        set(strategies.accepted_params("correlation"))
    with pytest.raises(TypeError, match="unknown parameter 'tau'"):
        Controller("correlation", 0.1, planner_params={"tau": 0.2})


def test_the_planner_places_globally_first_then_pairwise():
    t = np.arange(10)
    up, down = 1.0 + (t < 5), 1.0 + (t >= 5)
    s = np.array([up, up, down, down])
    p = CorrelationPlanner()
    first = p.plan(s, np.array([0, 0, 1, 1]), 2)
    assert first.planner == "COR-GLB" and first.node_std_mean == 0.0
    second = p.plan(s, first.assignment, 2)
    assert second.planner == "COR-SE-IMP"
    shrink = p.plan(s, np.array([0, 1, 2, 2]), 2)     # node 2 goes away: global again
    assert shrink.planner == "COR-GLB" and shrink.assignment.max() < 2
    assert CorrelationPlanner(global_first=False).plan(s, np.array([0, 0, 1, 1]), 2) \
        .planner == "COR-SE-IMP"
    with pytest.raises(ValueError, match="k=1"):
        CorrelationPlanner(k=1)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 5), st.integers(4, 24), st.integers(2, 8), st.integers(0, 10 ** 6))
def test_series_imbalance_is_the_mean_per_sample_lambda(n, m, k, seed):
    rng = np.random.default_rng(seed)
    s = rng.exponential(1.0, (m, k))
    a = rng.integers(0, n, m)
    want = np.mean([np.bincount(a, weights=s[:, j], minlength=n).max()
                    / np.bincount(a, weights=s[:, j], minlength=n).mean() for j in range(k)])
    assert series_imbalance(s, a, n) == pytest.approx(want)
    assert series_imbalance(s, a, n) >= 1.0 - 1e-12


def test_the_controller_learns_the_alternation_and_stops_migrating():
    """Square-wave loads in antiphase: SSM's intervals move at every phase change; the
    correlation planner co-locates groups that alternate, once, and then stays."""
    runs = {}
    for planner in ("correlation", "ssm"):
        c = Controller(planner, 0.2, trigger="paper")
        lay = initial_layout(planner, 2, 8)
        moves, lams = 0, []
        for t in range(36):
            m = _measure(lay, _square(8, t))
            c.observe_batch(1.0, m)
            lams.append(m.imbalance)
            if c.should_rebalance(m):
                d = c.plan(m, lay)
                if c.judge(m, d).migrate and d.layout != lay:
                    lay, moves = d.layout, moves + 1
        runs[planner] = (moves, float(np.mean(lams[12:])), lay)
    corr_moves, corr_lam, lay = runs["correlation"]
    ssm_moves, ssm_lam, _ = runs["ssm"]
    assert corr_moves <= 2 and corr_lam < 1.05, runs
    assert ssm_moves > corr_moves and ssm_lam > corr_lam, runs
    assert lay.owner is not None     # a group map, not intervals


def test_the_controller_waits_for_two_batches_and_records_window_lambdas():
    c = Controller("correlation", 0.1)
    lay = initial_layout("correlation", 2, 8)
    m = _measure(lay, _square(8, 0))
    assert m.imbalance > 1.1 and not c.should_rebalance(m)   # no window yet
    c.observe_batch(1.0, m)
    assert not c.should_rebalance(m)                          # one sample: no correlation
    c.observe_batch(1.0, _measure(lay, _square(8, 1)))
    assert c.should_rebalance(m)
    d = c.plan(m, lay)
    assert d.imbalance_before == pytest.approx(series_imbalance(c.window.series,
                                                                lay.interval_of_group(), 2))
    assert d.imbalance_after < d.imbalance_before and d.planned_moves > 0
    j = c.judge(m, d)
    assert j.imbalance == pytest.approx(d.imbalance_before)


def test_scaling_a_group_map_keeps_what_stays():
    c = Controller("correlation", 0.1, trigger="paper")
    lay = initial_layout("correlation", 3, 12)
    for t in range(4):
        c.observe_batch(1.0, _measure(lay, _square(12, t)))
    m = _measure(lay, _square(12, 4))
    d = c.plan(m, lay, num_partitions=2)
    assert d.layout.num_partitions == 2
    assert set(d.layout.group_to_partition().tolist()) <= set(d.layout.phys.tolist())
    up = c.plan(m, lay, num_partitions=5)
    assert up.layout.num_partitions == 5 and up.layout.num_physical >= 5
