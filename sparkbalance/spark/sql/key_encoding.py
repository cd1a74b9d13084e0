"""Raw key hashes of every groupable Spark SQL type, spelled as Column expressions (no UDF).

:mod:`sparkbalance.hashing` defines the canonical bytes of each Python key type; PySpark
collects a column of type ``T`` as a Python value ``v``, and this module computes, inside the
JVM, the raw hash ``hashing.raw_hash(v)`` of that value, so planner (Python) and executors
(SQL) agree on every key:

=====================  ==================  =================================================
SQL type               Python value        SQL canonical bytes
=====================  ==================  =================================================
tinyint..bigint        int                 ``'i' || cast(k as string)``
boolean                bool                ``'i1'`` / ``'i0'``
string / binary        str / bytes         ``'s' || k`` / ``X'62' || k``
float / double         float               integral: as the int (``-0.0`` -> ``'i0'``, as
                                           Spark's normalisation); NaN: the one quiet NaN;
                                           else ``'f'`` + IEEE-754 bytes, assembled from
                                           the exponent and mantissa (below)
decimal(p, s)          Decimal             integral: as the int; exactly a double: as that
                                           float; else ``'d'`` + plain digits without
                                           trailing zeros
date                   date                ``'D'`` + days since 1970-01-01
timestamp(_ntz)        naive datetime      ``'T'`` + wall-clock microseconds since 1970-01-01
struct / array         Row (tuple) / list  the tuple fold of the fields' / elements' raws
null (any type)        None                ``'n'``
=====================  ==================  =================================================

A ``timestamp`` (with local time zone) column is collected by PySpark as a naive datetime of
its wall clock in the driver's time zone; the SQL form reads the wall clock in the session
time zone (``spark.sql.session.timeZone``), so the two agree when that is the driver's zone
(the default: both are the JVM's/OS's zone). When they differ, routing in SQL stays a
function of the key (every row of a key still meets in one partition), only the planner's
picture of the load is off.

IEEE-754 bytes without a UDF: for a non-integral finite ``x``, ``e = floor(log2 |x|)``
(corrected by one where ``log2`` rounds), the mantissa ``|x| * 2**-e * 2**52`` (exact:
scaling by powers of two) and the biased exponent give the 63 low bits; the sign adds 128 to
the last byte; the eight bytes are spelled little-endian as hex and ``unhex``-ed.
Subnormals (``e < -1022``) take exponent 0 and mantissa ``|x| * 2**1074``.

Limits, stated: integral doubles with ``|x| >= 2**126`` and dyadic decimals whose odd part
exceeds 53 bits are hashed by their IEEE bytes / digits in SQL while Python uses their
integer digits / float bytes; routing stays correct (a function of the key), the planner may
misjudge those keys' placement.

Python values as SQL values of a key column (routing-table literals) are the sibling module
:mod:`sparkbalance.spark.sql.literals`: a type added here needs its literal there.

Examples
--------
>>> # df.select(raw_of(df["price"], DecimalType(10, 2)))  # == hashing.raw_hash(Decimal(...))
"""
from __future__ import annotations

import struct
from decimal import Decimal
from typing import TYPE_CHECKING

from sparkbalance.hashing import NAN_BYTES, RAW_NONE, TUPLE_MOD, TUPLE_MUL, TUPLE_SEED

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column
    from pyspark.sql.types import DataType

__all__ = ["SCALAR_TYPES", "SQL_TEXT_TYPES", "is_supported", "encoded_scalar", "raw_of",
           "encoded_sql"]

#: Scalar type names (``DataType.typeName()``) with a canonical encoding.
SCALAR_TYPES = ("byte", "short", "integer", "long", "boolean", "string", "binary", "float",
                "double", "decimal", "date", "timestamp", "timestamp_ntz")
_INTEGRAL = ("byte", "short", "integer", "long")
#: Scalar types whose canonical bytes :func:`encoded_sql` spells as SQL text (the others,
#: whose encodings take dozens of functions, are built as Columns).
SQL_TEXT_TYPES = _INTEGRAL + ("boolean", "string", "binary", "date")
_TWO63 = float(2 ** 63)
_TWO126 = float(2 ** 126)
_US_PER_DAY = 86_400_000_000


def _F():
    from pyspark.sql import functions as F
    return F


def is_supported(dtype: "DataType") -> bool:
    """True for a scalar of :data:`SCALAR_TYPES` or a struct/array of supported types."""
    from pyspark.sql.types import ArrayType, StructType
    if isinstance(dtype, StructType):
        return all(is_supported(f.dataType) for f in dtype.fields)
    if isinstance(dtype, ArrayType):
        return is_supported(dtype.elementType)
    return dtype.typeName() in SCALAR_TYPES


def _bytes_lit(b: bytes) -> "Column":
    return _F().lit(b).cast("binary")


def _int_text(c: "Column") -> "Column":
    return _F().concat(_F().lit("i"), c.cast("string")).cast("binary")


def _ieee_bytes(x: "Column") -> "Column":
    """``b"f" + struct.pack("<d", x)`` for a finite, non-integral DOUBLE ``x`` (nonzero)."""
    F = _F()
    ax = F.abs(x)
    e0 = F.floor(F.log2(ax)).cast("int")
    e = (F.when(ax < F.pow(F.lit(2.0), e0), e0 - 1)
         .when(ax >= F.pow(F.lit(2.0), e0 + 1), e0 + 1).otherwise(e0))
    two52 = F.lit(float(2 ** 52))
    normal = e >= -1022
    frac = F.when(normal, (ax * F.pow(F.lit(2.0), -e) * two52).cast("bigint")
                  - F.lit(2 ** 52)).otherwise((ax * F.lit(2.0 ** 1022) * two52).cast("bigint"))
    expo = F.when(normal, e + 1023).otherwise(F.lit(0)).cast("bigint")
    low63 = F.shiftleft(expo, 52) + frac  # < 2**63: exponent <= 2046
    # The sign bit makes it the double's 64 bits as a signed bigint (no overflow: low63 <
    # 2**63), spelled once: hex() of a negative bigint is its two's complement. Cutting the
    # bytes out of ``low63`` one by one repeated its whole tree eight times, and the
    # analysed expression of a DOUBLE key grew to ~140,000 characters.
    bits = low63 + F.when(x < 0, F.lit(-(2 ** 63))).otherwise(F.lit(0))
    little = F.array_join(F.reverse(F.regexp_extract_all(F.lpad(F.hex(bits), 16, "0"),
                                                         F.lit("(..)"), F.lit(1))), "")
    return F.unhex(F.concat(F.lit("66"), little))  # 'f' + struct.pack("<d", x)


def _double_bytes(x: "Column") -> "Column":
    """Canonical bytes of a DOUBLE as :func:`hashing.raw_hash` of the Python float."""
    F = _F()
    ax = F.abs(x)
    integral = (x % F.lit(1.0)) == F.lit(0.0)  # False for NaN and +-inf
    # |x| >= 2**63: exact digits of mant * 2**k (k >= 11) in DECIMAL(38,0), up to 2**126.
    e = F.floor(F.log2(ax)).cast("int")
    e = F.when(ax < F.pow(F.lit(2.0), e), e - 1).otherwise(e)
    mant = (x * F.pow(F.lit(2.0), F.lit(52) - e)).cast("bigint").cast("decimal(38,0)")
    k = e - 52
    k1 = F.least(k, F.lit(62))
    one = F.lit(1).cast("bigint")  # F.shiftleft takes a constant shift only
    p1 = F.call_function("shiftleft", one, k1).cast("decimal(38,0)")
    p2 = F.call_function("shiftleft", one, k - k1).cast("decimal(38,0)")
    huge_digits = (mant * p1 * p2).cast("decimal(38,0)").cast("string")
    return (F.when(x.isNull(), _bytes_lit(b"n"))
            .when(F.isnan(x), _bytes_lit(b"f" + NAN_BYTES))
            .when(x == F.lit(float("inf")), _bytes_lit(b"f" + struct.pack("<d", float("inf"))))
            .when(x == F.lit(float("-inf")), _bytes_lit(b"f" + struct.pack("<d", float("-inf"))))
            .when(integral & (ax < F.lit(_TWO63)), _int_text(x.cast("bigint")))
            .when(integral & (ax < F.lit(_TWO126)),
                  F.concat(F.lit("i"), huge_digits).cast("binary"))
            .otherwise(_ieee_bytes(x)))


def _plain_decimal_text(a: "Column") -> "Column":
    """Plain digits of a non-negative DECIMAL column in every SQL mode ("0.0000001").

    In ANSI mode (Spark 4's default) a decimal casts to its plain string; outside it (Spark
    3.5's default, or ``spark.sql.ansi.enabled=false`` on 4.x) by Java's
    ``BigDecimal.toString``, which is scientific below 1E-6 ("1E-37", a zero of scale 9
    "0E-9"). That text is rewritten here as "0." and the mantissa's digits left-padded to
    the value's scale (mantissa fraction digits minus the exponent), so both modes hash a
    DECIMAL(38,37) ``1E-37`` or a DECIMAL(10,9) zero as Python does.
    """
    F = _F()
    text = a.cast("string")
    mant = F.substring_index(text, "E", 1)                  # "1.00", "1", "0"
    exp = F.substring_index(text, "E", -1).cast("int")      # -37 (at most -7)
    digits = F.regexp_replace(mant, "[.]", "")
    mant_scale = F.when(F.instr(mant, ".") > 0,
                        F.length(F.substring_index(mant, ".", -1))).otherwise(F.lit(0))
    # call_function: PySpark 3.5's F.lpad takes only an int length, not a Column
    fixed = F.concat(F.lit("0."), F.call_function("lpad", digits, mant_scale - exp, F.lit("0")))
    return F.when(F.instr(text, "E") > 0, fixed).otherwise(text)


def _decimal_bytes(c: "Column", precision: int, scale: int) -> "Column":
    """Canonical bytes of a DECIMAL(p, s) as :func:`hashing.raw_hash` of the Decimal."""
    F = _F()
    if scale <= 0:
        return F.when(c.isNull(), _bytes_lit(b"n")).otherwise(_int_text(c))
    # Plain digits, scale s kept ("0.50"); no arithmetic: c * 10**s would overflow
    # DECIMAL(38) for large scales.
    plain = _plain_decimal_text(F.abs(c))
    ip = F.substring_index(plain, ".", 1)           # no leading zeros but a lone "0"
    fr = F.regexp_replace(F.substring_index(plain, ".", -1), "0+$", "")
    integral = F.length(fr) == 0
    sign = F.when(c < 0, F.lit("-")).otherwise(F.lit(""))
    text = F.concat(F.lit("d"), sign, ip, F.lit("."), fr)
    # Exactly a double iff the reduced numerator m' = ip||fr (scale s' = len(fr)) is a
    # multiple of 5**s' (then d = N / 2**s' with N = m' / 5**s' odd) and N < 2**53.
    s2 = F.length(fr)
    m2 = F.concat(ip, fr).cast("decimal(38,0)")
    pow5 = F.element_at(F.array(*[F.lit(Decimal(5 ** i)).cast("decimal(38,0)")
                                  for i in range(scale + 1)]), s2 + 1)
    limit = F.element_at(F.array(*[F.lit(Decimal(min(5 ** i * 2 ** 53, 10 ** 38 - 1)))
                                   .cast("decimal(38,0)") for i in range(scale + 1)]), s2 + 1)
    dyadic = ((m2 % pow5) == 0) & (m2 < limit)
    return (F.when(c.isNull(), _bytes_lit(b"n"))
            .when(integral, F.concat(F.lit("i"), sign, ip).cast("binary"))
            .when(dyadic, _ieee_bytes(c.cast("double")))
            .otherwise(text.cast("binary")))


def _wall_micros(t: "Column") -> "Column":
    """Wall-clock microseconds since 1970-01-01 00:00 of a TIMESTAMP(_NTZ) (session zone)."""
    F = _F()
    day = F.unix_date(t.cast("date")).cast("bigint")
    hm = (F.hour(t) * 60 + F.minute(t)).cast("bigint")
    sec_us = (F.date_part(F.lit("SECOND"), t) * F.lit(1_000_000)).cast("bigint")
    return day * F.lit(_US_PER_DAY) + hm * F.lit(60_000_000) + sec_us


def encoded_scalar(c: "Column", dtype: "DataType") -> "Column":
    """Canonical bytes (BINARY) of a scalar key column; ``b"n"`` where it is null.

    Examples
    --------
    >>> # df.select(F.crc32(encoded_scalar(df["d"], DateType())))  # == raw_hash(date)
    """
    F = _F()
    name = dtype.typeName()
    null = _bytes_lit(b"n")
    if name in _INTEGRAL:
        enc = _int_text(c)
    elif name == "boolean":
        enc = F.when(c, _bytes_lit(b"i1")).otherwise(_bytes_lit(b"i0"))
    elif name == "string":
        enc = F.concat(F.lit("s"), c).cast("binary")
    elif name == "binary":
        enc = F.concat(_bytes_lit(b"b"), c)
    elif name in ("float", "double"):
        return _double_bytes(c.cast("double"))
    elif name == "decimal":
        return _decimal_bytes(c, dtype.precision, dtype.scale)
    elif name == "date":
        enc = F.concat(F.lit("D"), F.unix_date(c).cast("string")).cast("binary")
    elif name in ("timestamp", "timestamp_ntz"):
        enc = F.concat(F.lit("T"), _wall_micros(c).cast("string")).cast("binary")
    else:
        raise TypeError(f"key type {dtype.simpleString()}; expected one of "
                        f"{', '.join(SCALAR_TYPES)} or a struct/array of them")
    return F.when(c.isNull(), null).otherwise(enc)


def raw_of(c: "Column", dtype: "DataType") -> "Column":
    """Raw hash (BIGINT in ``[0, 2**32)``) of one key column of any supported type.

    Structs fold their fields and arrays their elements like a Python tuple (a collected
    STRUCT is a Row, a tuple; an ARRAY a list, hashed as the tuple of its elements).

    Examples
    --------
    >>> # df.select(raw_of(df["s"], df.schema["s"].dataType))  # == hashing.raw_hash(row.s)
    """
    from pyspark.sql.types import ArrayType, StructType
    F = _F()
    fold_seed = F.lit(TUPLE_SEED).cast("bigint")
    if isinstance(dtype, StructType):
        r = fold_seed
        for f in dtype.fields:
            r = F.pmod(r * F.lit(TUPLE_MUL) + raw_of(c.getField(f.name), f.dataType),
                       F.lit(TUPLE_MOD))
        return F.when(c.isNull(), F.lit(RAW_NONE).cast("bigint")).otherwise(r)
    if isinstance(dtype, ArrayType):
        elem = dtype.elementType
        folded = F.aggregate(c, fold_seed, lambda acc, x: F.pmod(
            acc * F.lit(TUPLE_MUL) + raw_of(x, elem), F.lit(TUPLE_MOD)))
        return F.when(c.isNull(), F.lit(RAW_NONE).cast("bigint")).otherwise(folded)
    return F.crc32(encoded_scalar(c, dtype))


def encoded_sql(ref: str, dtype: "DataType") -> str | None:
    """:func:`encoded_scalar` as SQL text over the column reference ``ref`` (a back-quoted
    name), or None for a type not in :data:`SQL_TEXT_TYPES`. Text is parsed by Spark in
    one call, where a Column is built by one driver round trip per function.

    Examples
    --------
    >>> from pyspark.sql.types import StringType            # doctest: +SKIP
    >>> encoded_sql("`k`", StringType())                     # doctest: +SKIP
    "CASE WHEN `k` IS NULL THEN X'6E' ELSE CAST(concat('s', `k`) AS BINARY) END"
    """
    name = dtype.typeName()
    if name in _INTEGRAL:
        enc = f"CAST(concat('i', CAST({ref} AS STRING)) AS BINARY)"
    elif name == "boolean":
        enc = f"CASE WHEN {ref} THEN X'{b'i1'.hex()}' ELSE X'{b'i0'.hex()}' END"
    elif name == "string":
        enc = f"CAST(concat('s', {ref}) AS BINARY)"
    elif name == "binary":
        enc = f"concat(X'{b'b'.hex()}', {ref})"
    elif name == "date":
        enc = f"CAST(concat('D', CAST(unix_date({ref}) AS STRING)) AS BINARY)"
    else:
        return None
    return f"CASE WHEN {ref} IS NULL THEN X'{b'n'.hex()}' ELSE {enc} END"
