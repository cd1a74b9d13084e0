"""Plan records and log lines without Spark: loads, lower bound, nesting, warnings."""
from __future__ import annotations

import logging
from types import SimpleNamespace as NS

import numpy as np
import pytest

from sparkbalance.routing.hash import HashPartitioner
from sparkbalance.routing.table import RoutingTablePartitioner
from sparkbalance.spark.report import balance_log as bl
from sparkbalance.spark.report import plan_report as pr
from sparkbalance.state.control import report
from sparkbalance.stats.keystats import KeyStats

STATS = KeyStats.from_counts({"hot": 10, "a": 2, "b": 2, "c": 2})


def test_plan_record_loads_before_under_current_after_under_the_plan():
    f = RoutingTablePartitioner(2, {"hot": 0, "a": 1, "b": 1, "c": 1})
    current = RoutingTablePartitioner(2, {"hot": 0, "a": 0, "b": 0, "c": 1})
    r = pr.plan_record(f, 2, stats=STATS, current=current)
    assert r["loads_before"] == [14.0, 2.0] and r["loads_after"] == [10.0, 6.0]
    assert r["lower_bound"] == 10.0 and r["table_size"] == 4 and r["keys_rerouted"] == 2
    plain = pr.plan_record(f, 2, stats=STATS)  # before: stable hash, no rerouting count
    h = HashPartitioner(2).assign(STATS.keys)
    assert plain["loads_before"] == np.bincount(h, weights=STATS.cost, minlength=2).tolist()
    assert "keys_rerouted" not in plain


def test_zero_pass_record_uses_the_group_sizes():
    f, _ = pr.plan_groups([6, 6, 1, 1], 2)  # runs would give 6 | 8: LPT's 7 | 7 is kept
    r = pr.plan_record(f, 2, group_sizes=np.array([6.0, 6, 1, 1]))
    assert r["loads_before"] == [12.0, 2.0] and r["loads_after"] == [7.0, 7.0]
    assert r["lower_bound"] == 7.0 and r["layout"] == "4 key groups"


def test_reported_posts_one_record_per_outer_call_and_one_info_line(caplog):
    @pr.reported("inner")
    def inner(data, num_partitions, strategy=None):
        return pr.fit(strategy, STATS, num_partitions)

    @pr.reported("outer")
    def outer(data, num_partitions, strategy=None):
        return inner(data, num_partitions, strategy)

    before = len(bl.balance_log())
    with caplog.at_level(logging.INFO, logger="sparkbalance"):
        outer([], 2, "mixed")
    recs = bl.balance_log().records()[before:]
    assert [(r["operation"], r["label"]) for r in recs] == [("outer", "outer(key, 2, mixed)")]
    assert recs[0]["plan_seconds"] >= 0 and recs[0]["lower_bound"] == 10.0
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert len(lines) == 1 and lines[0].startswith("sparkbalance: outer(key, 2, mixed): mixed")


def test_no_plan_no_record():
    @pr.reported("given")
    def given(data, num_partitions, strategy=None):
        return strategy

    before = len(bl.balance_log())
    given([], 2, HashPartitioner(2))
    assert len(bl.balance_log()) == before


class _Op:
    """An operator stand-in (hashable and weak-referenceable, as the real one)."""

    def __init__(self, **attrs):
        self.__dict__.update(attrs)


def _op(judgement, decision=None):
    row = NS(seq=3, batch_id=None, table_size=0, decision=judgement.reason, batch_seconds=0.1,
             num_keys=4, state_bytes=10.0, imbalance_before=2.0, imbalance_after=1.2)
    return _Op(name="clicks", sc=None, planner="mixed", strategy=NS(name="mixed"), theta=0.1,
              key_col="key", history=[row], _plan_seconds=0.01, _judgement=judgement,
              _state=NS(layout=NS(table_size=0, version=1, table=())),
               layout=NS(table_size=0, version=1, table=()))


@pytest.mark.parametrize("reason", ["does not pay"])
def test_refused_migration_warns_once_per_reason(caplog, reason):
    j = NS(migrate=False, reason=reason, imbalance=2.0, imbalance_planned=1.2, saving_s=0.1,
           cost_s=0.5)
    op = _op(j)
    m = NS(loads=np.array([6.0, 2.0]), active=np.array([0, 1]), cost=np.array([6.0, 2.0]))
    with caplog.at_level(logging.INFO, logger="sparkbalance"):
        for _ in range(3):
            rec = report.post_batch(op, m, None)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "migration refused (does not pay" in warnings[0].getMessage()
    assert rec["kind"] == "state" and rec["operator"] == "clicks" and rec["plan_seconds"] == 0.01
    assert rec["lower_bound"] == 6.0 and rec["max_after"] == pytest.approx(1.2 * 4.0)


def test_no_better_plan_is_not_a_refusal(caplog):
    """Above the trigger with no layout change: nothing was refused, so no WARNING."""
    j = NS(migrate=False, reason="no better plan", imbalance=1.2, imbalance_planned=1.2,
           saving_s=0.0, cost_s=0.0)
    m = NS(loads=np.array([6.0, 4.0]), active=np.array([0, 1]), cost=np.array([6.0, 4.0]))
    with caplog.at_level(logging.INFO, logger="sparkbalance"):
        report.post_batch(_op(j), m, None)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_alternating_warnings_each_print_once_until_the_situation_clears(caplog):
    """"No plan within θ" and a refusal alternating: each printed once, not every other batch;
    a batch needing neither clears both, so the next occurrence is printed again."""
    refused = NS(migrate=False, reason="does not pay", imbalance=2.0, imbalance_planned=1.2,
                 saving_s=0.1, cost_s=0.5)
    fine = NS(migrate=False, reason="no better plan", imbalance=1.2, imbalance_planned=1.2,
              saving_s=0.0, cost_s=0.0)
    infeasible = NS(feasible=False, planned_moves=2, planned_bytes=20.0)
    op = _op(refused)
    m = NS(loads=np.array([6.0, 2.0]), active=np.array([0, 1]), cost=np.array([6.0, 2.0]))

    def warnings_after(decisions):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="sparkbalance"):
            for judgement, decision in decisions:
                op._judgement = judgement
                report.post_batch(op, m, decision)
        return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]

    first = warnings_after([(refused, infeasible), (refused, None)] * 3)
    assert len(first) == 2
    assert "no plan within θ=0.1" in first[0] and "migration refused (does not pay" in first[1]
    assert warnings_after([(fine, None)]) == []
    again = warnings_after([(refused, infeasible), (refused, None)])
    assert len(again) == 2
