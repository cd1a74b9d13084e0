"""stable_hash: deterministic across processes, scalar == vectorised, clear errors."""
from __future__ import annotations

import math
import os
import subprocess
import sys
import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkbalance.hashing import (HASH_FAMILY_SIZE, P, hash_family, hash_family_array,
                                  raw_hash, stable_hash, stable_hash_array)

KEYS = [0, 1, -1, 2**40, -(2**63), 2**70, "", "a", "héllo wörld", "日本", b"", b"\x00ab",
        1.5, -0.25, float("inf"), ("a", 1), ("a", ("b", 2.5)), (), True, False]

scalar_keys = st.one_of(st.integers(), st.text(), st.binary(),
                        st.floats(allow_nan=False), st.booleans())
keys = st.recursive(scalar_keys, lambda inner: st.tuples(inner, inner), max_leaves=4)


def test_hash_is_in_range_and_deterministic():
    for k in KEYS:
        h = stable_hash(k)
        assert 0 <= h < P
        assert h == stable_hash(k)


def test_python_equal_keys_hash_equal():
    # 1 == 1.0 == True in Python, so they are one key of a dict-based routing table.
    assert stable_hash(1) == stable_hash(1.0) == stable_hash(True) == stable_hash(np.int64(1))
    assert stable_hash(0) == stable_hash(False) == stable_hash(-0.0)
    assert stable_hash("a") == stable_hash(np.str_("a"))


def test_distinct_types_differ():
    assert stable_hash(1) != stable_hash("1") != stable_hash(b"1")


def test_raw_hash_is_documented_crc32():
    assert raw_hash("key") == zlib.crc32(b"skey")
    assert raw_hash(-42) == zlib.crc32(b"i-42")
    assert raw_hash(b"xy") == zlib.crc32(b"bxy")


@given(st.lists(keys, max_size=30))
def test_array_equals_scalar(ks):
    arr = np.empty(len(ks), dtype=object)
    arr[:] = ks
    assert stable_hash_array(arr).tolist() == [stable_hash(k) for k in ks]
    for i in (1, HASH_FAMILY_SIZE - 1):
        assert hash_family_array(arr, i).tolist() == [hash_family(k, i) for k in ks]


@pytest.mark.parametrize("arr", [
    np.arange(-500, 500, dtype=np.int64), np.arange(100, dtype=np.int32),
    np.array(["a", "bb", "ccc", "héllo"]), np.array([1.0, 2.5, -3.0]),
])
def test_array_fast_paths(arr):
    assert stable_hash_array(arr).tolist() == [stable_hash(k) for k in arr.tolist()]


def test_family_members_are_different_functions():
    hs = {hash_family("k", i) for i in range(HASH_FAMILY_SIZE)}
    assert len(hs) == HASH_FAMILY_SIZE


def test_spread_over_partitions():
    parts = stable_hash_array(np.arange(100_000)) % np.uint64(16)
    counts = np.bincount(parts.astype(np.int64), minlength=16)
    assert counts.min() > 0.9 * counts.mean()


@pytest.mark.parametrize("bad, exc, word", [
    (None, TypeError, "NoneType"),
    (math.nan, ValueError, "NaN"),
    ([1, 2], TypeError, "list"),
    ({"a": 1}, TypeError, "dict"),
    ({1}, TypeError, "set"),
    (("ok", None), TypeError, "NoneType"),
    (("ok", float("nan")), ValueError, "NaN"),
    (object(), TypeError, "object"),
])
def test_bad_keys_raise_clear_errors(bad, exc, word):
    with pytest.raises(exc, match=word):
        stable_hash(bad)
    with pytest.raises(exc, match=word):
        stable_hash_array([1, bad])


def test_family_index_validated():
    with pytest.raises(ValueError, match="expected 0 <= i <"):
        hash_family("a", HASH_FAMILY_SIZE)


def test_same_in_processes_with_different_hash_seeds():
    code = ("from sparkbalance.hashing import stable_hash;"
            "print([stable_hash(k) for k in ['a', 'héllo', ('x', 1), 7, b'z', 2.5]])")
    outs = set()
    for seed in ("0", "1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout
        outs.add(out)
    assert len(outs) == 1
