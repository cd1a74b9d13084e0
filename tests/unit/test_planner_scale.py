"""The routing-table planners' fast paths at scale (issue 19) decide exactly as the general ones.

Single keys (exact statistics) take shortcuts: LLFD places keys that fit the least-loaded
partition in a pure-Python run, ejects exchangeable sets at once, truncates tables in one
step, packs finished trials and repeats trials from a memo. Forcing the general path
(``single=False``: every unit treated as a record that may split) must give the same plan,
move for move and reason for reason. The orders they rely on (sorted runs of the candidate
queue, rankings by partial partition) must equal the full stable orders.
"""
from __future__ import annotations

import heapq

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkbalance.planning import base as base_mod
from sparkbalance.planning import LLFD, MinMig, MinTable, Mixed, MixedBF, Workload
from sparkbalance.planning.base import selection_criterion
from sparkbalance.planning.candidates import CandidateQueue
from sparkbalance.planning.llfd import _Ranked
from sparkbalance.planning.units import Units
from sparkbalance.routing.table import RoutingTable, RoutingTablePartitioner
from sparkbalance.stats.workload import _table_routes

PLANNERS = (Mixed, MinTable, MinMig, LLFD, MixedBF)


def _instance(seed: int):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 16))
    K = int(rng.integers(0, 300))
    cost = np.arange(1, K + 1, dtype=float) ** -rng.uniform(0.3, 1.5) * 1000
    if seed % 3 == 0:
        cost = np.round(cost)                        # ties in c and in γ
    rng.shuffle(cost)
    mem = cost * rng.uniform(0.2, 3, K) if seed % 2 else np.ones(K)
    home = rng.integers(0, n, K)
    cur = np.where(rng.random(K) < 0.1, rng.integers(0, n, K), home)
    keys = np.arange(K, dtype=np.int64) * 3 - 50
    tail = float(rng.uniform(0, cost.sum())) if seed % 5 == 0 else 0.0
    w = Workload(keys, cost, mem, home, cur, n, tail)
    table = {int(keys[i]): int(cur[i]) for i in np.flatnonzero(cur != home)}
    if seed % 4 == 0:
        table["stale"] = 0
    kw = dict(theta=float(rng.choice([0.0, 0.02, 0.08, 0.3])),
              max_table=int(rng.integers(0, 40)))
    if seed % 5 == 2:
        kw["phase2"] = "fit"
    return w, RoutingTable(table), kw


def _fingerprint(plan):
    info = {k: v for k, v in plan.info.items() if not isinstance(v, np.ndarray)}
    return (sorted(plan.table.items(), key=repr), [tuple(vars(m).values()) for m in plan.moves],
            dict(plan._reasons), info, plan.info["estimated_loads_after"].tolist())


class _GeneralUnits(Units):
    """Units that never take the single-key shortcuts."""

    def __init__(self, *args, single: bool = False, **kwargs) -> None:
        super().__init__(*args, single=False, **kwargs)


@pytest.mark.parametrize("seed", range(60))
def test_single_key_shortcuts_plan_as_the_general_path(seed, monkeypatch):
    w, table, kw = _instance(seed)
    fast = [_fingerprint(cls(**kw).plan(w, table)) for cls in PLANNERS]
    monkeypatch.setattr(base_mod, "Units", _GeneralUnits)
    general = [_fingerprint(cls(**kw).plan(w, table)) for cls in PLANNERS]
    assert fast == general


def test_repeated_trial_is_a_fresh_copy():
    w, table, _ = _instance(7)
    planner = MinTable(theta=0.0)
    ctx = base_mod.PlanningContext(planner, w, table, None)
    a = ctx.trial(ctx.table_entries, criterion="c")
    b = ctx.trial(ctx.table_entries, criterion="c")
    assert b.units is not a.units and b.units.asg is not a.units.asg
    assert np.array_equal(a.units.view("asg"), b.units.view("asg"))
    b.units.truncate_table(0)                    # what A_max's limit does to its copy
    c = ctx.trial(ctx.table_entries, criterion="c")
    assert np.array_equal(c.units.view("asg"), a.units.view("asg"))
    assert c.units.reason == a.units.reason
    assert len(ctx.trials) == 3


def test_packed_units_rebuild_their_destinations():
    cur = np.array([0, 1, 2, 0])
    u = Units(np.ones(4), np.ones(4), np.ones(4, dtype=np.int64), cur, cur,
              np.zeros(4, dtype=bool), np.ones(4), 3, single=True)
    u.asg[1] = 2
    u.pack()
    assert u._asg is None
    assert u.asg.tolist() == [0, 2, 2, 0]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(
    st.tuples(st.just("push"), st.integers(0, 4)),
    st.tuples(st.just("run"), st.lists(st.integers(0, 4), max_size=12)),
    st.tuples(st.just("pop"), st.just(0))), max_size=40))
def test_candidate_queue_pops_as_a_heap_of_all_candidates(ops):
    q, heap, seq, unit = CandidateQueue(), [], 0, 0
    for op, arg in ops:
        costs = [arg] if op == "push" else arg if op == "run" else []
        if op == "push":
            q.push(float(arg), unit)
        elif op == "run":
            q.push_run(np.array(costs, dtype=float), np.arange(unit, unit + len(costs)))
        for c in costs:
            heapq.heappush(heap, (-float(c), seq, unit))
            seq += 1
            unit += 1
        if op == "pop":
            assert q.pop() == (heapq.heappop(heap)[2] if heap else -1)
    out = []                       # the rest by blocks: a whole block or one unit at a time
    while q:
        negc, units, lo, hi = q.block()
        take = hi - lo if len(out) % 2 else 1
        assert negc[lo] == -q.peek_cost()
        out.extend(units[lo:lo + take])
        q.advance(take)
    assert out == [heapq.heappop(heap)[2] for _ in range(len(heap))]
    assert q.pop() == -1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=9000), st.integers(1, 9000))
def test_rankings_read_lazily_are_prefixes_of_the_stable_order(levels, m):
    crit = np.array(levels, dtype=float)
    crit[::7] = np.inf                               # γ = inf (S = 0)
    N = crit.shape[0]
    u = Units(crit + 1, np.ones(N), np.ones(N, dtype=np.int64), np.zeros(N, dtype=np.int64),
              np.zeros(N, dtype=np.int64), np.zeros(N, dtype=bool), crit, 1, single=True)
    idx = np.arange(0, N, 2)
    full = idx[np.argsort(-crit[idx], kind="stable")]
    head = _Ranked(u, idx).head(m)
    assert head.shape[0] >= min(m, idx.shape[0])
    assert np.array_equal(head, full[: head.shape[0]])
    need = float((crit[full[: m // 2]] + 1).sum())
    top = u.ranked_until(idx, need)
    assert np.array_equal(top, full[: top.shape[0]])
    assert top.shape[0] == full.shape[0] or np.cumsum(crit[top] + 1)[-1] >= need


def test_selection_criterion_in_place_matches_its_formula():
    c = np.array([4.0, 1.0, 0.0, 2.0, 9.0])
    S = np.array([8.0, 0.0, 3.0, 2.0, 0.5])
    with np.errstate(divide="ignore"):
        want = np.where(S > 0, c ** 1.5 / np.where(S > 0, S, 1.0), np.inf)
    want[c <= 0] = 0.0
    assert selection_criterion(c, S, "gamma", 1.5).tolist() == want.tolist()
    assert selection_criterion(c, S, "density", 1.5).tolist() == np.where(
        c > 0, np.where(S > 0, c / np.where(S > 0, S, 1.0), np.inf), 0.0).tolist()
    assert c.tolist() == [4.0, 1.0, 0.0, 2.0, 9.0]   # the input is not written


@pytest.mark.parametrize("seed", range(5))
def test_table_routes_of_sorted_and_shuffled_keys_agree(seed):
    rng = np.random.default_rng(seed)
    keys = np.unique(rng.integers(-10 ** 6, 10 ** 6, 2000))
    n = 7
    home = rng.integers(0, n, keys.shape[0])
    entries = {int(k): int(rng.integers(0, n)) for k in rng.choice(keys, 50, replace=False)}
    entries.update({10 ** 9: 1, 2.0: 3, "x": 2})     # absent, float and str entries
    part = RoutingTablePartitioner(n, RoutingTable(entries))
    sorted_routes = _table_routes(keys, home, part)
    o = rng.permutation(keys.shape[0])
    shuffled = _table_routes(keys[o], home[o], part)
    assert np.array_equal(sorted_routes[o], shuffled)
    want = np.array([entries.get(int(k), h) for k, h in zip(keys, home)])
    assert np.array_equal(sorted_routes, want)


def test_a_unit_placed_twice_on_a_partition_counts_once_in_its_exchangeable_set():
    # placed on d, ejected, placed on d again: added[d] lists it twice; its cost must
    # count once towards the need, so one unit of cost 3 does not cover a need of 5
    from types import SimpleNamespace

    from sparkbalance.planning.llfd import _Members
    u = SimpleNamespace(asg=np.array([1, 0, 0]), c=np.array([3.0, 9.0, 9.0]),
                        cnt=np.array([1, 1, 1]), crit=np.array([3.0, 9.0, 9.0]), N=3, n=2)
    m = _Members(u)
    m.note_added(1, 0)
    m.note_added(1, 0)
    m.static[1] = SimpleNamespace(size=0, head=lambda k: np.array([], dtype=np.int64))
    assert m.exchangeable(5.0, 1, 5.0, 1e-9) is None
    units, take = m.exchangeable(5.0, 1, 3.0, 1e-9)
    assert units.tolist() == [0] and take.tolist() == [1]
