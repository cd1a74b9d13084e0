"""Stable key hashes shared by the driver (planning) and the executors (routing).

Python's ``hash`` is salted per process (``PYTHONHASHSEED``), so the driver and the
executors would disagree on where a string key lives. Every partition function of
sparkbalance therefore routes with the hashes defined here, which depend on the key alone.

Definition (one formula, three implementations: scalar Python, numpy, Spark SQL)
-------------------------------------------------------------------------------
1. *Canonical bytes* with a one-byte type tag, so that keys that are equal in Python
   (``1 == 1.0 == True``) hash equally and keys that differ (``1`` vs ``"1"``) do not::

       int, bool, integral float  -> b"i" + decimal ASCII digits      (e.g. b"i-42")
       str                        -> b"s" + UTF-8 bytes
       bytes / bytearray          -> b"b" + the bytes
       other float (finite, inf)  -> b"f" + IEEE-754 little-endian double
       NaN (any payload)          -> b"f" + the bytes of the one quiet NaN (Spark's
                                     normalisation: every NaN is one group)
       None                       -> b"n"  (plain PySpark groups None keys together;
                                     a null key column of a DataFrame hashes the same)
       Decimal, integral          -> as int (Decimal(2) == 2)
       Decimal, exactly a double  -> as that float (Decimal("0.5") == 0.5)
       other Decimal              -> b"d" + plain digits, trailing zeros dropped
       datetime.date              -> b"D" + days since 1970-01-01 (decimal digits)
       datetime.datetime, naive   -> b"T" + microseconds of its wall clock since
                                     1970-01-01 00:00 (time-zone free, as Spark's
                                     TIMESTAMP_NTZ; a TIMESTAMP column collected by
                                     PySpark is a naive wall-clock datetime as well)
       datetime.datetime, aware   -> b"Z" + microseconds since the epoch (UTC instant)
       datetime.time              -> b"t" + microseconds since midnight (aware: minus
                                     its UTC offset)
       datetime.timedelta         -> b"e" + total microseconds
       list                       -> as the tuple of its elements (an ARRAY key column
                                     collects as a list; Spark groups arrays by value)

2. *Raw hash* ``raw(k)`` in ``[0, 2**32)``: CRC-32 (zlib / ``java.util.zip.CRC32``) of those
   bytes. A tuple folds its elements: ``r = TUPLE_SEED; r = (r * TUPLE_MUL + raw(e)) % TUPLE_MOD``.
3. *Family member* ``i``: ``h_i(k) = (raw(k) * A[i] + B[i]) % P`` with ``P = 2**61 - 1``
   (Carter & Wegman's universal family modulo a Mersenne prime). ``stable_hash = h_0``.
   ``A[i]`` is uniform in ``[1, P)`` and ``B[i]`` in ``[0, P)`` (fixed constants, drawn once
   with :data:`FAMILY_SEED`, see ``_A``), so ``raw * A[i]`` has up to 93 bits and the
   reduction mod ``P`` folds its high bits into the low ones: ``h_i mod n`` depends on all
   of ``raw``, and ``h_0 mod n``, ``h_1 mod n``, ... behave as independent hashes.

   Why not small multipliers: with ``A[i] < 2**30`` (the first version) ``raw * A[i] + B[i]
   < 2**62 + 2**61``, so the reduction subtracted ``P`` at most twice and ``h_i mod n`` was a
   function of ``raw mod n`` and that 0-2 count: ``(h_0 mod n, h_1 mod n)`` took about
   ``2 n`` of the ``n**2`` pairs, key groups were tied to the home partition and the second
   choice of PKG / D-Choices / TAG to the first.

   Exactness everywhere: Python ints are exact; numpy (``uint64``) and Spark SQL (signed
   ``BIGINT``, ANSI mode) never form the 93-bit product: they split ``A = A_hi * 2**31 +
   A_lo`` and multiply ``raw * A_hi`` by ``2**31`` with shifts and a mask, since ``2**61 = 1
   (mod P)`` (see :func:`_affine_array`).

In Spark SQL the raw hash of a string column ``k`` is ``crc32(concat(X'73', encode(k,
'UTF-8')))`` and of an integral column ``crc32(concat(X'69', encode(cast(k as string),
'UTF-8')))``; the affine step is spelled out in :mod:`sparkbalance.spark.sql.hash_columns`.

Examples
--------
>>> stable_hash("user-17") == stable_hash("user-17")
True
>>> stable_hash(1) == stable_hash(1.0) == stable_hash(True)
True
"""
from __future__ import annotations

import math
import struct
import zlib
import datetime as _dt
from decimal import Decimal
from typing import Any, Iterable

import numpy as np

from .intcrc import BLOCK, int_crc32_array

__all__ = [
    "P",
    "FAMILY_SEED",
    "HASH_FAMILY_SIZE",
    "GROUP_HASH",
    "family_constants",
    "raw_hash",
    "stable_hash",
    "hash_family",
    "raw_hash_array",
    "stable_hash_array",
    "hash_family_array",
    "validate_key",
    "RAW_NONE",
    "NAN_BYTES",
]

#: Mersenne prime modulus of the final affine step.
P: int = (1 << 61) - 1
#: Seed that drew the family constants: ``rng = random.Random(FAMILY_SEED)``, then
#: ``A = [rng.randrange(1, P) for _ in range(8)]``, then ``B = [rng.randrange(P) for _ in
#: range(8)]`` (checked by tests/unit/test_hashing_independence.py). Changing them moves
#: every key to another partition: existing routing tables and keyed state become invalid.
FAMILY_SEED: int = 20261121
# Multipliers uniform in [1, P), offsets uniform in [0, P): a Carter-Wegman family mod P.
_A: tuple[int, ...] = (
    0x10DB_8507_F048_0FFA, 0x08FD_5413_2CB6_916E, 0x1942_30F0_5939_42A5, 0x02A1_3761_9BF1_3332,
    0x025C_378E_5667_0B15, 0x1EBD_8A5D_0108_8476, 0x0521_280D_2E41_6789, 0x0B37_4361_5C90_6159,
)
_B: tuple[int, ...] = (
    0x0541_2BDD_2BB2_9976, 0x0BA6_5FCC_985F_B4E7, 0x0B3C_5A2A_64C7_A500, 0x1343_C816_5815_1A99,
    0x03B1_49D5_E693_AE2D, 0x0D16_95DE_3EAA_BE17, 0x027C_F07C_EB04_B39B, 0x0285_906C_7806_8577,
)
#: Number of independent hash functions available to choices-based partitioners.
HASH_FAMILY_SIZE: int = len(_A)
_A0, _B0 = _A[0], _B[0]  # stable_hash is the hot path: no tuple indexing per call
#: Family member of key groups (``key_group = h_1 mod m``): independent of the home hash
#: ``h_0``, so key groups and hash partitions are not aligned.
GROUP_HASH: int = 1


def family_constants(i: int) -> tuple[int, int]:
    """``(A[i], B[i])`` of family member ``h_i = (raw * A[i] + B[i]) mod P``.

    For code that spells the affine step in another language (the Spark SQL form in
    :mod:`sparkbalance.spark.sql.hash_columns`); Python callers use :func:`hash_family`.

    Examples
    --------
    >>> a, b = family_constants(0)
    >>> (raw_hash("k") * a + b) % P == stable_hash("k")
    True
    """
    if not 0 <= i < HASH_FAMILY_SIZE:
        raise ValueError(f"hash index i={i}; expected 0 <= i < {HASH_FAMILY_SIZE}")
    return _A[i], _B[i]

# Tuple folding: a prime just below 2**32 and a multiplier < 2**31 (r * M + raw < 2**63).
TUPLE_MOD: int = (1 << 32) - 5
TUPLE_MUL: int = 0x5BD1_E995
TUPLE_SEED: int = zlib.crc32(b"t")

_SEED_INT = zlib.crc32(b"i")
_SEED_STR = zlib.crc32(b"s")
_SEED_BYTES = zlib.crc32(b"b")
_SEED_FLOAT = zlib.crc32(b"f")
_crc32 = zlib.crc32
#: Raw hash of None (a null key): CRC-32 of the tag alone.
RAW_NONE: int = zlib.crc32(b"n")
#: Canonical bytes of NaN: Spark normalises every NaN to this quiet NaN before grouping.
NAN_BYTES: bytes = struct.pack("<d", float("nan"))
_RAW_NAN = _crc32(NAN_BYTES, _SEED_FLOAT)
_EPOCH_DAY = _dt.date(1970, 1, 1).toordinal()
_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_US = _dt.timedelta(microseconds=1)

_SUPPORTED = ("None, int, str, bytes, float, bool, Decimal, date, datetime, time, "
              "timedelta, or tuples/lists of these")


def _unsupported(key: Any) -> Exception:
    kind = type(key).__name__
    return TypeError(f"key {key!r:.60} of type {kind} cannot be routed; expected {_SUPPORTED}")


def _raw_float(key: float) -> int:
    if key != key:  # every NaN is one key, as in Spark's grouping (NormalizeFloatingNumbers)
        return _RAW_NAN
    if math.isfinite(key) and key.is_integer():  # also -0.0 -> b"i0", as Spark's 0.0
        return _crc32(b"%d" % int(key), _SEED_INT)
    return _crc32(struct.pack("<d", key), _SEED_FLOAT)


def _raw_decimal(key: Decimal) -> int:
    # Keys equal in Python hash equally: Decimal(2) == 2 and Decimal("0.5") == 0.5.
    if not key.is_finite():
        return _raw_float(float(key))  # Decimal("NaN") / ("Infinity") as the float ones
    if key == key.to_integral_value():
        return _crc32(b"%d" % int(key), _SEED_INT)
    f = float(key)
    if Decimal(f) == key:
        return _crc32(struct.pack("<d", f), _SEED_FLOAT)
    # Plain digits without trailing zeros; not key.normalize(), which rounds to the
    # context's 28 digits (DECIMAL(38) keys have up to 38).
    text = format(key, "f").rstrip("0").rstrip(".")
    return _crc32(b"d" + text.encode("ascii"))


def _raw_temporal(key: Any) -> int:
    if isinstance(key, _dt.datetime):
        if key.tzinfo is None or key.utcoffset() is None:
            return _crc32(b"T%d" % ((key - _EPOCH) // _US))
        return _crc32(b"Z%d" % ((key - _EPOCH_UTC) // _US))
    if isinstance(key, _dt.date):
        return _crc32(b"D%d" % (key.toordinal() - _EPOCH_DAY))
    if isinstance(key, _dt.time):
        us = ((key.hour * 60 + key.minute) * 60 + key.second) * 1_000_000 + key.microsecond
        off = key.utcoffset()
        if off is not None:  # aware times compare by their UTC time
            us -= off // _US
        return _crc32(b"t%d" % us)
    return _crc32(b"e%d" % (key // _US))  # timedelta


def raw_hash(key: Any) -> int:
    """Return the 32-bit raw hash of ``key`` (CRC-32 of its tagged canonical bytes).

    Raises
    ------
    TypeError
        ``key`` is of an unsupported type (a dict, a set, an arbitrary object).

    Examples
    --------
    >>> raw_hash("a") == __import__("zlib").crc32(b"sa")
    True
    """
    t = type(key)
    if t is str:
        return _crc32(key.encode("utf-8", "surrogatepass"), _SEED_STR)
    if t is int:
        return _crc32(b"%d" % key, _SEED_INT)
    if t is tuple:
        r = TUPLE_SEED
        for e in key:
            r = (r * TUPLE_MUL + raw_hash(e)) % TUPLE_MOD
        return r
    if t is float:
        return _raw_float(key)
    # Slower, rarer cases: subclasses and numpy scalars.
    if isinstance(key, (bool, np.bool_)):
        return _crc32(b"1" if key else b"0", _SEED_INT)
    if isinstance(key, (int, np.integer)):
        return _crc32(b"%d" % int(key), _SEED_INT)
    if isinstance(key, str):
        return _crc32(str(key).encode("utf-8", "surrogatepass"), _SEED_STR)
    if isinstance(key, (bytes, bytearray, memoryview)):
        return _crc32(bytes(key), _SEED_BYTES)
    if isinstance(key, (float, np.floating)):
        return _raw_float(float(key))
    if key is None:
        return RAW_NONE
    if isinstance(key, Decimal):
        return _raw_decimal(key)
    if isinstance(key, (_dt.date, _dt.time, _dt.timedelta)):
        return _raw_temporal(key)
    if isinstance(key, (tuple, list)):  # Row (a tuple) = STRUCT key; list = ARRAY key
        r = TUPLE_SEED
        for e in key:
            r = (r * TUPLE_MUL + raw_hash(e)) % TUPLE_MOD
        return r
    raise _unsupported(key)


def stable_hash(key: Any) -> int:
    """Return ``h_0(key)`` in ``[0, P)``, identical in every process and Python version.

    Examples
    --------
    >>> 0 <= stable_hash(("user", 7)) < P
    True
    """
    # The two common key types inline raw_hash (one call less: ~15% of the per-key cost,
    # which pays for the 93-bit product of the 61-bit multipliers); the same bytes as raw_hash.
    t = type(key)
    if t is str:
        return (_crc32(key.encode("utf-8", "surrogatepass"), _SEED_STR) * _A0 + _B0) % P
    if t is int:
        return (_crc32(b"%d" % key, _SEED_INT) * _A0 + _B0) % P
    return (raw_hash(key) * _A0 + _B0) % P


def hash_family(key: Any, i: int) -> int:
    """Return the ``i``-th independent hash ``h_i(key)`` (``hash_family(k, 0) == stable_hash(k)``).

    Examples
    --------
    >>> hash_family("x", 0) == stable_hash("x")
    True
    """
    if not 0 <= i < HASH_FAMILY_SIZE:
        raise ValueError(f"hash index i={i}; expected 0 <= i < {HASH_FAMILY_SIZE}")
    return (raw_hash(key) * _A[i] + _B[i]) % P


def validate_key(key: Any) -> None:
    """Raise the same clear error :func:`stable_hash` would, or return None for a valid key."""
    raw_hash(key)


# ---------------------------------------------------------------------------------------
# Array form: identical values. Integer arrays: CRC-32 column-wise from its linearity
# (:mod:`sparkbalance.intcrc`, 0.03 s per 10**6 keys against 0.45 s through ``tolist`` and
# zlib per key); other keys: zlib's C CRC-32 per key, which measured faster than a byte-wise
# numpy CRC table (0.15-0.2 s vs 0.5 s per 10**6 keys). The affine step is vectorised.
# ---------------------------------------------------------------------------------------
def raw_hash_array(keys: Iterable[Any] | np.ndarray) -> np.ndarray:
    """Vectorised :func:`raw_hash`: a ``uint64`` array, equal element-wise to the scalar form.

    Examples
    --------
    >>> import numpy as np
    >>> list(raw_hash_array(np.array([1, 2]))) == [raw_hash(1), raw_hash(2)]
    True
    """
    if isinstance(keys, np.ndarray):
        if keys.ndim != 1:
            raise ValueError(f"keys must be a 1-D array; got shape {keys.shape}")
        if keys.dtype.kind in "iub":
            return int_crc32_array(keys)
        items = keys.tolist()  # numpy scalars -> Python int/str/float/bytes
    else:
        items = list(keys)
    return np.fromiter(map(raw_hash, items), dtype=np.uint64, count=len(items))


def hash_family_array(keys: Iterable[Any] | np.ndarray, i: int) -> np.ndarray:
    """Vectorised :func:`hash_family`: ``uint64`` array of ``h_i`` for every key.

    Examples
    --------
    >>> import numpy as np
    >>> int(hash_family_array(np.array(["a"]), 2)[0]) == hash_family("a", 2)
    True
    """
    if not 0 <= i < HASH_FAMILY_SIZE:
        raise ValueError(f"hash index i={i}; expected 0 <= i < {HASH_FAMILY_SIZE}")
    if isinstance(keys, np.ndarray) and keys.ndim == 1 and keys.dtype.kind in "iub":
        # CRC and affine step block by block: one output array, no raw-hash array
        return int_crc32_array(keys, then=lambda raw: _affine_block(raw, i))
    return _affine_array(raw_hash_array(keys), i)


# A[i] = A_hi * 2**31 + A_lo with A_lo < 2**31 and A_hi < 2**30 (A < 2**61).
_A_HI = tuple(np.uint64(a >> 31) for a in _A)
_A_LO = tuple(np.uint64(a & ((1 << 31) - 1)) for a in _A)
_B_U64 = tuple(np.uint64(b) for b in _B)
_P_U64 = np.uint64(P)
_S30, _S31 = np.uint64(30), np.uint64(31)


def _affine_array(raw: np.ndarray, i: int) -> np.ndarray:
    """:func:`_affine_block` over blocks of :data:`~sparkbalance.intcrc.BLOCK` keys: its
    temporaries, whole-array, were 400 MB of fresh pages at 10^7 keys."""
    out = np.empty(raw.shape[0], dtype=np.uint64)
    for s in range(0, raw.shape[0], BLOCK):
        out[s:s + BLOCK] = _affine_block(raw[s:s + BLOCK], i)
    return out


def _affine_block(raw: np.ndarray, i: int) -> np.ndarray:
    """``(raw * A[i] + B[i]) % P`` exactly, for a ``uint64`` array ``raw < 2**32``.

    The product has up to 93 bits, so it is never formed: ``raw * A = raw * A_hi * 2**31 +
    raw * A_lo`` with ``hi = raw * A_hi < 2**62`` and ``raw * A_lo < 2**63``. Modulo the
    Mersenne prime ``P = 2**61 - 1``, ``2**61 = 1``, so ``hi * 2**31 = (hi mod 2**30) * 2**31
    + (hi >> 30) * 2**61 = ((hi << 31) & P) + (hi >> 30)  (mod P)``: ``rot < 2**61 + 2**32``
    (the bits shifted past bit 63 are ones the mask drops anyway). The sum ``raw * A_lo +
    rot + B < 2**63 + 2**62 + 2**32`` fits in ``uint64``; one ``% P`` at the end.

    Examples
    --------
    >>> int(_affine_block(np.array([2**32 - 1], dtype=np.uint64), 3)[0]) == (
    ...     ((2**32 - 1) * _A[3] + _B[3]) % P)
    True
    """
    hi = raw * _A_HI[i]
    rot = (hi << _S31) & _P_U64
    hi >>= _S30
    rot += hi
    out = raw * _A_LO[i]
    out += rot
    out += _B_U64[i]
    out %= _P_U64
    return out


def stable_hash_array(keys: Iterable[Any] | np.ndarray) -> np.ndarray:
    """Vectorised :func:`stable_hash` (``uint64``), identical to the scalar form per key.

    Examples
    --------
    >>> import numpy as np
    >>> int(stable_hash_array(np.array(["a", "bc"]))[1]) == stable_hash("bc")
    True
    """
    return hash_family_array(keys, 0)
