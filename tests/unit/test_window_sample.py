"""The grouped statistics pass's rows read into a KeySample (no Spark): a candidate's rows
and aggregates exact, other keys scaled from their group's draws, null keys counted."""
from __future__ import annotations

from sparkbalance.spark.window.sample import _grouped_sample


def _rows(n_hot=10):
    # candidate, draw, key, order, then the group's rows, null keys, draws, aggregate
    hot = [(0, 0.1 * (j + 1), "h", j + 1, n_hot, 0, 3, 55) for j in range(3)]
    cold = [(-1, 0.05, "a", 5, 6, 1, 2, 7), (-1, 0.4, None, 7, 6, 1, 2, 7)]
    return hot + cold


def test_candidates_exact_other_keys_scaled_null_keys_counted():
    rows = _rows()
    groups = {r[0]: r for r in rows}
    ks = _grouped_sample(rows, groups, np_=1, at=4, f=0.5, agg_names=["x"], numeric=True)
    assert ks.total == 16.0 and ks.null_rows == 1.0 and not ks.exact
    assert ks.keys == ["h", "a"] and ks.counts.tolist() == [10.0, 3.0]
    assert ks.samples["h"] == [(1,), (2,), (3,)] and ks.samples["a"] == [(5,)]
    assert ks.totals == {"h": {"x": 55}} and ks.drawn == 5


def test_every_row_drawn_is_exact_and_non_numeric_totals_are_left_out():
    rows = [(0, 0.1, "h", 1, 2, 0, 2, "z"), (0, 0.2, "h", 2, 2, 0, 2, "z"),
            (-1, 0.3, "a", 3, 1, 0, 1, None)]
    groups = {r[0]: r for r in rows}
    ks = _grouped_sample(rows, groups, np_=1, at=4, f=1.0, agg_names=["m"], numeric=False)
    assert ks.exact and ks.counts.tolist() == [2.0, 1.0] and ks.totals == {}
