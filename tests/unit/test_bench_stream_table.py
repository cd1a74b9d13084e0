"""The stream benchmark's summary rows and goals (pure: histories and profile rows as
plain records)."""
from __future__ import annotations

import pytest

from sparkbalance.bench.plain import PlainRecord
from sparkbalance.bench.stream_table import format_stream_table, stream_goals, stream_rows


def _hist(secs):
    return [PlainRecord(i, s, 1.0, 1.0, 0, 0.0, 1.0, 1) for i, s in enumerate(secs)]


def _prof(name, walls, evens):
    return [{"name": name, "seq": i, "jobs": 1, "balanced_s": e}
            for i, (w, e) in enumerate(zip(walls, evens))]


def test_even_floor_and_the_share_of_the_gain_taken():
    """none's batches with every stage's tasks even bound what rebalancing could reach were
    the work divisible; the goals say how much of none's excess over it a planner removed."""
    hist = {"none": _hist([2.0, 2.0]), "mixed": _hist([1.5, 1.5])}
    prof = _prof("none", [2.0, 2.0], [1.0, 1.0]) + _prof("mixed", [1.5, 1.5], [1.4, 1.4])
    rows = stream_rows(hist, prof, None, 0)
    by = {r["planner"]: r for r in rows}
    assert by["none"]["even_s"] == pytest.approx(1.0)
    assert by["none"]["even_vs_none"] == pytest.approx(0.5)
    assert by["mixed"]["even_vs_none"] == pytest.approx(0.7)
    line = [g for g in stream_goals(rows, 1) if "tasks even" in g]
    assert line and "0.50x none" in line[0] and "mixed takes 50% of that gain" in line[0]
    assert "even/none" in format_stream_table(rows).splitlines()[0]


def test_without_a_profile_the_floor_is_not_claimed():
    rows = stream_rows({"none": _hist([2.0]), "mixed": _hist([1.0])}, None, None, 0)
    assert rows[0]["even_s"] != rows[0]["even_s"]          # nan
    assert not [g for g in stream_goals(rows, 1) if "tasks even" in g]


def test_the_clairvoyant_row_says_how_much_of_its_gain_the_planner_takes():
    hist = {"none": _hist([2.0, 2.0]), "mixed": _hist([1.5, 1.5]),
            "oracle:mixed": _hist([1.4, 1.4])}
    rows = stream_rows(hist, None, None, 0)
    goals = stream_goals(rows, 1)
    line = [g for g in goals if "clairvoyant" in g]
    assert line and "0.70x none" in line[0] and "mixed takes 83% of its gain" in line[0]
    # its moves are untimed and not the controller's: no migration or jobs goal for it
    assert not [g for g in goals if g.startswith("oracle:")]
    assert "oracle:mixed" in format_stream_table(rows)
