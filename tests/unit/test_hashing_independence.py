"""The hash family behaves as independent hashes modulo small n (Carter-Wegman mod 2**61 - 1).

Regression for the first version, whose multipliers were < 2**30: ``raw * A + B`` stayed below
``3 * 2**61``, so ``h_i mod n`` was a function of ``raw mod n`` and a 0-2 wrap count, and
``(h_0 mod n, h_1 mod n)`` took only ~2n of the n*n pairs. Key groups were then tied to the
home partition (chi-square z ~ 65-390 below) and the PKG / D-Choices candidates to each other.

The chi-square tests use fixed keys (deterministic, never flaky) and a generous bound: the
Wilson-Hilferty z-score of the statistic must stay below 5 (p ~ 3e-7), where the old family
scored 65 and more. numpy only (scipy is not a dependency).
"""
from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkbalance import hashing
from sparkbalance.hashing import (FAMILY_SEED, HASH_FAMILY_SIZE, P, hash_family,
                                  hash_family_array, raw_hash_array)
from sparkbalance.routing.keygroups import key_groups

NUM_KEYS = 20_000
PARTITIONS = (2, 3, 4, 8, 16)
Z_MAX = 5.0  # Wilson-Hilferty z of the chi-square statistic; p ~ 3e-7 (old family: z >= 65)

KEY_SETS = {
    "int": np.arange(NUM_KEYS),
    "str": np.array([f"user-{i}" for i in range(NUM_KEYS)], dtype=object),
}


def _z(stat: float, df: int) -> float:
    """Wilson-Hilferty normal approximation of a chi-square(df) statistic (z-score)."""
    v = 2.0 / (9.0 * df)
    return ((stat / df) ** (1.0 / 3.0) - (1.0 - v)) / math.sqrt(v)


def _independence_z(a: np.ndarray, b: np.ndarray, na: int, nb: int) -> float:
    """Pearson chi-square test of independence of two categorical samples, as a z-score."""
    table = np.zeros((na, nb))
    np.add.at(table, (a, b), 1)
    expected = table.sum(1, keepdims=True) * table.sum(0, keepdims=True) / table.sum()
    assert (expected > 0).all(), "a value never occurs: the marginal is degenerate"
    stat = float(((table - expected) ** 2 / expected).sum())
    return _z(stat, (na - 1) * (nb - 1))


def _uniformity_z(a: np.ndarray, n: int) -> float:
    counts = np.bincount(a, minlength=n).astype(float)
    expected = counts.sum() / n
    return _z(float(((counts - expected) ** 2 / expected).sum()), n - 1)


def _mod(keys: np.ndarray, i: int, n: int) -> np.ndarray:
    return (hash_family_array(keys, i) % np.uint64(n)).astype(np.int64)


@pytest.mark.parametrize("kind", sorted(KEY_SETS))
@pytest.mark.parametrize("n", PARTITIONS)
def test_first_two_hashes_are_independent_mod_n(kind, n):
    keys = KEY_SETS[kind]
    h0, h1 = _mod(keys, 0, n), _mod(keys, 1, n)
    assert len(set(zip(h0.tolist(), h1.tolist()))) == n * n  # old family: ~2n pairs
    assert _independence_z(h0, h1, n, n) < Z_MAX


@pytest.mark.parametrize("kind", sorted(KEY_SETS))
@pytest.mark.parametrize("n", PARTITIONS)
def test_key_group_is_independent_of_home_partition(kind, n):
    keys = KEY_SETS[kind]
    m = 16 * n
    home, group = _mod(keys, 0, n), key_groups(keys, m)
    assert _independence_z(home, group, n, m) < Z_MAX


@pytest.mark.parametrize("kind", sorted(KEY_SETS))
def test_every_pair_of_family_members_is_independent(kind):
    """PKG, D-Choices, W-Choices and TAG take their candidates from h_0 .. h_{d-1}."""
    keys = KEY_SETS[kind]
    n = 5
    hs = [_mod(keys, i, n) for i in range(HASH_FAMILY_SIZE)]
    for i, j in itertools.combinations(range(HASH_FAMILY_SIZE), 2):
        assert _independence_z(hs[i], hs[j], n, n) < Z_MAX, (i, j)


@pytest.mark.parametrize("kind", sorted(KEY_SETS))
@pytest.mark.parametrize("n", PARTITIONS)
def test_each_hash_is_uniform_mod_n(kind, n):
    keys = KEY_SETS[kind]
    for i in range(HASH_FAMILY_SIZE):
        assert _uniformity_z(_mod(keys, i, n), n) < Z_MAX, i


def test_constants_are_the_documented_draw():
    """A uniform in [1, P), B uniform in [0, P), drawn with FAMILY_SEED as documented."""
    rng = random.Random(FAMILY_SEED)
    a = tuple(rng.randrange(1, P) for _ in range(HASH_FAMILY_SIZE))
    b = tuple(rng.randrange(P) for _ in range(HASH_FAMILY_SIZE))
    assert hashing._A == a
    assert hashing._B == b
    # Large multipliers: raw * A wraps mod P many times for almost every raw (the old bug
    # was A < 2**30, where it wrapped at most twice).
    assert min(a) > 2 ** 50


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2 ** 32 - 1), max_size=200),
       st.integers(0, HASH_FAMILY_SIZE - 1))
def test_numpy_affine_step_is_exact(raws, i):
    """The Mersenne-rotation uint64 form equals the exact 93-bit Python arithmetic."""
    raws = raws + [0, 1, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1]
    got = hashing._affine_array(np.array(raws, dtype=np.uint64), i)
    assert got.dtype == np.uint64
    assert got.tolist() == [(r * hashing._A[i] + hashing._B[i]) % P for r in raws]


scalar_keys = st.one_of(st.integers(), st.text(), st.binary(),
                        st.floats(allow_nan=False), st.booleans())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(scalar_keys, st.tuples(scalar_keys, scalar_keys)), max_size=40))
def test_every_family_member_array_equals_scalar(keys):
    arr = np.empty(len(keys), dtype=object)
    arr[:] = keys
    raw = raw_hash_array(arr)
    assert (raw < 2 ** 32).all()
    for i in range(HASH_FAMILY_SIZE):
        assert hash_family_array(arr, i).tolist() == [hash_family(k, i) for k in keys]
