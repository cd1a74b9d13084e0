"""The column-wise CRC-32 of integer keys equals zlib's per key (and so the scalar hashes)."""
from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkbalance.hashing import HASH_FAMILY_SIZE, hash_family, hash_family_array, raw_hash
from sparkbalance.intcrc import int_crc32_array

INT64 = st.integers(-(2 ** 63), 2 ** 63 - 1)
UINT64 = st.integers(0, 2 ** 64 - 1)


@given(st.lists(INT64, max_size=60))
def test_int64_equals_zlib_per_key(ks):
    arr = np.array(ks, dtype=np.int64)
    assert int_crc32_array(arr).tolist() == [zlib.crc32(b"i%d" % k) for k in ks]


@given(st.lists(UINT64, max_size=60))
def test_uint64_equals_zlib_per_key(ks):
    arr = np.array(ks, dtype=np.uint64)
    assert int_crc32_array(arr).tolist() == [zlib.crc32(b"i%d" % k) for k in ks]


@given(st.lists(INT64, min_size=1, max_size=40), st.integers(0, HASH_FAMILY_SIZE - 1))
def test_family_array_of_ints_equals_scalar(ks, i):
    arr = np.array(ks, dtype=np.int64)
    assert hash_family_array(arr, i).tolist() == [hash_family(k, i) for k in ks]


@pytest.mark.parametrize("arr", [
    np.array([], dtype=np.int64), np.array([0, 9, 10, 9999, 10_000, -10_000]),
    np.array([2 ** 63 - 1, -(2 ** 63)], dtype=np.int64),
    np.array([0, 10 ** 19, 2 ** 64 - 1], dtype=np.uint64),
    np.arange(-128, 128, dtype=np.int8), np.array([True, False]),
])
def test_edges_and_dtypes(arr):
    assert int_crc32_array(arr).tolist() == [raw_hash(k) for k in arr.tolist()]


def test_rejects_non_integer_arrays():
    with pytest.raises(TypeError, match="float64"):
        int_crc32_array(np.array([1.5]))
