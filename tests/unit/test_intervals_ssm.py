"""SSM / Simple_SSM against a brute-force oracle, Ding et al.'s Table 3 instance, edge cases
and plan-validity properties (Ding et al., Definitions 3.1-3.2)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkbalance.planning.intervals import SSM, IntervalPlan, SimpleSSM, brute_force
from sparkbalance.planning.intervals.model import make_problem, match_intervals
from sparkbalance.planning.intervals.oracle import balanced_partitionings

TABLE3 = dict(weights=[1.0] * 20, sizes=[1.0] * 20, bounds=[0, 13, 20])


def random_instance(rng: np.random.Generator, max_m: int = 10, max_n: int = 4):
    m = int(rng.integers(1, max_m + 1))
    n = int(rng.integers(1, max_n + 1))
    n2 = int(rng.integers(1, max_n + 1))
    if rng.random() < 0.5:
        w = rng.integers(0, 6, m).astype(float)
    else:
        w = rng.random(m) * 5
    s = rng.integers(0, 6, m).astype(float)
    b = np.concatenate([[0], np.sort(rng.integers(0, m + 1, n - 1)), [m]])
    tau = float(rng.choice([0.0, 0.2, 0.5]))
    return w, s, b, n2, tau


def check_valid(plan: IntervalPlan, w, s, b, n2: int, tau: float) -> None:
    """Invariants every plan satisfies, feasible or not."""
    w, s, b = np.asarray(w, float), np.asarray(s, float), np.asarray(b)
    m, n = len(w), len(b) - 1
    assert plan.bounds.shape == (n2 + 1,)
    assert plan.bounds[0] == 0 and plan.bounds[-1] == m
    assert np.all(np.diff(plan.bounds) >= 0)
    assert plan.owners.shape == (n2,)
    assert len(set(plan.owners.tolist())) == n2          # one interval per node
    new = plan.owners[plan.owners >= n]
    assert sorted(new.tolist()) == list(range(n, n + len(new)))
    if n2 >= n:                                            # no old node removed
        assert set(range(n)) <= set(plan.owners.tolist())
    # cost == sum of sizes of tasks whose node changes; gain is the rest
    before = np.repeat(np.arange(n), np.diff(b))
    after = np.repeat(plan.owners, np.diff(plan.bounds))
    assert plan.migration_cost == pytest.approx(s[before != after].sum())
    assert plan.gain + plan.migration_cost == pytest.approx(s.sum())
    loads = np.add.reduceat(np.concatenate([w, [0]]), plan.bounds[:-1])[:n2] * \
        (np.diff(plan.bounds) > 0)
    assert plan.loads == pytest.approx(loads)
    cap = (1 + tau) * w.sum() / n2
    if plan.feasible:
        assert np.all(plan.loads <= cap * (1 + 1e-9) + 1e-12)


# --- the oracle comparison the issue asks for -------------------------------------------

def test_ssm_equals_brute_force_on_random_small_instances():
    rng = np.random.default_rng(2024)
    feasible = 0
    for _ in range(400):
        w, s, b, n2, tau = random_instance(rng)
        got = SSM(tau).plan(w, s, b, n2)
        want = brute_force(w, s, b, n2, tau)
        assert got.feasible == want.feasible, (w, s, b, n2, tau)
        check_valid(got, w, s, b, n2, tau)
        if want.feasible:
            feasible += 1
            assert got.migration_cost == pytest.approx(want.migration_cost), (w, s, b, n2, tau)
    assert feasible > 200      # the sample exercises the feasible case mostly


def test_simple_ssm_equals_ssm_and_brute_force():
    rng = np.random.default_rng(7)
    for _ in range(150):
        w, s, b, n2, tau = random_instance(rng, max_m=8)
        a = SSM(tau).plan(w, s, b, n2)
        simple = SimpleSSM(tau).plan(w, s, b, n2)
        want = brute_force(w, s, b, n2, tau)
        assert simple.feasible == a.feasible == want.feasible
        check_valid(simple, w, s, b, n2, tau)
        if want.feasible:
            assert simple.migration_cost == pytest.approx(want.migration_cost)
            assert a.migration_cost == pytest.approx(simple.migration_cost)


def test_min_load_two_sided_matches_brute_force():
    rng = np.random.default_rng(11)
    for _ in range(150):
        w, s, b, n2, tau = random_instance(rng)
        ml = float(rng.choice([0.3, 0.6, 1.0]))
        got = SSM(tau, min_load=ml).plan(w, s, b, n2)
        want = brute_force(w, s, b, n2, tau, min_load=ml)
        assert got.feasible == want.feasible
        if want.feasible:
            assert got.migration_cost == pytest.approx(want.migration_cost)
            mean = np.sum(w) / n2
            assert np.all(got.loads >= ml * mean * (1 - 1e-9) - 1e-12)


def test_positional_variant_is_optimal_among_identity_owners():
    rng = np.random.default_rng(5)
    for _ in range(150):
        w, s, b, n2, tau = random_instance(rng)
        got = SSM(tau, positional=True).plan(w, s, b, n2)
        assert got.owners.tolist() == list(range(n2))
        p = make_problem(w, s, b, n2, tau)
        best = None
        for cuts in balanced_partitionings(p):
            ov = sum(max(0.0, p.sc[min(cuts[j + 1], b[j + 1])] - p.sc[max(cuts[j], b[j])])
                     for j in range(min(n2, len(b) - 1)) if min(cuts[j + 1], b[j + 1])
                     > max(cuts[j], b[j]))
            cost = float(np.sum(s)) - ov
            best = cost if best is None else min(best, cost)
        assert got.feasible == (best is not None)
        if best is not None:
            assert got.migration_cost == pytest.approx(best)
            # never cheaper than the unconstrained optimum
            assert got.migration_cost >= SSM(tau).plan(w, s, b, n2).migration_cost - 1e-9


# --- Ding et al. Table 3 -------------------------------------------------------------------

def test_table3_adding_a_node_costs_4():
    plan = SSM(tau=0.4).plan(TABLE3["weights"], TABLE3["sizes"], TABLE3["bounds"], 3)
    assert plan.feasible
    assert plan.migration_cost == 4.0
    assert plan.loads.max() <= 9          # (1 + 0.4) * 20 / 3 = 9.33
    assert SimpleSSM(tau=0.4).plan(**TABLE3, num_nodes=3).migration_cost == 4.0
    assert brute_force(**TABLE3, num_nodes=3, tau=0.4).migration_cost == 4.0


def test_table3_single_step_twice_is_not_optimal_for_the_sequence():
    p1 = SSM(tau=0.4).plan(TABLE3["weights"], TABLE3["sizes"], TABLE3["bounds"], 3)
    p2 = SSM(tau=0.4).plan(TABLE3["weights"], TABLE3["sizes"], p1.bounds, 4)
    assert p2.feasible and p2.loads.max() <= 7
    assert p1.migration_cost + p2.migration_cost >= 6      # OMS reaches 6 (test_intervals_oms)


# --- n' vs n, infeasible, errors ----------------------------------------------------------

@pytest.mark.parametrize("n2", [1, 2, 5, 8])
def test_growing_and_shrinking(n2):
    w = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]
    s = [1] * 12
    b = [0, 3, 6, 9, 12]
    plan = SSM(tau=0.5).plan(w, s, b, n2)
    check_valid(plan, w, s, b, n2, 0.5)
    if n2 < 4:
        assert len(plan.removed) == 4 - n2
        assert plan.added == ()
    else:
        assert plan.removed == ()
        assert len(plan.added) == n2 - 4
    if n2 <= 5:
        want = brute_force(w, s, b, n2, 0.5)
        assert plan.feasible == want.feasible
        if want.feasible:
            assert plan.migration_cost == want.migration_cost


def test_rebalance_only_moves_what_it_must():
    # already balanced: nothing moves
    plan = SSM(tau=0.1).plan([1] * 8, [5] * 8, [0, 4, 8], 2)
    assert plan.migration_cost == 0 and plan.bounds.tolist() == [0, 4, 8]


def test_infeasible_tau_is_reported_not_raised():
    # one task holds 90 % of the work: no 4-way split within 1.5 x the mean
    w = [90, 3, 3, 4]
    plan = SSM(tau=0.5).plan(w, [1] * 4, [0, 2, 4], 4)
    assert plan.feasible is False
    check_valid(plan, w, [1] * 4, [0, 2, 4], 4, 0.5)
    assert plan.loads.max() == 90                 # least max load fallback
    assert SimpleSSM(tau=0.5).plan(w, [1] * 4, [0, 2, 4], 4).feasible is False
    # tau = 0 with indivisible work
    assert SSM(tau=0).plan([1, 1, 1], [1] * 3, [0, 3], 2).feasible is False


def test_zero_work_and_more_nodes_than_tasks():
    plan = SSM(tau=0.0).plan([0, 0, 0], [1, 2, 3], [0, 1, 3], 6)
    assert plan.feasible and plan.migration_cost == 0
    assert plan.num_nodes == 6


@pytest.mark.parametrize("kwargs, exc, text", [
    (dict(tau=-0.1), ValueError, "tau=-0.1"),
    (dict(tau=float("nan")), ValueError, "tau=nan"),
    (dict(tau="x"), TypeError, "tau='x'"),
    (dict(tau=0.2, min_load=1.5), ValueError, "min_load=1.5"),
])
def test_bad_parameters(kwargs, exc, text):
    with pytest.raises(exc, match=text):
        SSM(**kwargs)


@pytest.mark.parametrize("w, s, b, n2, exc, text", [
    ([1, 1, 1], [1, 1], [0, 3], 2, ValueError, "len\\(sizes\\)=2; expected 3"),
    ([1, 1, 1], [1, 1, 1], [0, 2, 1, 3], 2, ValueError, "not monotone"),
    ([1, 1, 1], [1, 1, 1], [0, 2], 2, ValueError, "expected 0 to m=3"),
    ([1, 1, 1], [1, 1, 1], [1, 3], 2, ValueError, "expected 0 to m=3"),
    ([1, -1, 1], [1, 1, 1], [0, 3], 2, ValueError, "weights must be finite and >= 0"),
    ([1, 1, 1], [1, 1, 1], [0, 3], 0, ValueError, "num_nodes=0; expected >= 1"),
    ([1, 1, 1], [1, 1, 1], [0, 3], 2.5, TypeError, "num_nodes=2.5"),
    ([], [], [0, 0], 2, ValueError, "empty"),
    ([1, 1], [1, 1], [0.5, 2], 2, TypeError, "expected integers"),
])
def test_bad_inputs(w, s, b, n2, exc, text):
    with pytest.raises(exc, match=text):
        SSM(0.2).plan(w, s, b, n2)


def test_match_intervals_example_and_explain():
    sc = np.arange(21.0)
    g, owners = match_intervals(sc, np.array([0, 13, 20]), np.array([0, 4, 13, 20]))
    assert g == 16 and owners.tolist() == [2, 0, 1]
    text = SSM(0.4).plan(**TABLE3, num_nodes=3).explain()
    assert "cost=4" in text and "node 2" in text


# --- properties ---------------------------------------------------------------------------

@st.composite
def instances(draw):
    m = draw(st.integers(1, 40))
    w = draw(st.lists(st.floats(0, 100, allow_nan=False), min_size=m, max_size=m))
    s = draw(st.lists(st.floats(0, 100, allow_nan=False), min_size=m, max_size=m))
    n = draw(st.integers(1, 8))
    cuts = sorted(draw(st.lists(st.integers(0, m), min_size=n - 1, max_size=n - 1)))
    n2 = draw(st.integers(1, 10))
    tau = draw(st.sampled_from([0.0, 0.1, 0.5, 1.2, 3.0]))
    return w, s, [0] + cuts + [m], n2, tau


@settings(max_examples=80)
@given(instances())
def test_property_plans_are_valid(inst):
    w, s, b, n2, tau = inst
    plan = SSM(tau).plan(w, s, b, n2)
    check_valid(plan, w, s, b, n2, tau)
    pos = SSM(tau, positional=True).plan(w, s, b, n2)
    check_valid(pos, w, s, b, n2, tau)
    assert pos.feasible == plan.feasible
    if plan.feasible:
        assert plan.migration_cost <= pos.migration_cost + 1e-6 * (1 + sum(s))


def test_row_by_row_path_for_many_old_nodes_agrees(monkeypatch):
    from sparkbalance.planning.intervals import ssm as ssm_mod
    rng = np.random.default_rng(9)
    cases = [random_instance(rng) for _ in range(60)]
    want = [SSM(tau).plan(w, s, b, n2).migration_cost for w, s, b, n2, tau in cases]
    monkeypatch.setattr(ssm_mod, "_ACC_LIMIT", 0)
    got = [SSM(tau).plan(w, s, b, n2).migration_cost for w, s, b, n2, tau in cases]
    assert got == want


def test_inputs_are_not_modified_or_frozen():
    w = np.array([1.0, 2.0, 3.0])
    b = np.array([0, 1, 3], dtype=np.int64)
    plan = SSM(0.5).plan(w, w, b, 2)
    w[0] = 5.0                              # still writable
    b[1] = 2
    assert plan.previous_bounds.tolist() == [0, 1, 3]
    nb = plan.bounds.copy()
    SSM(0.5).plan(w, w, nb, 3)
    nb[1] = 0                               # the caller's array stays writable
