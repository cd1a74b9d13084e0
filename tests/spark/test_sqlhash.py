"""The Spark SQL hashes equal the Python ones (one formula, two implementations)."""
from __future__ import annotations

import random

import pytest
from pyspark.sql import functions as F

from sparkbalance import hashing
from sparkbalance.routing import home_partition as py_home
from sparkbalance.routing import key_group as py_group
from sparkbalance.spark.sql import hash_columns as sqlhash

INT_RANGES = {"tinyint": 2 ** 7, "smallint": 2 ** 15, "int": 2 ** 31, "bigint": 2 ** 63}


def _keys(seed: int = 7, n: int = 300):
    rng = random.Random(seed)
    rows = []
    for j in range(n):
        row = []
        for t, lim in INT_RANGES.items():
            pick = rng.choice([rng.randrange(-lim, lim), rng.randrange(-100, 100),
                               lim - 1, -lim, 0])
            row.append(pick)
        s = "".join(rng.choice("aZ09 -_é中😀") for _ in range(rng.randrange(0, 12)))
        row.append(s)
        row.append(bytes(rng.randrange(256) for _ in range(rng.randrange(0, 9))))
        row.append(bool(j % 2))
        rows.append(tuple(row))
    return rows


SCHEMA = "t tinyint, sm smallint, i int, l bigint, s string, b binary, bo boolean"


@pytest.fixture(scope="module")
def keys_df(spark):
    spark.conf.set("spark.sql.ansi.enabled", "true")
    return spark.createDataFrame(_keys(), SCHEMA)


@pytest.mark.parametrize("cols", [["t"], ["sm"], ["i"], ["l"], ["s"], ["b"], ["bo"],
                                  ["s", "i"], ["l", "b", "s"]])
def test_sql_hashes_equal_python(keys_df, cols):
    df = keys_df
    exprs = [sqlhash.raw_hash(df, *cols).alias("raw")]
    exprs += [sqlhash.hash_family(df, cols, i).alias(f"h{i}")
              for i in range(hashing.HASH_FAMILY_SIZE)]
    exprs += [sqlhash.home_partition(df, cols, 7).alias("home"),
              sqlhash.key_group(df, cols, 97).alias("group")]
    rows = df.select(*cols, *exprs).collect()
    assert len(rows) == 300
    for r in rows:
        vals = [bytes(v) if isinstance(v, (bytes, bytearray)) else v for v in r[:len(cols)]]
        key = vals[0] if len(cols) == 1 else tuple(vals)
        assert r["raw"] == hashing.raw_hash(key), key
        for i in range(hashing.HASH_FAMILY_SIZE):
            assert r[f"h{i}"] == hashing.hash_family(key, i), (key, i)
        assert r["home"] == py_home(key, 7)
        assert r["group"] == py_group(key, 97)


def test_affine_step_has_no_overflow_under_ansi(spark):
    """Extreme raw values through every family member: the up-to-93-bit product is exact
    (DECIMAL), ANSI mode must not raise, and the hash comes back as a BIGINT."""
    spark.conf.set("spark.sql.ansi.enabled", "true")
    raws = [0, 1, 2 ** 31, 2 ** 32 - 1]
    df = spark.createDataFrame([(r,) for r in raws], "raw bigint")
    out = df.select("raw", *[sqlhash.affine(F.col("raw"), i).alias(f"h{i}")
                             for i in range(hashing.HASH_FAMILY_SIZE)])
    assert {f.dataType.simpleString() for f in out.schema.fields} == {"bigint"}
    for row in out.collect():
        r = row["raw"]
        for i in range(hashing.HASH_FAMILY_SIZE):
            a, b = hashing.family_constants(i)
            assert row[f"h{i}"] == (r * a + b) % hashing.P, (r, i)


def test_tuple_fold_has_no_overflow_under_ansi(spark):
    spark.conf.set("spark.sql.ansi.enabled", "true")
    # the largest fold state times the multiplier plus the largest raw hash
    big = (hashing.TUPLE_MOD - 1) * hashing.TUPLE_MUL + (2 ** 32 - 1)
    got = spark.range(1).select(
        F.pmod(F.lit(hashing.TUPLE_MOD - 1).cast("bigint") * F.lit(hashing.TUPLE_MUL)
               + F.lit(2 ** 32 - 1).cast("bigint"), F.lit(hashing.TUPLE_MOD)).alias("r")).first()
    assert got["r"] == big % hashing.TUPLE_MOD


def test_null_key_hashes_as_python_none(spark):
    df = spark.createDataFrame([(None, "a"), (1, None)], "i int, s string")
    rows = df.select(sqlhash.stable_hash(df, "i").alias("a"),
                     sqlhash.stable_hash(df, "i", "s").alias("b"),
                     sqlhash.any_null(df, ["i", "s"]).alias("n")).collect()
    assert [r["a"] for r in rows] == [hashing.stable_hash(None), hashing.stable_hash(1)]
    assert [r["b"] for r in rows] == [hashing.stable_hash((None, "a")),
                                      hashing.stable_hash((1, None))]
    assert [r["n"] for r in rows] == [True, True]


def test_bad_columns_are_refused(spark):
    df = spark.createDataFrame([({"a": 1}, 1)], "x map<string,int>, i int")
    with pytest.raises(TypeError, match="'x' has type map<string,int>"):
        sqlhash.stable_hash(df, "x")
    with pytest.raises(ValueError, match="'nope' not found"):
        sqlhash.stable_hash(df, "nope")
    with pytest.raises(ValueError, match="at least one"):
        sqlhash.stable_hash(df)
    with pytest.raises(ValueError, match="num_partitions=0"):
        sqlhash.home_partition(df, "i", 0)
