"""Every key type Spark groups by hashes in SQL as its collected Python value does.

Extreme values per type (subnormal, huge and non-integral doubles, -0.0 and NaN, decimals
that are and are not exactly a double, dates and timestamps before the epoch, nulls, structs,
arrays, a column name with a dot), under ANSI mode.
"""
from __future__ import annotations

import datetime as dt
import math
import random
from decimal import Decimal

import pytest

from sparkbalance import hashing
from sparkbalance.routing import home_partition as py_home
from sparkbalance.routing import key_group as py_group
from sparkbalance.spark.sql import hash_columns as sqlhash

_DOUBLES = [0.0, -0.0, 1.5, -1.5, 0.1, -0.1, 1 / 3, 123.456, 1e-310, 5e-324, -5e-324,
            2.2250738585072014e-308, 2.225073858507201e-308, 0.5 ** 1022, 4503599627370495.5,
            -4503599627370495.5, 2.0 ** 52, 2.0 ** 53 + 2, 2.0 ** 63, -2.0 ** 63, 2.0 ** 63 * 3,
            1e20, -1e30, 2.0 ** 125 * 1.5, 1.7976931348623157e308 / 2 ** 1000, math.inf,
            -math.inf, math.nan, 7.0, -7.0, 2.0 ** -1074 * 3, 1e-5, 9.999999999999999e22]
_DEC = [Decimal("12.50"), Decimal("0.10"), Decimal("-0.25"), Decimal("3.00"), Decimal("0.01"),
        Decimal("-99999999.99"), Decimal("0.00"), Decimal("-0.50"), Decimal("1.75")]
_DEC38 = [Decimal("0.5"), Decimal("-0.0000000000000000000000000000000000001"),
          Decimal("1.2345678901234567890123456789012345678"), Decimal("9.9999999999999999999"),
          Decimal("0.0000000000000000000000000000000000000"), Decimal("-1"),
          Decimal("0.1000000000000000055511151231257827021"), Decimal("0.0000001")]
_DATES = [dt.date(1970, 1, 1), dt.date(1969, 12, 31), dt.date(2024, 2, 29),
          dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1582, 10, 15)]
_TS = [dt.datetime(1970, 1, 1), dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
       dt.datetime(2024, 2, 29, 13, 45, 7, 123456), dt.datetime(1900, 3, 1, 0, 0, 0, 1),
       dt.datetime(2262, 4, 11, 23, 47, 16, 854775)]

SCHEMA = ("d double, f float, dec decimal(10,2), dec38 decimal(38,37), dec0 decimal(5,0), "
          "day date, ts timestamp, ntz timestamp_ntz, st struct<a:int,b:string>, "
          "arr array<int>, sarr array<string>, `k.x` string, nd array<struct<x:double>>")


def _rows(seed: int = 11, n: int = 120):
    rng = random.Random(seed)
    rows = []
    for j in range(n):
        d = _DOUBLES[j] if j < len(_DOUBLES) else rng.choice(
            [rng.uniform(-1e6, 1e6), rng.randrange(-10 ** 6, 10 ** 6) / 8,
             math.ldexp(rng.random(), rng.randrange(-1070, 120)), None])
        f = rng.choice([0.1, -0.0, 3.5, math.nan, 1e-40, None, rng.uniform(-100, 100)])
        rows.append((
            d, f,
            _DEC[j % len(_DEC)] if j % 11 else None,
            _DEC38[j % len(_DEC38)],
            Decimal(rng.randrange(-99999, 99999)),
            _DATES[j % len(_DATES)] if j % 7 else None,
            _TS[j % len(_TS)],
            _TS[(j + 1) % len(_TS)] if j % 5 else None,
            None if j % 9 == 0 else (rng.choice([1, None]), rng.choice(["x", None, ""])),
            None if j % 8 == 0 else [rng.choice([1, 2, None]) for _ in range(j % 4)],
            [rng.choice(["a", "é", None])] * (j % 3),
            rng.choice(["a.b", "x", None]),
            [(rng.choice([0.5, -0.0, math.nan, None]),)] * (j % 2),
        ))
    return rows


@pytest.fixture(scope="module")
def typed_df(spark):
    spark.conf.set("spark.sql.ansi.enabled", "true")
    return spark.createDataFrame(_rows(), SCHEMA)


def _py(v):
    if isinstance(v, bytearray):
        return bytes(v)
    if isinstance(v, float) and v != v:
        return math.nan
    return v


@pytest.mark.parametrize("cols", [["d"], ["f"], ["dec"], ["dec38"], ["dec0"], ["day"], ["ts"],
                                  ["ntz"], ["st"], ["arr"], ["sarr"], ["k.x"], ["nd"],
                                  ["day", "d"], ["k.x", "st", "dec"]])
def test_sql_hash_of_every_type_equals_python(typed_df, cols):
    df = typed_df
    rows = df.select(*[sqlhash.column_ref(df, c) for c in cols],
                     sqlhash.raw_hash(df, *cols).alias("raw"),
                     sqlhash.home_partition(df, cols, 13).alias("home"),
                     sqlhash.key_group(df, cols, 1009).alias("group")).collect()
    assert len(rows) == 120
    for r in rows:
        vals = [_py(v) for v in r[:len(cols)]]
        key = vals[0] if len(cols) == 1 else tuple(vals)
        assert r["raw"] == hashing.raw_hash(key), (cols, key)
        assert r["home"] == py_home(key, 13)
        assert r["group"] == py_group(key, 1009)


def test_sql_hash_of_float_keys_follows_spark_grouping(spark):
    # -0.0 and 0.0 are one group, every NaN one group: as Spark's own GROUP BY.
    df = spark.createDataFrame([(0.0,), (-0.0,), (math.nan,), (float("-nan"),)], "d double")
    hs = [r[0] for r in df.select(sqlhash.stable_hash(df, "d")).collect()]
    assert hs[0] == hs[1] == hashing.stable_hash(0) and hs[2] == hs[3]
    assert df.groupBy("d").count().count() == 2


def test_small_decimals_hash_as_python_outside_ansi_mode(spark):
    """Outside ANSI mode (Spark 3.5's default) a DECIMAL below 1E-6 casts to a scientific
    string ("1E-37", a zero of scale 9 "0E-9"); its hash must still be the Python key's."""
    before = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "false")
    try:
        tiny = [Decimal(0), Decimal("1E-37"), Decimal("-1E-37"), Decimal("1.5E-36"),
                Decimal("1E-7"), Decimal("-5E-7"), Decimal("1E-6"), None]
        for ddl, vals in [("decimal(38,37)", tiny),
                          ("decimal(10,9)", [Decimal(0), Decimal("1E-9"), Decimal("-2.5E-8"),
                                             Decimal("1E-7"), None])]:
            df = spark.createDataFrame([(v,) for v in vals], f"k {ddl}")
            rows = df.select("k", sqlhash.raw_hash(df, "k").alias("raw")).collect()
            assert len(rows) == len(vals)
            for r in rows:
                assert r["raw"] == hashing.raw_hash(r["k"]), (ddl, r["k"])
    finally:
        spark.conf.set("spark.sql.ansi.enabled", before)
