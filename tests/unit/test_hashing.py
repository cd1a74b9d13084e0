"""stable_hash: deterministic across processes, scalar == vectorised, clear errors."""
from __future__ import annotations

import datetime as _dt
import math
import os
import struct
import subprocess
import sys
import zlib
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkbalance.hashing import (HASH_FAMILY_SIZE, NAN_BYTES, P, RAW_NONE, hash_family,
                                  hash_family_array, raw_hash, stable_hash, stable_hash_array,
                                  validate_key)

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
    ({"a": 1}, TypeError, "dict"),
    ({1}, TypeError, "set"),
    (("ok", {1}), TypeError, "set"),
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


# --- every key type plain PySpark groups (None, Decimal, date/time, NaN, lists) ---------------
def _equal_keys_hash_equal(a, b):
    assert a == b
    assert raw_hash(a) == raw_hash(b), (a, b)
    assert stable_hash(a) == stable_hash(b)


@pytest.mark.parametrize("a, b", [
    (Decimal(2), 2), (Decimal("2.000"), 2.0), (Decimal("-0"), 0), (Decimal("0.5"), 0.5),
    (Decimal("-1.25"), -1.25), (Decimal("12.50"), Decimal("12.5")),
    (Decimal("0.10"), Decimal("0.1")), (Decimal("1E+3"), 1000), (-0.0, 0),
    (_dt.datetime(2024, 3, 1, 12, 0, tzinfo=_dt.timezone.utc),
     _dt.datetime(2024, 3, 1, 13, 0, tzinfo=_dt.timezone(_dt.timedelta(hours=1)))),
    (_dt.timedelta(days=1), _dt.timedelta(hours=24)),
    ((None, 1), (None, 1)),
])
def test_equal_keys_of_new_types_hash_equal(a, b):
    _equal_keys_hash_equal(a, b)


@pytest.mark.parametrize("a, b", [
    (Decimal("0.1"), 0.1), (Decimal("0.1"), "0.1"), (_dt.date(2024, 3, 1),
                                                     _dt.datetime(2024, 3, 1)),
    (_dt.datetime(2024, 3, 1), _dt.datetime(2024, 3, 1, tzinfo=_dt.timezone.utc)),
    (None, 0), (None, ""), (None, ()), (_dt.time(0), 0), (_dt.timedelta(0), 0),
    (_dt.date(1970, 1, 1), 0),
])
def test_unequal_keys_of_new_types_hash_apart(a, b):
    assert a != b
    assert raw_hash(a) != raw_hash(b)


def test_every_nan_is_one_key_as_in_spark():
    other = struct.unpack("<d", struct.pack("<Q", 0x7FF0_0000_0000_0001))[0]
    assert other != other
    assert raw_hash(math.nan) == raw_hash(-math.nan) == raw_hash(other) == raw_hash(
        Decimal("NaN")) == zlib.crc32(b"f" + NAN_BYTES)
    validate_key(math.nan)


def test_list_hashes_as_the_tuple_of_its_elements():
    # An ARRAY key column collects as a list; the SQL form folds it like a tuple.
    assert raw_hash([1, "a", None]) == raw_hash((1, "a", None))


def test_canonical_bytes_of_new_types():
    assert raw_hash(None) == RAW_NONE == zlib.crc32(b"n")
    assert raw_hash(_dt.date(1970, 1, 2)) == zlib.crc32(b"D1")
    assert raw_hash(_dt.date(1969, 12, 31)) == zlib.crc32(b"D-1")
    assert raw_hash(_dt.datetime(1970, 1, 1, 0, 0, 1, 5)) == zlib.crc32(b"T1000005")
    assert raw_hash(_dt.datetime(1970, 1, 1, 1, tzinfo=_dt.timezone(
        _dt.timedelta(hours=1)))) == zlib.crc32(b"Z0")
    assert raw_hash(_dt.time(0, 0, 2)) == zlib.crc32(b"t2000000")
    assert raw_hash(_dt.timedelta(microseconds=-3)) == zlib.crc32(b"e-3")
    assert raw_hash(Decimal("0.10")) == zlib.crc32(b"d0.1")
    big = "1.2345678901234567890123456789012345678"  # 38 digits: more than a context holds
    assert raw_hash(Decimal(big)) == zlib.crc32(b"d" + big.encode())
    assert raw_hash(Decimal("-1.2300E-7")) == zlib.crc32(b"d-0.000000123")
    assert raw_hash(Decimal("0.5")) == raw_hash(0.5) == zlib.crc32(b"f" + struct.pack("<d", 0.5))


def test_new_types_same_in_arrays_and_family():
    keys = [None, Decimal("3.14"), _dt.date(2001, 2, 3), _dt.datetime(2001, 2, 3, 4, 5, 6, 7),
            _dt.time(1, 2, 3), math.nan, [1, None]]
    assert list(stable_hash_array(keys)) == [stable_hash(k) for k in keys]
    for i in range(HASH_FAMILY_SIZE):
        assert [hash_family(k, i) for k in keys] == list(hash_family_array(keys, i))
