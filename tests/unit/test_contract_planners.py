"""One contract suite over every routing-table planner (Fang et al.; Readj, Gedik 2014).

Contract, on random skewed workloads: the plan meets θ and A_max or says ``feasible=False``;
the plan is a function of its input (same workload and table -> same plan); the planner and
the partition function fitted from the plan survive pickle and cloudpickle (Spark ships
both); the strategy registry fits every table strategy to the planner it names.
"""
from __future__ import annotations

import pickle

import cloudpickle
import numpy as np
import pytest

from sparkbalance import strategies
from sparkbalance.planning import LLFD, MinMig, MinTable, Mixed, MixedBF, Readj
from sparkbalance.routing import RoutingTable, RoutingTablePartitioner
from sparkbalance.stats import KeyStats, Workload

PLANNERS = [LLFD, MinTable, MinMig, Mixed, MixedBF, Readj]
SEEDS = range(4)


def _case(seed: int) -> tuple[Workload, RoutingTable, float, int]:
    """A Zipf workload with some keys already routed away from home, θ and A_max."""
    rng = np.random.default_rng(seed)
    K, n = int(rng.integers(40, 300)), int(rng.integers(2, 10))
    p = np.arange(1, K + 1, dtype=float) ** (-float(rng.uniform(0.6, 1.4)))
    cost = rng.multinomial(40 * K, p / p.sum()).astype(float)
    memory = cost * rng.uniform(0.5, 2.0, K)
    home = rng.integers(0, n, K)
    routed = rng.random(K) < 0.1
    cur = np.where(routed, rng.integers(0, n, K), home)
    table = RoutingTable({int(k): int(cur[k]) for k in np.flatnonzero(cur != home)}, version=1)
    theta = float(rng.choice([0.0, 0.05, 0.08, 0.3]))
    return Workload(np.arange(K), cost, memory, home, cur, n), table, theta, int(rng.integers(1, K))


def _same_plan(a, b) -> None:
    assert np.array_equal(a.assignment, b.assignment)
    assert dict(a.table.routes) == dict(b.table.routes)
    assert [(m.key, m.src, m.dst) for m in a.moves] == [(m.key, m.src, m.dst) for m in b.moves]
    assert a.migration_cost == b.migration_cost and a.feasible == b.feasible
    assert np.array_equal(a.loads_after, b.loads_after)


@pytest.mark.parametrize("cls", PLANNERS)
@pytest.mark.parametrize("seed", SEEDS)
def test_constraints_met_or_reported(cls, seed):
    w, table, theta, max_table = _case(seed)
    p = cls(theta=theta, max_table=max_table).plan(w, table)
    assert p.assignment.min() >= 0 and p.assignment.max() < w.num_partitions
    assert np.allclose(p.loads_after, w.loads(p.assignment))
    if p.feasible:
        assert p.loads_after.max() <= (1 + theta) * w.mean_load * (1 + 1e-9), p.summary()
        if cls.default_max_table is not None or cls in (Mixed, MixedBF, MinTable):
            assert p.table_size <= max_table, p.summary()


@pytest.mark.parametrize("cls", PLANNERS)
@pytest.mark.parametrize("seed", SEEDS)
def test_same_input_same_plan(cls, seed):
    w, table, theta, max_table = _case(seed)
    _same_plan(cls(theta=theta, max_table=max_table).plan(w, table),
               cls(theta=theta, max_table=max_table).plan(w, table))


@pytest.mark.parametrize("cls", PLANNERS)
@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps], ids=["pickle", "cloudpickle"])
def test_planner_and_fitted_function_pickle(cls, dumps):
    w, table, theta, max_table = _case(1)
    planner = cls(theta=theta, max_table=max_table)
    again = pickle.loads(dumps(planner))
    _same_plan(planner.plan(w, table), again.plan(w, table))
    f = RoutingTablePartitioner(w.num_partitions, planner.plan(w, table).table)
    g = pickle.loads(dumps(f))
    keys = w.keys.tolist()
    assert [g(k) for k in keys] == [f(k) for k in keys]
    assert g.assign(w.keys).tolist() == f.assign(w.keys).tolist()


@pytest.mark.parametrize("name", [s for s in strategies.available("table")
                                  if strategies.get(s).planner])
def test_registry_fits_the_planner_it_names(name):
    """A table strategy's fit = its planner's plan on the same statistics (defaults agree)."""
    from sparkbalance.strategies.tables import plan_from_stats
    rng = np.random.default_rng(5)
    stats = KeyStats.from_counts({i: int(c) + 1 for i, c in
                                  enumerate(rng.zipf(1.3, 300).clip(max=5000))})
    spec = strategies.get(name)
    f = strategies.fit(name, stats, 6)
    plan = plan_from_stats(name, stats, 6, **spec.defaults)
    assert isinstance(f, RoutingTablePartitioner)
    assert dict(f.table.routes) == dict(plan.table.routes)
    assert plan.planner == spec.planner_class().name
