"""The simulator and the workloads of Xing et al. §5.1 (Table 2)."""
from __future__ import annotations

import numpy as np
import pytest

from sparkbalance.planning.correlation import (GlobalCorrelation, LLFPlacement,
                                               PairwiseCorrelation, correlation,
                                               correlation_matrix)
from sparkbalance.planning.correlation.simulate import (PAPER_NODES, PAPER_RATIO,
                                                        PAPER_UNITS_PER_NODE,
                                                        connected_assignment, on_off_workload,
                                                        random_assignment, simulate,
                                                        square_wave_workload, window_metrics)


def test_square_wave_has_the_papers_shape_level_and_ratio():
    tr = square_wave_workload(samples=100, load_level=0.7, noise=False, seed=2)
    assert tr.series.shape == (PAPER_NODES * PAPER_UNITS_PER_NODE, 100)
    assert tr.series.sum(axis=0).mean() / PAPER_NODES == pytest.approx(0.7)
    first = tr.series[0]
    assert first.max() / first.min() == pytest.approx(PAPER_RATIO, rel=1e-6)
    # operators of one chain share the input stream: perfectly correlated without noise
    same = np.flatnonzero(tr.chain == tr.chain[0])
    assert all(correlation(tr.series[same[0]], tr.series[u]) == pytest.approx(1.0)
               for u in same[1:])
    # spread phases: the total load is nearly flat, stream correlations span [-1, 1]
    heads = tr.series[np.unique(tr.chain, return_index=True)[1]]
    r = correlation_matrix(heads)
    assert r.min() < -0.8 and r[np.triu_indices(len(heads), 1)].max() > 0.8
    total = tr.series.sum(axis=0)
    assert total.std() / total.mean() < 0.05


def test_square_wave_with_noise_and_random_phases_is_seeded():
    a = square_wave_workload(samples=30, seed=5, phases="random").series
    b = square_wave_workload(samples=30, seed=5, phases="random").series
    assert np.array_equal(a, b)
    with pytest.raises(ValueError, match="phases='even'"):
        square_wave_workload(phases="even")


def test_on_off_streams_include_opposites_and_shifted_copies():
    tr = on_off_workload(samples=400, seed=3)
    heads = tr.series[np.unique(tr.chain, return_index=True)[1]]
    r = correlation_matrix(heads)
    iu = np.triu_indices(len(heads), 1)
    assert r[iu].min() < -0.9 and r[iu].max() > 0.5
    assert (tr.series >= 0).all() and (tr.series == 0).any()      # idle periods


def test_assignments():
    tr = square_wave_workload(num_nodes=4, units_per_node=5, chain_length=5, samples=20)
    assert np.array_equal(connected_assignment(tr, 4), tr.chain % 4)
    a = random_assignment(20, 4, seed=1)
    assert np.bincount(a).tolist() == [5, 5, 5, 5]


def test_window_metrics_match_the_planner_figures():
    tr = square_wave_workload(num_nodes=4, units_per_node=5, chain_length=5, samples=30)
    p = GlobalCorrelation().plan(tr.series[:, :10], 4)
    x = np.zeros((4, 10))
    np.add.at(x, p.assignment, tr.series[:, :10])
    std, rho, bound = window_metrics(x, 10)
    assert std[0] == pytest.approx(p.node_std_mean)
    assert rho[0] == pytest.approx(p.mean_pair_correlation)
    assert bound[0] == pytest.approx(p.std_bound)


def test_simulate_static_and_dynamic():
    tr = square_wave_workload(num_nodes=6, units_per_node=10, chain_length=10, samples=60)
    a0 = connected_assignment(tr, 6)
    static = simulate(tr, 6, a0)
    assert static.plans == 0 and static.moves == 0 and static.load_moved == 0
    glb = simulate(tr, 6, a0, once=GlobalCorrelation())
    assert glb.plans == 1 and glb.node_std_mean < static.node_std_mean
    assert glb.delay_proxy <= static.delay_proxy
    dyn = simulate(tr, 6, a0, every=PairwiseCorrelation("exchange", improved=True))
    assert dyn.plans == 60 - 10
    assert dyn.load_moved == pytest.approx(dyn.moved_per_sample.sum())
    llf = simulate(tr, 6, a0, once=LLFPlacement())
    assert glb.node_std_mean < llf.node_std_mean
    with pytest.raises(ValueError, match="warmup=5"):
        simulate(tr, 6, a0, warmup=5)
