"""The stable hashes of :mod:`sparkbalance.hashing` as Spark SQL Column expressions.

The DataFrame path routes rows inside the JVM (no Python UDF), yet it must send every key
to the partition the Python partition functions name, so the planner (Python, on the driver)
and the executors (JVM) agree. This module spells the *same* formula in Spark SQL:

1. canonical bytes with a one-byte tag, built with ``concat`` and a cast to BINARY, for
   every type Spark groups by: integers, boolean, string, binary, float/double, decimal,
   date, timestamp, timestamp_ntz, and structs/arrays of these (their raw hashes fold like
   a Python tuple); a null is the tag ``'n'`` (Python ``None``). The table of encodings is
   in :mod:`sparkbalance.spark.sql.key_encoding`.

2. ``raw = crc32(bytes)`` (``java.util.zip.CRC32`` = zlib's), a BIGINT in ``[0, 2**32)``;
   a multi-column key is the Python tuple of its values and folds as in hashing.py:
   ``r = TUPLE_SEED; r = pmod(r * TUPLE_MUL + raw(e), TUPLE_MOD)``.
3. ``h_i = pmod(raw * A[i] + B[i], P)`` with ``P = 2**61 - 1``, computed exactly in BIGINT
   by the same Mersenne split as the numpy form of :mod:`sparkbalance.hashing`.

ANSI mode (on by default since Spark 4.0) raises on BIGINT overflow, so every intermediate
must stay below ``2**63``. ``A[i]`` is a 61-bit multiplier (a proper Carter-Wegman family,
see :mod:`sparkbalance.hashing`), so ``raw * A[i]`` has up to 93 bits and is never formed:
with ``A = A_hi * 2**31 + A_lo`` (``A_lo < 2**31``, ``A_hi < 2**30``) and ``2**61 = 1 (mod
P)``::

    hi  = raw * A_hi                                   < 2**62
    rot = (shiftleft(hi, 31) & P) + shiftright(hi, 30) = hi * 2**31 (mod P), < 2**61 + 2**32
    lo  = raw * A_lo                                   < 2**63
    lo' = (lo & P) + shiftright(lo, 61)                = lo (mod P), < 2**61 + 4
    h   = pmod(rot + lo' + B, P)                       sum < 3 * 2**61 + 2**33 < 2**63

``shiftleft`` drops the bits past bit 63 without an overflow check (they are ones the mask
drops anyway). Spark's common subexpression elimination computes ``raw`` (and ``hi``) once
per row in generated code. Measured (Spark 4, local[2], 4-5e6 string keys, shared machine):
a projection ``pmod(h_0, 8)`` costs 1.25x the one with the former 30-bit multipliers (+45-65
ns per row; the CRC-32 of the key is ~210-530 ns); ``DECIMAL(31,0)`` arithmetic (exact too,
shorter) cost 6-7x (+1.2-3 us per row). The tuple fold needs no split: ``r *
TUPLE_MUL + raw < 2**32 * 2**31 + 2**32 < 2**63``. The bounds are asserted below and checked
by the tests with extreme raw values. ``pmod`` of non-negative operands equals Python's ``%``.

:func:`raw_sql` and :func:`affine_sql` spell the same formulas as SQL text for the key types
of :data:`~sparkbalance.spark.sql.key_encoding.SQL_TEXT_TYPES`: the route expression is then
parsed by Spark in one driver round trip instead of being built Column by Column.

A null key column hashes as Python's ``None`` (``hashing.RAW_NONE``), so a null key has a
home like any other; the DataFrame adapters may still send null keys to one documented
partition (:func:`any_null`). Map columns (Spark cannot group by them) are refused with a
clear error. Column names may contain dots (``"k.x"``): they name a top-level column.

Examples
--------
>>> # df: a DataFrame with a STRING column "user"
>>> # df.select(stable_hash(df, "user"))  # == [hashing.stable_hash(u) for u in users]
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from sparkbalance.hashing import (GROUP_HASH, HASH_FAMILY_SIZE, P, TUPLE_MOD, TUPLE_MUL, TUPLE_SEED,
                       family_constants)
from sparkbalance.spark.sql import key_encoding as sqlencode

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType

__all__ = [
    "SUPPORTED_TYPES",
    "key_types",
    "check_key_columns",
    "encoded_key",
    "raw_hash",
    "raw_hash_of",
    "affine",
    "stable_hash",
    "hash_family",
    "home_partition",
    "key_group",
    "any_null",
    "column_ref",
    "quoted",
    "raw_sql",
    "affine_sql",
]

#: Spark SQL types a key column may have (names as in ``DataType.simpleString()``), and
#: structs and arrays of them.
SUPPORTED_TYPES = ("tinyint", "smallint", "int", "bigint", "boolean", "string", "binary",
                   "float", "double", "decimal", "date", "timestamp", "timestamp_ntz")

# Overflow guard (ANSI mode): the largest intermediate of each step, in exact Python ints.
_RAW_MAX = (1 << 32) - 1
# Affine step in BIGINT: A = A_hi * 2**31 + A_lo (see the module docstring).
_A, _B = zip(*(family_constants(i) for i in range(HASH_FAMILY_SIZE)))
_A_HI = tuple(a >> 31 for a in _A)
_A_LO = tuple(a & ((1 << 31) - 1) for a in _A)
assert max(_A) < P and max(_B) < P, "family constants must lie in [0, P)"
assert max(_A_HI) * _RAW_MAX < (1 << 62) and max(_A_LO) * _RAW_MAX < (1 << 63), \
    "raw * A_hi / raw * A_lo could overflow a Spark BIGINT"
assert (P + (1 << 32)) + (P + 4) + max(_B) < (1 << 63), "rot + lo' + B could overflow BIGINT"
assert (TUPLE_MOD - 1) * TUPLE_MUL + _RAW_MAX < (1 << 63), "tuple fold could overflow BIGINT"


def _F():
    from pyspark.sql import functions as F
    return F


def _col(df: "DataFrame", name: str) -> "Column":
    if not isinstance(name, str):
        raise TypeError(f"key column {name!r} of type {type(name).__name__}; expected a "
                        "column name (str)")
    if name not in df.columns:
        raise ValueError(f"key column {name!r} not found; expected one of {df.columns}")
    return column_ref(df, name)


def column_ref(df: "DataFrame", name: str) -> "Column":
    """The top-level column called ``name``, also when the name has dots (``"k.x"``).

    ``df["k.x"]`` would read field ``x`` of a struct ``k``; back-quoting names the column.

    Examples
    --------
    >>> # column_ref(df, "k.x")  # == df["`k.x`"]
    """
    return df["`" + name.replace("`", "``") + "`"]


def quoted(name: str) -> str:
    """``name`` as a back-quoted SQL identifier (a top-level column, dots and all).

    Examples
    --------
    >>> quoted("k.x"), quoted("a`b")
    ('`k.x`', '`a``b`')
    """
    return "`" + name.replace("`", "``") + "`"


def key_types(df: "DataFrame", cols: Sequence[str]) -> list["DataType"]:
    """Data types of the key columns ``cols`` of ``df`` (validated, see :data:`SUPPORTED_TYPES`).

    Examples
    --------
    >>> # key_types(spark.range(3), ["id"]) -> [LongType()]
    """
    if not cols:
        raise ValueError("no key columns given; expected at least one column name")
    fields = {f.name: f.dataType for f in df.schema.fields}
    out = []
    for c in cols:
        _col(df, c)
        dt = fields[c]
        if not sqlencode.is_supported(dt):
            raise TypeError(f"key column {c!r} has type {dt.simpleString()}; expected one "
                            f"of {', '.join(SUPPORTED_TYPES)} or a struct/array of them "
                            f"(cast it first, e.g. F.col({c!r}).cast('string'))")
        out.append(dt)
    return out


def check_key_columns(df: "DataFrame", cols: Sequence[str]) -> list[str]:
    """Validate key column names and types; return them as a list."""
    cols = list(cols)
    key_types(df, cols)
    if len(set(cols)) != len(cols):
        raise ValueError(f"key columns {cols} repeat a name; expected distinct columns")
    return cols


def encoded_key(column: "Column", dtype: "DataType") -> "Column":
    """Tagged canonical bytes of one scalar key column (BINARY), as in hashing.py step 1.

    Structs and arrays have no byte form (their raw hash folds the elements): use
    :func:`raw_hash_of`.
    """
    return sqlencode.encoded_scalar(column, dtype)


def raw_hash_of(columns: Sequence["Column"], dtypes: Sequence["DataType"]) -> "Column":
    """Raw 32-bit hash (BIGINT) of a key made of ``columns`` (a tuple when more than one)."""
    F = _F()
    if len(columns) != len(dtypes) or not columns:
        raise ValueError(f"got {len(columns)} columns and {len(dtypes)} types; expected the "
                         "same number, at least one")
    raws = [sqlencode.raw_of(c, t) for c, t in zip(columns, dtypes)]
    if len(raws) == 1:
        return raws[0]
    r = F.lit(TUPLE_SEED)
    for raw in raws:  # the tuple fold of hashing.raw_hash
        r = F.pmod(r * F.lit(TUPLE_MUL) + raw, F.lit(TUPLE_MOD))
    return r


def raw_hash(df: "DataFrame", *cols: str) -> "Column":
    """:func:`sparkbalance.hashing.raw_hash` of the key ``cols`` of ``df`` (BIGINT column).

    Examples
    --------
    >>> # df.select(raw_hash(df, "k")) == [hashing.raw_hash(k) for k in keys]
    """
    cols = check_key_columns(df, cols)
    return raw_hash_of([column_ref(df, c) for c in cols], key_types(df, cols))


def affine(raw: "Column", i: int) -> "Column":
    """``h_i = (raw * A[i] + B[i]) mod P`` (BIGINT), exact and ANSI-safe for raw in [0, 2**32).

    The up-to-93-bit product is split as in the module docstring, so every intermediate
    stays below ``2**63``. ``raw`` appears twice in the expression; Spark's common
    subexpression elimination evaluates it once per row in generated code.

    Examples
    --------
    >>> # a, b = hashing.family_constants(1)
    >>> # df.select(affine(F.col("raw"), 1)) == [(r * a + b) % P for r in raws]
    """
    F = _F()
    if not 0 <= i < HASH_FAMILY_SIZE:
        raise ValueError(f"hash index i={i}; expected 0 <= i < {HASH_FAMILY_SIZE}")
    p = F.lit(P)
    hi = raw * F.lit(_A_HI[i])
    rot = F.shiftleft(hi, 31).bitwiseAND(p) + F.shiftright(hi, 30)
    lo = raw * F.lit(_A_LO[i])
    lo = lo.bitwiseAND(p) + F.shiftright(lo, 61)
    return F.pmod(rot + lo + F.lit(_B[i]), p)


def hash_family(df: "DataFrame", cols: Sequence[str] | str, i: int) -> "Column":
    """:func:`sparkbalance.hashing.hash_family` of key ``cols``: the i-th hash (BIGINT)."""
    cols = [cols] if isinstance(cols, str) else list(cols)
    return affine(raw_hash(df, *cols), i)


def stable_hash(df: "DataFrame", *cols: str) -> "Column":
    """:func:`sparkbalance.hashing.stable_hash` of key ``cols`` (BIGINT in ``[0, P)``).

    Examples
    --------
    >>> # df.select(stable_hash(df, "k", "day"))  # key = the tuple (k, day)
    """
    return hash_family(df, cols, 0)


def _check_count(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}={value!r}; expected an int >= 1")
    if value >= 1 << 31:
        raise ValueError(f"{name}={value}; expected < 2**31 (a Spark INT)")
    return value


def home_partition(df: "DataFrame", cols: Sequence[str] | str, num_partitions: int
                   ) -> "Column":
    """:func:`sparkbalance.routing.home_partition`: ``stable_hash mod n`` as an INT column."""
    n = _check_count(num_partitions, "num_partitions")
    return _F().pmod(hash_family(df, cols, 0), _F().lit(n)).cast("int")


def key_group(df: "DataFrame", cols: Sequence[str] | str, num_groups: int) -> "Column":
    """:func:`sparkbalance.routing.key_group`: ``h_1 mod m`` as an INT column."""
    m = _check_count(num_groups, "num_groups")
    return _F().pmod(hash_family(df, cols, GROUP_HASH), _F().lit(m)).cast("int")


def any_null(df: "DataFrame", cols: Sequence[str]) -> "Column":
    """True where any key column is null (such keys cannot be hashed)."""
    cond = None
    for c in cols:
        e = _col(df, c).isNull()
        cond = e if cond is None else (cond | e)
    return cond


def raw_sql(refs: Sequence[str], dtypes: Sequence["DataType"]) -> str | None:
    """:func:`raw_hash_of` as SQL text over column references ``refs``, or None when a key
    type has no text spelling (:data:`~sparkbalance.spark.sql.key_encoding.SQL_TEXT_TYPES`).

    Examples
    --------
    >>> from pyspark.sql.types import LongType                    # doctest: +SKIP
    >>> raw_sql(["`k`"], [LongType()]).startswith("crc32(")       # doctest: +SKIP
    True
    """
    if len(refs) != len(dtypes) or not refs:
        raise ValueError(f"got {len(refs)} columns and {len(dtypes)} types; expected the "
                         "same number, at least one")
    raws = []
    for ref, t in zip(refs, dtypes):
        enc = sqlencode.encoded_sql(ref, t)
        if enc is None:
            return None
        raws.append(f"crc32({enc})")
    if len(raws) == 1:
        return raws[0]
    r = f"{TUPLE_SEED}L"
    for raw in raws:  # the tuple fold of hashing.raw_hash, in BIGINT
        r = f"pmod({r} * {TUPLE_MUL}L + {raw}, {TUPLE_MOD}L)"
    return r


def affine_sql(raw: str, i: int) -> str:
    """:func:`affine` as SQL text: ``h_i`` of the BIGINT raw hash expression ``raw``, by the
    same split of the multiplier (every intermediate below ``2**63``).

    Examples
    --------
    >>> affine_sql("r", 0).startswith("pmod(")
    True
    """
    if not 0 <= i < HASH_FAMILY_SIZE:
        raise ValueError(f"hash index i={i}; expected 0 <= i < {HASH_FAMILY_SIZE}")
    p = f"{P}L"
    hi = f"({raw} * {_A_HI[i]}L)"
    lo = f"({raw} * {_A_LO[i]}L)"
    rot = f"((shiftleft({hi}, 31) & {p}) + shiftright({hi}, 30))"
    low = f"(({lo} & {p}) + shiftright({lo}, 61))"
    return f"pmod({rot} + {low} + {_B[i]}L, {p})"
