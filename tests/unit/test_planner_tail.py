"""Routing-table planners on bounded statistics: the unlisted tail's load counts in L̄ and
in every partition's load (Fang et al. §3 plan for the whole data, not the listed keys)."""
from __future__ import annotations

import numpy as np
import pytest

from sparkbalance.planning import LLFD, Mixed, Workload
from sparkbalance.stats.keystats import KeyStats
from sparkbalance.strategies.tables import plan_from_stats


def test_workload_carries_the_tail_share_in_loads_and_mean():
    w = Workload(keys=np.array([1, 2]), cost=[3.0, 1.0], memory=[1.0, 1.0], home=[0, 1],
                 current=[0, 1], num_partitions=2, tail_load=4.0)
    assert w.loads().tolist() == [5.0, 3.0] and w.mean_load == 4.0
    assert w.imbalance() == 1.25 and w.imbalance_lower_bound == 1.25
    with pytest.raises(ValueError, match="tail_load=-1"):
        Workload(np.array([1]), [1.0], [1.0], [0], [0], 1, tail_load=-1)


def test_from_stats_prices_the_tail_at_the_listed_cost_per_record():
    s = KeyStats(np.array([1, 2]), [4.0, 2.0], cost=[8.0, 4.0], tail_count=3.0)
    w = Workload.from_stats(s, None, 3)
    assert w.tail_load == 6.0 and w.mean_load == 6.0


def test_a_tail_that_balances_the_data_needs_no_moves():
    # Listed keys alone: 10 on partition 0, 0 elsewhere (imbalance 4). With a tail of 120
    # spread evenly (30 each) partition 0 carries 40 of a mean 32.5: within θ = 0.25, so
    # nothing moves; without the tail every planner would move listed keys.
    keys = np.arange(10, dtype=np.int64)
    w = Workload(keys, np.ones(10), np.ones(10), np.zeros(10, dtype=np.int64),
                 np.zeros(10, dtype=np.int64), 4, tail_load=120.0)
    for planner in (Mixed(theta=0.25), LLFD(theta=0.25)):
        plan = planner.plan(w)
        assert plan.migration_cost == 0 and plan.feasible
        assert plan.imbalance_after == pytest.approx(40 / 32.5)
    no_tail = Workload(keys, np.ones(10), np.ones(10), np.zeros(10, dtype=np.int64),
                       np.zeros(10, dtype=np.int64), 4)
    assert Mixed(theta=0.25).plan(no_tail).migration_cost > 0


def test_bounded_statistics_plan_to_the_whole_data_bound():
    rng = np.random.default_rng(1)
    counts = rng.zipf(1.5, 20_000).astype(float)
    full = KeyStats(np.arange(20_000, dtype=np.int64), counts)
    top = full.top(500)
    plan = plan_from_stats("mixed", top, 8, theta=0.1)
    # every partition's load, tail share included, within the bound the plan reports
    w = Workload.from_stats(top, None, 8)
    assert plan.loads_after.sum() == pytest.approx(w.total_cost + w.tail_load)
    assert plan.feasible == (plan.imbalance_after <= 1.1 + 1e-9)


def test_integer_keys_under_a_table_route_as_the_partitioner_assigns():
    from decimal import Decimal

    from sparkbalance.routing.table import RoutingTable, RoutingTablePartitioner
    rng = np.random.default_rng(0)
    keys = rng.permutation(100_000).astype(np.int64)[:50_000]
    tab = {int(k): int(rng.integers(0, 7)) for k in rng.choice(keys, 300, replace=False)}
    tab.update({2.0: 3, Decimal(5): 4, "x": 1, float("nan"): 6, 2 ** 70: 1, -7: 2})
    f = RoutingTablePartitioner(7, RoutingTable(tab))
    s = KeyStats(np.concatenate([keys, [2, 5, -7]]).astype(np.int64), np.ones(50_003))
    w = Workload.from_stats(s, f, 7)
    assert np.array_equal(w.current, f.assign(s.keys))
