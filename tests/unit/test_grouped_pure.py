"""Spark-free parts of the grouped-map work: the per-group cost model and the skew report."""
from __future__ import annotations

import numpy as np
import pytest

from sparkbalance.spark.diagnose.skew_report import BALANCED_ENOUGH, evaluate
from sparkbalance.stats.groupcost import fit_group_cost, group_cost_stats
from sparkbalance.stats.keystats import KeyStats


@pytest.mark.parametrize("t0, alpha, beta", [(0.0, 0.01, 0.0), (0.2, 0.0, 1.5),
                                             (0.05, 0.002, 0.3)])
def test_group_cost_model_recovers_the_generating_costs(t0, alpha, beta):
    rng = np.random.default_rng(1)
    rows = rng.integers(10, 1000, 16).astype(float)
    groups = rng.integers(1, 30, 16).astype(float)
    m = fit_group_cost(t0 + alpha * rows + beta * groups, rows, groups)
    assert (m.t0, m.alpha, m.beta) == pytest.approx((t0, alpha, beta), abs=1e-9)


def test_group_cost_model_leaves_out_unmeasured_partitions_and_checks_shapes():
    m = fit_group_cost([1.0, np.nan, 2.0, 3.0], [1, 5, 2, 3], [1, 1, 1, 1])
    assert m.alpha == pytest.approx(1.0) and m.beta + m.t0 == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(ValueError, match="equal length"):
        fit_group_cost([1.0], [1, 2], [1, 2])
    with pytest.raises(ValueError, match="no partition has a measured time"):
        fit_group_cost([np.nan], [1], [1])


def test_a_sample_run_prices_the_whole_data():
    whole = KeyStats.from_counts({"a": 1000, "b": 10, "c": 10})
    sample = KeyStats.from_counts({"a": 100, "b": 1, "c": 1})
    # measured: 2 s per group whatever its rows, on 3 partitions
    priced, m = group_cost_stats(whole, [2.0, 4.0, 0.0], [0, 1, 1], measured=sample)
    assert priced.cost.tolist() == pytest.approx([2.0, 2.0, 2.0])
    with pytest.raises(ValueError, match="one partition per measured key"):
        group_cost_stats(whole, [1.0], [0, 0], measured=sample)


def test_report_of_uniform_keys_recommends_nothing_costly():
    s = KeyStats.from_counts({i: 100 for i in range(400)})
    r = evaluate(s, 4, np.arange(400) % 4)
    assert r.lower_bound == 1.0 and r.spark.max_over_avg == 1.0
    assert r.recommended == "spark" and "would not pay" in r.reason
    assert r.speedup == pytest.approx(1.0)


def test_report_of_one_dominant_key_names_the_bound_and_the_split():
    counts = {"hot": 600, **{f"k{i}": 5 for i in range(80)}}
    s = KeyStats.from_counts(counts)
    spark = [0] + [i % 4 for i in range(80)]          # hot key shares partition 0
    r = evaluate(s, 4, spark, null_rows=20)
    total = 600 + 400 + 20
    assert r.rows == total and r.null_rows == 20 and r.distinct_keys == 82
    assert r.lower_bound == pytest.approx(600 / (total / 4))
    assert r.top[0] == ("hot", 600, pytest.approx(600 / total))
    best = r.placements[r.recommended]
    assert best.max_over_avg <= r.lower_bound * BALANCED_ENOUGH
    assert "split" in r.reason and r.speedup > 1.0
    # the predictions are the fitted functions' placements (nulls on partition 0)
    for name, f in r.partitioners.items():
        loads = np.bincount(f.assign(s.keys), weights=s.counts, minlength=4)
        loads[0] += 20
        assert r.placements[name].loads.tolist() == loads.tolist()
    text = str(r)
    assert "lower bound" in text and "<- recommended" in text and "'hot'" in text


def test_report_plot(tmp_path):
    pytest.importorskip("matplotlib")
    s = KeyStats.from_counts({"hot": 60, **{i: 2 for i in range(40)}})
    r = evaluate(s, 4, [0] * 41, names=["hash", "mixed"])
    fig = r.plot(str(tmp_path / "skew.png"))
    assert (tmp_path / "skew.png").stat().st_size > 0 and len(fig.axes) == 2
