"""Routing tables on DataFrame keys of every groupable type route in SQL as in Python.

For DOUBLE (``-0.0`` and NaN in the table), FLOAT, DECIMAL, DATE, TIMESTAMP, TIMESTAMP_NTZ,
STRUCT (with null fields), ARRAY, a two-column key and a column named ``k.x``: a table that
moves *every* key off its hash home routes each row to ``f(key)`` both as a literal and as a
broadcast join; ``mixed`` and ``mintable`` fitted on the DataFrame place every row where the
Python partition function says and ``group_by(...).agg`` equals plain Spark's.
"""
from __future__ import annotations

import datetime as dt
import math
import random
from decimal import Decimal

import pytest

from sparkbalance.routing.hash import home_partition
from sparkbalance.routing.table import RoutingTablePartitioner
from sparkbalance.spark.sql import dataframe as sdf
from sparkbalance.spark.sql import route as sqlroute
from sparkbalance.spark.sql.route import NULL_PARTITION, PID_COL, with_partition_id
from sparkbalance.stats import KeyStats

N = 4
_BASE = dt.datetime(2024, 1, 1, 12)

#: name -> (schema of the key column(s), pool of key values, skewed by position)
POOLS = {
    "double": ("k double", [0.0, -0.0, math.nan, 1.5, 0.1, 7.0, -2.25, 1e-310, math.inf,
                            -math.inf, 2.0 ** 70, None] + [i / 3 for i in range(20)]),
    "float": ("k float", [0.0, -0.0, math.nan, 0.25, 7.0, -2.5, None]
              + [i / 8 for i in range(20)]),
    "decimal": ("k decimal(10,2)", [Decimal("12.50"), Decimal("0.10"), Decimal("-3.00"),
                                    Decimal("0.25"), None] + [Decimal(i) / 4 for i in range(20)]),
    "decimal38": ("k decimal(38,37)", [Decimal("0.5"), Decimal("-1"),
                                       Decimal("1.2345678901234567890123456789012345678"),
                                       Decimal("0.0000000000000000000000000000000000001")]
                  + [Decimal(i) / 64 for i in range(20)]),
    "date": ("k date", [dt.date(1969, 12, 31), dt.date(1, 1, 1), dt.date(9999, 12, 31), None]
             + [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(20)]),
    "timestamp": ("k timestamp", [dt.datetime(1969, 12, 31, 23, 59, 59, 999999), None]
                  + [_BASE + dt.timedelta(minutes=37 * i, microseconds=i) for i in range(20)]),
    "timestamp_ntz": ("k timestamp_ntz", [dt.datetime(1900, 3, 1, 0, 0, 0, 1)]
                      + [_BASE + dt.timedelta(minutes=37 * i) for i in range(20)]),
    "struct": ("k struct<a:int,`b c`:string>", [(1, "x"), (None, "x"), (3, None), (None, None),
                                                None] + [(i % 7, f"s{i}") for i in range(20)]),
    "array": ("k array<double>", [(), (None, 1.0), (math.nan,), (-0.0, 2.5), None]
              + [(float(i), i + 0.5) for i in range(20)]),
    "two": ("k date, d double", [(dt.date(2024, 1, 1), 0.5), (dt.date(2024, 1, 1), None),
                                 (dt.date(2024, 1, 2), -0.0)]
            + [(dt.date(2024, 2, 1) + dt.timedelta(days=i % 5), i / 2) for i in range(20)]),
    "dotted": ("`k.x` string", ["a.b", "x", "", "é", None] + [f"u{i}" for i in range(20)]),
}


def _cols(name: str) -> list[str]:
    return {"two": ["k", "d"], "dotted": ["k.x"]}.get(name, ["k"])


def _hashable(v):
    """A collected value as the Python key the partition functions take (lists -> tuples)."""
    if isinstance(v, list):
        return tuple(_hashable(e) for e in v)
    if isinstance(v, tuple):
        return tuple(_hashable(e) for e in v)
    return v


def _row_key(row, cols):
    vals = [_hashable(row[c]) for c in cols]
    return vals[0] if len(cols) == 1 else tuple(vals)


def _has_null(row, cols) -> bool:
    return any(row[c] is None for c in cols)


def _canon(k):
    """NaN-free stand-in of a key: Spark groups every NaN (and -0.0 with 0.0) as one."""
    if isinstance(k, float) and k != k:
        return ("<nan>",)
    if isinstance(k, float) and k == 0.0:
        return 0.0
    if isinstance(k, tuple):
        return tuple(_canon(e) for e in k)
    return k


def _reference(f, table_by_canon, key) -> int:
    """f(key), except that a NaN key finds its table entry (Python's NaN != NaN)."""
    c = _canon(key)
    return table_by_canon[c] if c in table_by_canon else f(key)


def _df(spark, name, seed=5, rows=300):
    schema, pool = POOLS[name]
    rng = random.Random(seed)
    weights = [1.0 / (i + 1) ** 1.3 for i in range(len(pool))]
    two = len(_cols(name)) == 2
    data = []
    for _ in range(rows):
        k = rng.choices(pool, weights)[0]
        if name == "array" and k is not None:
            k = list(k)
        data.append((*k, rng.randrange(50)) if two else (k, rng.randrange(50)))
    return spark.createDataFrame(data, schema + ", v long")


def _distinct_keys(df, cols) -> list:
    seen, out = set(), []
    for r in df.select(*[f"`{c}`" for c in cols]).distinct().collect():
        if _has_null(r, cols):
            continue
        k = _row_key(r, cols)
        if _canon(k) not in seen:
            seen.add(_canon(k))
            out.append(k)
    return out


def _check_pids(df, f, cols, literal_limit):
    out = with_partition_id(df, f, *cols, literal_limit=literal_limit).collect()
    table = {_canon(k): p for k, p in f.table.items()}
    assert len(out) == df.count()
    for r in out:
        want = NULL_PARTITION if _has_null(r, cols) else _reference(f, table, _row_key(r, cols))
        assert r[PID_COL] == want, (_row_key(r, cols), r[PID_COL], want)


@pytest.mark.parametrize("literal_limit", [None, 0], ids=["literal", "broadcast"])
@pytest.mark.parametrize("name", sorted(POOLS))
def test_table_moving_every_key_routes_as_python(spark, name, literal_limit):
    df = _df(spark, name)
    cols = _cols(name)
    keys = _distinct_keys(df, cols)
    assert len(keys) >= 4
    # every key away from its home: a dropped or unmatched entry shows as a wrong partition
    f = RoutingTablePartitioner(N, {k: (home_partition(k, N) + 1) % N for k in keys})
    assert len(sqlroute._table_entries(f, [df.schema[c].dataType for c in cols])) == len(keys)
    _check_pids(df, f, cols, literal_limit)


@pytest.mark.parametrize("strategy", ["mixed", "mintable"])
@pytest.mark.parametrize("name", sorted(POOLS))
def test_fitted_table_places_rows_and_equals_spark(spark, name, strategy):
    from pyspark.sql import functions as F
    from pyspark.sql.functions import spark_partition_id
    from pyspark.testing import assertDataFrameEqual
    import sparkbalance as sb

    df = _df(spark, name, seed=7, rows=800)
    cols = _cols(name)
    counts: dict = {}
    for r in df.collect():  # the planner's keys, as fit_partitioner's statistics list them
        if not _has_null(r, cols):
            k = _row_key(r, cols)
            c = _canon(k)
            counts[c] = (counts.get(c, (k, 0))[0], counts.get(c, (k, 0))[1] + 1)
    stats = KeyStats.from_counts({k: n for k, n in counts.values()})
    f = sdf.fit_partitioner(df, N, *cols, strategy=strategy, stats=stats)
    assert isinstance(f, RoutingTablePartitioner) and len(f.table) > 0
    table = {_canon(k): p for k, p in f.table.items()}
    placed = sb.repartition(df, N, *cols, partitioner=f).withColumn("__p", spark_partition_id())
    for r in placed.collect():
        want = NULL_PARTITION if _has_null(r, cols) else _reference(f, table, _row_key(r, cols))
        assert r["__p"] == want, (_row_key(r, cols), r["__p"], want)
    key = [F.col(f"`{c}`") for c in cols]
    got = sb.group_by(df, *cols, num_partitions=N, partitioner=f).agg(F.sum("v").alias("s"))
    assertDataFrameEqual(got, df.groupBy(*key).agg(F.sum("v").alias("s")))


def test_fit_on_dataframe_statistics_uses_the_table(spark):
    """The statistics job's own keys (Decimal, date) reach the SQL table unchanged."""
    for name in ("decimal", "date", "timestamp", "double", "struct", "array"):
        df = _df(spark, name, seed=3, rows=800)
        f = sdf.fit_partitioner(df, N, "k", strategy="mixed")
        assert isinstance(f, RoutingTablePartitioner) and len(f.table) > 0, name
        entries = sqlroute._table_entries(f, [df.schema["k"].dataType])
        assert len(entries) == len(f.table), name
        _check_pids(df, f, ["k"], None)


def test_coerce_key_follows_python_equality():
    from pyspark.sql.types import (ArrayType, BooleanType, DateType, DecimalType, DoubleType,
                                   FloatType, IntegerType, StringType, StructField, StructType,
                                   TimestampType)
    c = sqlroute.coerce_key
    assert c(1.0, [IntegerType()]) == (True, 1)
    assert c(Decimal("3.00"), [IntegerType()]) == (True, 3)
    assert c(2 ** 40, [IntegerType()]) == (False, None)
    assert c(Decimal("0.5"), [DoubleType()]) == (True, 0.5)
    assert c(Decimal("0.1"), [DoubleType()]) == (False, None)   # 0.1 != Decimal("0.1")
    assert c(-0.0, [DoubleType()]) == (True, 0.0) and str(c(-0.0, [DoubleType()])[1]) == "0.0"
    assert math.isnan(c(float("nan"), [DoubleType()])[1])
    assert c(2 ** 53 + 1, [DoubleType()]) == (False, None)
    assert c(0.1, [FloatType()]) == (False, None) and c(0.25, [FloatType()]) == (True, 0.25)
    assert c(0.125, [DecimalType(10, 2)]) == (False, None)
    assert c(0.5, [DecimalType(10, 2)]) == (True, Decimal("0.50"))
    assert c(Decimal("123456789.5"), [DecimalType(10, 2)]) == (False, None)
    assert c(dt.datetime(2024, 1, 1), [DateType()]) == (False, None)
    assert c(dt.date(2024, 1, 1), [TimestampType()]) == (False, None)
    aware = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    assert c(aware, [TimestampType()]) == (False, None)
    st = StructType([StructField("a", IntegerType()), StructField("b", StringType())])
    assert c((1.0, None), [st]) == (True, (1, None))
    assert c((1, "x", 2), [st]) == (False, None)
    assert c([1, None], [ArrayType(IntegerType())]) == (True, (1, None))
    assert c(1, [BooleanType()]) == (True, True) and c(2, [BooleanType()]) == (False, None)
    assert c("a", [IntegerType(), StringType()]) == (False, None)
    assert c((None, "a"), [IntegerType(), StringType()]) == (False, None)


def test_equal_entries_fold_into_one_map_key(spark):
    """1 and 1.0, and two NaN objects, are one DOUBLE key: one entry (Spark refuses duplicate
    map keys), the first one kept."""
    from pyspark.sql.types import DoubleType
    f = RoutingTablePartitioner(N, {1: 2, 1.0 + 0: 2, float("nan"): 3, float("nan"): 1})
    entries = sqlroute._table_entries(f, [DoubleType()])
    assert len(entries) == 2 and entries[0] == (1.0, 2) and entries[1][1] == 3
    df = spark.createDataFrame([(1.0,), (math.nan,), (2.0,)], "k double")
    pids = [r[PID_COL] for r in with_partition_id(df, f, "k").collect()]
    assert pids[:2] == [2, 3]


@pytest.mark.parametrize("literal_limit", [None, 0], ids=["literal", "broadcast"])
def test_both_instants_of_a_fall_back_hour_find_their_wall_clock_entry(spark, literal_limit):
    """01:30 on 2023-11-05 in New York is two instants (EDT, then EST) but one Python key
    (the naive wall clock PySpark collects): both rows follow the table entry."""
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        df = spark.sql("SELECT CAST(s AS TIMESTAMP) AS k, s AS v FROM VALUES "
                       "(1699162200L), (1699165800L), (1699200000L) AS t(s)")
        wall = dt.datetime(2023, 11, 5, 1, 30)
        assert {r["k"] for r in df.select(df["k"].cast("timestamp_ntz").alias("k"))
                .collect()} == {wall, dt.datetime(2023, 11, 5, 11, 0)}
        to = (home_partition(wall, N) + 1) % N
        f = RoutingTablePartitioner(N, {wall: to})
        out = {r["v"]: r[PID_COL] for r in
               with_partition_id(df, f, "k", literal_limit=literal_limit).collect()}
        assert out[1699162200] == out[1699165800] == to
        assert out[1699200000] == home_partition(dt.datetime(2023, 11, 5, 11, 0), N)
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
