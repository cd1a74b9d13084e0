"""Summary rows, medians and tables of the benchmarks (sparkbalance.bench.report)."""
from __future__ import annotations

import pytest

from sparkbalance.bench.plain import PlainRecord
from sparkbalance.bench.report import (format_reduce_table, format_table, median_rows,
                                       summarise)
from sparkbalance.bench.workloads import RunResult


def _rec(seq, secs, imb=1.5, moved=0.0, rebalanced=False, mig=0.0):
    return PlainRecord(seq, secs, imb, imb, 0, moved, 10.0, 3, 0.001, mig, rebalanced)


def test_summarise_skips_warmup_and_gives_ratios():
    hist = {"none": [_rec(0, 9.0), _rec(1, 1.0), _rec(2, 1.0)],
            "mixed": [_rec(0, 9.0), _rec(1, 0.5, moved=30.0, rebalanced=True, mig=0.2),
                      _rec(2, 0.5)],
            "mintable": [_rec(0, 9.0), _rec(1, 0.5, moved=60.0, rebalanced=True), _rec(2, 1)]}
    rows = {r["planner"]: r for r in summarise(hist)}
    assert rows["none"]["mean_s"] == 1.0 and rows["mixed"]["vs_none"] == 0.5
    assert rows["mixed"]["mig_s_batch"] == pytest.approx(0.1)
    assert rows["mixed"]["mig_s_each"] == pytest.approx(0.2)
    table = format_table(list(rows.values()))
    assert "0.50" in table.splitlines()[3]        # mixed bytes / mintable bytes


def test_median_rows_per_planner_over_repeats():
    runs = [[{"planner": "none", "mean_s": s, "migrations": m},
             {"planner": "mixed", "mean_s": s / 2, "migrations": m + 1}]
            for s, m in ((1.0, 0), (3.0, 2), (2.0, 1))]
    med = median_rows(runs)
    assert med == [{"planner": "none", "mean_s": 2.0, "migrations": 1},
                   {"planner": "mixed", "mean_s": 1.0, "migrations": 2}]
    assert isinstance(med[0]["migrations"], int)


def test_reduce_table_ratios_to_hash():
    rs = [RunResult("hash", [30, 10], [3.0, 1.0], [3.0, 1.0], 2.0, 0.0, {}),
          RunResult("pkg", [20, 20], [2.0, 2.0], [1.5, 1.5], 1.0, 0.1, {})]
    lines = format_reduce_table(rs, 2).splitlines()
    assert lines[2].split()[0] == "hash" and "1.00x" in lines[2]
    assert lines[3].split()[0] == "pkg" and "0.50x" in lines[3] and "0.50x" in lines[3]
