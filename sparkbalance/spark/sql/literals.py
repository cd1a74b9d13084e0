"""Python values as SQL values of a key column: the literals of a routing table.

A table entry ``k`` routes the rows whose collected value ``v`` satisfies ``v == k`` in
Python (the partition function's dict lookup); :func:`coerce_value` finds that ``v`` for a
column type, or says there is none (the entry can never match a row of that column and is
dropped); :func:`literal_sql` spells it as a SQL literal of the column's type and
:func:`sql_type` names that type. The raw hashes of the same columns are
:mod:`sparkbalance.spark.sql.key_encoding`'s.
"""
from __future__ import annotations

import datetime as _dt
import math
import struct
from decimal import Context, Decimal, Inexact, InvalidOperation
from typing import TYPE_CHECKING

import numpy as np

from sparkbalance.spark.sql.key_encoding import SCALAR_TYPES

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql.types import DataType

__all__ = ["coerce_value", "sql_type", "literal_sql"]

_INT_BOUNDS = {"byte": 1 << 7, "short": 1 << 15, "integer": 1 << 31, "long": 1 << 63}
_CANONICAL_NAN = float("nan")


def _as_int(value: object) -> int | None:
    """``value`` as the int it equals in Python (bool, integral float / Decimal), else None."""
    if isinstance(value, (bool, np.bool_, int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return int(v) if math.isfinite(v) and v.is_integer() else None
    if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
        return int(value)
    return None


def _as_double(value: object) -> float | None:
    """The double equal to ``value`` in Python (NaN -> one NaN, -0.0 -> 0.0), else None."""
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if v != v:
            return _CANONICAL_NAN
        return 0.0 if v == 0.0 else v   # Spark groups -0.0 with 0.0 (its normalisation)
    if isinstance(value, (bool, np.bool_, int, np.integer)):
        try:
            f = float(int(value))
        except OverflowError:
            return None
        return f if f == int(value) else None
    if isinstance(value, Decimal) and value.is_finite():
        f = float(value)
        return (0.0 if f == 0.0 else f) if math.isfinite(f) and Decimal(f) == value else None
    return None


def _as_decimal(value: object, precision: int, scale: int) -> Decimal | None:
    if isinstance(value, (bool, np.bool_, int, np.integer)):
        d = Decimal(int(value))
    elif isinstance(value, (float, np.floating)):
        if not math.isfinite(float(value)):
            return None
        d = Decimal(float(value))  # exact: a float equals this Decimal in Python
    elif isinstance(value, Decimal) and value.is_finite():
        d = value
    else:
        return None
    try:
        q = d.quantize(Decimal(1).scaleb(-scale), context=Context(prec=80, traps=[Inexact]))
    except (Inexact, InvalidOperation):
        return None
    fits = q == 0 or len(q.as_tuple().digits) <= precision
    return q if fits and q == d else None


def _is_float32(v: float) -> bool:
    if v != v or math.isinf(v):
        return True
    try:
        return struct.unpack("<f", struct.pack("<f", v))[0] == v
    except OverflowError:
        return False


def coerce_value(value: object, dtype: "DataType") -> tuple[bool, object]:
    """(ok, v): the value ``v`` of SQL type ``dtype`` with ``v == value`` in Python, if any.

    Python equality decides which rows a routing entry routes (the partition function looks
    the collected row value up in a dict): ``1.0`` and ``Decimal("1.00")`` match an INT row
    ``1``, ``Decimal("0.5")`` a DOUBLE ``0.5``, a ``date`` never a TIMESTAMP. Doubles are
    normalised as Spark groups them (``-0.0`` -> ``0.0``, one NaN); structs take tuples (a
    collected Row), arrays tuples or lists; a null field or element stays None.

    Examples
    --------
    >>> from pyspark.sql.types import DecimalType, DoubleType             # doctest: +SKIP
    >>> coerce_value(Decimal("0.5"), DoubleType())                       # doctest: +SKIP
    (True, 0.5)
    >>> coerce_value(0.125, DecimalType(10, 2))                          # doctest: +SKIP
    (False, None)
    """
    from pyspark.sql.types import ArrayType, StructType
    no = (False, None)
    if isinstance(dtype, StructType):
        if not isinstance(value, tuple) or len(value) != len(dtype.fields):
            return no
        out = []
        for e, f in zip(value, dtype.fields):
            ok, v = (True, None) if e is None else coerce_value(e, f.dataType)
            if not ok:
                return no
            out.append(v)
        return True, tuple(out)
    if isinstance(dtype, ArrayType):
        if not isinstance(value, (tuple, list)):
            return no
        out = []
        for e in value:
            ok, v = (True, None) if e is None else coerce_value(e, dtype.elementType)
            if not ok:
                return no
            out.append(v)
        return True, tuple(out)
    name = dtype.typeName()
    if name in _INT_BOUNDS:
        v = _as_int(value)
        lim = _INT_BOUNDS[name]
        return (True, v) if v is not None and -lim <= v < lim else no
    if name == "boolean":
        v = _as_int(value)
        return (True, bool(v)) if v in (0, 1) else no
    if name == "string":
        return (True, value) if isinstance(value, str) else no
    if name == "binary":
        return (True, bytes(value)) if isinstance(value, (bytes, bytearray)) else no
    if name == "double":
        v = _as_double(value)
        return no if v is None else (True, v)
    if name == "float":  # a FLOAT row collects as the double of its float32 value
        v = _as_double(value)
        return (True, v) if v is not None and _is_float32(v) else no
    if name == "decimal":
        v = _as_decimal(value, dtype.precision, dtype.scale)
        return no if v is None else (True, v)
    if name == "date":  # a datetime is a date subclass but never equals one
        ok = isinstance(value, _dt.date) and not isinstance(value, _dt.datetime)
        return (True, value) if ok else no
    if name in ("timestamp", "timestamp_ntz"):  # rows collect as naive wall-clock datetimes
        ok = isinstance(value, _dt.datetime) and value.tzinfo is None
        return (True, value) if ok else no
    return no


def sql_type(dtype: "DataType") -> str:
    """The SQL spelling of ``dtype`` for a CAST, field names back-quoted (``k.x``, ``a b``)."""
    from pyspark.sql.types import ArrayType, StructType
    if isinstance(dtype, StructType):
        return "struct<" + ",".join("`" + f.name.replace("`", "``") + "`:" + sql_type(
            f.dataType) for f in dtype.fields) + ">"
    if isinstance(dtype, ArrayType):
        return f"array<{sql_type(dtype.elementType)}>"
    return dtype.simpleString()


def literal_sql(value: object, dtype: "DataType") -> str:
    """SQL text of a value :func:`coerce_value` returned, castable to ``dtype``.

    Strings are spelled as BINARY hex (no quoting to get wrong; a CAST to ``dtype`` turns
    them back); composite values are cast to ``dtype`` here, scalars by the caller's CAST of
    the whole array (keeps 10^4-entry literals short).

    Examples
    --------
    >>> literal_sql(dt.date(2024, 1, 31), DateType())                    # doctest: +SKIP
    "DATE'2024-01-31'"
    """
    from pyspark.sql.types import ArrayType, StructType
    if value is None:
        return f"CAST(NULL AS {sql_type(dtype)})"
    if isinstance(dtype, StructType):
        parts = ", ".join(f"'c{j}', {literal_sql(e, f.dataType)}"
                          for j, (e, f) in enumerate(zip(value, dtype.fields)))
        return f"CAST(named_struct({parts}) AS {sql_type(dtype)})"
    if isinstance(dtype, ArrayType):
        elems = ", ".join(literal_sql(e, dtype.elementType) for e in value)
        return f"CAST(array({elems}) AS {sql_type(dtype)})"
    name = dtype.typeName()
    if name in _INT_BOUNDS:
        # plain digits (no L suffix: "-9223372036854775808L" would overflow as -(2**63)L)
        return str(int(value))
    if name == "boolean":
        return "true" if value else "false"
    if name == "string":
        return "X'" + value.encode("utf-8", "surrogatepass").hex() + "'"
    if name == "binary":
        return "X'" + bytes(value).hex() + "'"
    if name in ("double", "float"):
        if value != value:
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(value):
            return f"CAST('{'-' if value < 0 else ''}Infinity' AS DOUBLE)"
        return repr(float(value)) + "D"   # shortest round-trip digits: the exact double
    if name == "decimal":
        return format(value, "f") + "BD"   # scale digits kept: one DECIMAL(., s) type
    if name == "date":
        return f"DATE'{value.isoformat()}'"
    if name == "timestamp":
        return f"TIMESTAMP'{value.isoformat(sep=' ')}'"
    if name == "timestamp_ntz":
        return f"TIMESTAMP_NTZ'{value.isoformat(sep=' ')}'"
    raise TypeError(f"key type {dtype.simpleString()} has no literal form; expected one of "
                    f"{', '.join(SCALAR_TYPES)} or a struct/array of them")
