"""Load statistics of Xing et al. §2.3 and the paper's theorems as property tests."""
from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from sparkbalance.planning.correlation import (ZERO_STD_RTOL, correlation, correlation_matrix,
                                               covariance, load_statistics,
                                               mean_pair_correlation, node_series,
                                               node_std_mean, unit_node_correlation)

MODULES = ["stats", "placement", "layout", "pairwise", "global_", "baselines", "relabel",
           "simulate", "params"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    mod = importlib.import_module(f"sparkbalance.planning.correlation.{name}")
    failed, _ = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert failed == 0


def series_arrays(rows=st.integers(1, 6), k=st.integers(2, 16)):
    """(rows, k) non-negative load series, sometimes with constant rows."""
    return st.tuples(rows, k, st.integers(0, 2**31 - 1), st.booleans()).map(_make)


def _make(args):
    r, k, seed, flat = args
    rng = np.random.default_rng(seed)
    s = rng.gamma(2.0, 1.0, (r, k)) * rng.uniform(0.1, 10.0, (r, 1))
    if flat:
        s[0] = s[0, 0]
    return s


# --- definitions ---------------------------------------------------------------------------

@given(series_arrays())
def test_mean_and_variance_are_the_papers_population_formulas(s):
    st_ = load_statistics(s)
    k = s.shape[1]
    np.testing.assert_allclose(st_.mean, s.sum(axis=1) / k)
    paper_var = (s ** 2).sum(axis=1) / k - (s.sum(axis=1) / k) ** 2
    np.testing.assert_allclose(st_.var, paper_var, atol=1e-9 * (s ** 2).mean())
    np.testing.assert_allclose(st_.std, np.sqrt(st_.var))


@given(series_arrays(rows=st.just(2)))
def test_covariance_and_rho_match_the_definitions(s):
    a, b = s
    k = a.size
    cov = (a * b).sum() / k - a.sum() / k * (b.sum() / k)
    assert covariance(a, b) == pytest.approx(cov, abs=1e-9 * float((s ** 2).mean()))
    rho = correlation(a, b)
    assert -1.0 <= rho <= 1.0
    sa, sb = load_statistics(s).std
    if sa > 1e-6 * a.max() and sb > 1e-6 * b.max():
        assert rho == pytest.approx(np.corrcoef(a, b)[0, 1], abs=1e-9)


def test_rho_of_a_constant_series_is_zero():
    assert correlation([3.0, 3.0, 3.0], [1.0, 2.0, 3.0]) == 0.0
    assert correlation([0.0, 0.0], [0.0, 0.0]) == 0.0
    # constant up to rounding counts as constant
    x = np.array([0.1, 0.2, 0.3]) + 0.7 - np.array([0.1, 0.2, 0.3])
    assert correlation(x, [1.0, 5.0, 2.0]) == 0.0
    assert ZERO_STD_RTOL < 1e-6


@given(series_arrays(rows=st.integers(1, 8)), st.integers(1, 4), st.integers(0, 10**6))
def test_unit_node_correlation_excludes_the_unit_itself(s, n, seed):
    a = np.random.default_rng(seed).integers(0, n, s.shape[0])
    r = unit_node_correlation(s, a, n)
    x = node_series(s, a, n)
    for o in range(s.shape[0]):
        for j in range(n):
            other = x[j] - (s[o] if a[o] == j else 0.0)
            assert r[o, j] == pytest.approx(correlation(s[o], other), abs=1e-9)


@given(series_arrays(rows=st.integers(2, 7)))
def test_correlation_matrix_and_mean_pair_correlation(s):
    r = correlation_matrix(s)
    n = s.shape[0]
    for i in range(n):
        for j in range(n):
            if i != j:
                assert r[i, j] == pytest.approx(correlation(s[i], s[j]), abs=1e-9)
    iu = np.triu_indices(n, 1)
    assert mean_pair_correlation(s) == pytest.approx(r[iu].mean())
    assert node_std_mean(s) == pytest.approx(load_statistics(s).std.mean())


# --- the paper's theorems --------------------------------------------------------------------

@given(series_arrays(rows=st.integers(1, 8)))
def test_theorem_1_average_variance_bound(xs):
    """Σ var X_i >= var X / n, equality for X_i = X / n (Xing et al. Theorem 1, Eq. 1)."""
    n = xs.shape[0]
    total = xs.sum(axis=0)
    var = load_statistics(xs).var
    var_x = load_statistics(total[None, :]).var[0]
    tol = 1e-9 * (var_x + var.sum() + 1e-300)
    assert var.sum() >= var_x / n - tol
    even = np.repeat(total[None, :] / n, n, axis=0)
    assert load_statistics(even).var.sum() == pytest.approx(var_x / n, rel=1e-9, abs=1e-12)
    # Fig. 4's MINIMUM: the average node std is at least std(X)/n (std is subadditive)
    assert node_std_mean(xs) >= np.sqrt(var_x) / n - 1e-9 * (np.sqrt(var_x) + 1e-300)


@given(series_arrays(rows=st.integers(2, 6)), st.integers(0, 2**31 - 1))
def test_theorem_1_the_even_split_is_the_unique_minimum_among_balanced_plans(xs, seed):
    """Any balanced split of X other than X/n has a larger average variance."""
    n = xs.shape[0]
    total = xs.sum(axis=0)
    rng = np.random.default_rng(seed)
    # a balanced split: X/n plus zero-mean perturbations that sum to zero over the nodes
    d = rng.normal(0, 1, (n, total.size))
    d -= d.mean(axis=1, keepdims=True)
    d -= d.mean(axis=0, keepdims=True)
    assume(np.abs(d).max() > 1e-6)
    split = total[None, :] / n + d
    best = load_statistics(np.repeat(total[None, :] / n, n, axis=0)).var.mean()
    assert load_statistics(split).var.mean() > best


@given(series_arrays(rows=st.just(2)))
def test_theorem_2_two_node_bounds(xs):
    """n = 2, ρ₁₂ > 0: var X / (1 + ρ₁₂) <= var X₁ + var X₂ <= var X."""
    x1, x2 = xs
    rho = correlation(x1, x2)
    assume(rho > 1e-6)
    v1, v2 = load_statistics(xs).var
    vx = load_statistics((x1 + x2)[None, :]).var[0]
    tol = 1e-9 * vx
    assert vx / (1.0 + rho) <= v1 + v2 + tol
    assert v1 + v2 <= vx + tol


@given(series_arrays(rows=st.just(2)))
def test_identity_of_co_location(xs):
    """var(S₁+S₂)/2 − (var S₁ + var S₂)/2 = ρ₁₂·√var S₁·√var S₂ (Xing et al. §3.3.1)."""
    s1, s2 = xs
    v1, v2 = load_statistics(xs).var
    v12 = load_statistics((s1 + s2)[None, :]).var[0]
    lhs = v12 / 2 - (v1 + v2) / 2
    rhs = correlation(s1, s2) * np.sqrt(v1) * np.sqrt(v2)
    assert lhs == pytest.approx(rhs, abs=1e-9 * (v12 + v1 + v2 + 1e-300))


@given(st.integers(1, 6), st.integers(0, 25), st.integers(0, 10**6))
def test_load_window_keeps_the_last_k_samples_oldest_first(k, pushes, seed):
    from sparkbalance.planning.correlation import LoadWindow
    rng = np.random.default_rng(seed)
    samples = rng.uniform(0, 1, (pushes, 3))
    w = LoadWindow(3, k)
    for x in samples:
        w.push(x)
    expect = samples[max(0, pushes - k):].T
    assert np.array_equal(w.series, expect)
    assert w.samples == min(pushes, k) and w.ready == (pushes >= k)
    w.clear()
    assert w.series.shape == (3, 0)


def test_load_window_rejects_bad_samples():
    from sparkbalance.planning.correlation import LoadWindow
    w = LoadWindow(2, 3)
    with pytest.raises(ValueError, match=r"expected \(2,\)"):
        w.push([1.0])
    with pytest.raises(ValueError, match="expected loads >= 0"):
        w.push([1.0, -1.0])
    with pytest.raises(ValueError, match="k=0; expected an int >= 1"):
        LoadWindow(2, 0)
