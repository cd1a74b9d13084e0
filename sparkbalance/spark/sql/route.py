"""A fitted partition function as a Spark SQL expression: rows routed inside the JVM.

:func:`partition_id` turns a key-grouping partition function into an INT Column equal to
``f(key)`` on every row, built from the SQL spelling of the stable hashes
(:mod:`sparkbalance.spark.sql.hash_columns`), so the DataFrame path and the RDD path agree key by
key; :func:`sparkbalance.spark.sql.placement.place` then puts each row on that partition
(``repartitionById`` on Spark 4.1+, hash partitioning on a route value on 3.5):

* ``HashPartitioner``          -> ``pmod(h0(key), n)``
* ``RoutingTablePartitioner``  -> ``coalesce(table[key], pmod(h0(key), n))``; the table is a
  literal ``array<map<key, int>>`` bucketed by the raw key hash (Spark looks a map up by a
  linear scan, so buckets of ~4 entries keep the lookup O(1)); tables above
  ``literal_limit`` entries are a broadcast hash join instead (:func:`with_partition_id`).
* ``KeyGroupPartitioner``, ``GroupMapPartitioner`` -> ``owner[pmod(h1(key), m)]``, ``owner``
  an array literal.

Null keys (a null in any key column) cannot be hashed; they all go to partition
:data:`NULL_PARTITION` (0), in every path.

Examples
--------
>>> f = RoutingTablePartitioner(4, RoutingTable({"hot": 2}))           # doctest: +SKIP
>>> place(df.withColumn("pid", partition_id(df, f, "k")), 4, "pid")   # doctest: +SKIP
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from sparkbalance.hashing import GROUP_HASH
from sparkbalance.hashing import raw_hash as py_raw_hash
from sparkbalance.routing.base import PartitionFunction
from sparkbalance.routing.hash import HashPartitioner
from sparkbalance.routing.keygroups import GroupMapPartitioner, KeyGroupPartitioner
from sparkbalance.routing.table import RoutingTablePartitioner
from sparkbalance.spark.sql import hash_columns as sqlhash
from sparkbalance.spark.sql import literals as sqlliteral

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame

__all__ = ["NULL_PARTITION", "PID_COL", "DEFAULT_LITERAL_LIMIT", "INTEGRAL_TYPES",
           "partition_id", "with_partition_id", "bucketed_lookup", "coerce_key"]

#: Partition that receives every row whose key has a null column (nulls cannot be hashed;
#: a null partition id would go to 0 as well).
NULL_PARTITION: int = 0
#: Helper column holding the target partition (dropped from every result).
PID_COL: str = "__sb_pid"
_ROUTE_COL = "__sb_route"
_LOOKUP_COL = "__sb_lookup"
#: Routing-table entries placed in the query as a literal; larger tables become a broadcast
#: hash join (a literal of 10^4 entries plans in well under a second, measured).
DEFAULT_LITERAL_LIMIT = 10_000
#: Mean entries per bucket of the literal table (Spark's map lookup is a linear scan).
_BUCKET_LOAD = 4
#: Integral SQL types: one family for keys (the Python key is an int in every one).
INTEGRAL_TYPES = ("tinyint", "smallint", "int", "bigint")


def _F():
    from pyspark.sql import functions as F
    return F



def coerce_key(key: Any, dtypes: Sequence[Any]) -> tuple[bool, Any]:
    """(ok, value): whether Python ``key`` can equal a key of SQL types ``dtypes``, as what.

    A row's key is the value PySpark collects (a tuple of them for several columns); a
    routing entry routes the rows whose key equals it in Python, so ``1.0`` matches an INT
    ``1``, ``Decimal("0.5")`` a DOUBLE ``0.5``, ``-0.0`` the DOUBLE ``0.0`` and any NaN the
    one NaN group (Spark's normalisation), a tuple a STRUCT (a Row) or an ARRAY
    (:func:`sqlliteral.coerce_value`). An entry of another type can never match a row of
    these columns and is dropped.

    Examples
    --------
    >>> from pyspark.sql.types import IntegerType, StringType      # doctest: +SKIP
    >>> coerce_key((1.0, "a"), [IntegerType(), StringType()])       # doctest: +SKIP
    (True, (1, 'a'))
    """
    if len(dtypes) == 1:
        return sqlliteral.coerce_value(key, dtypes[0])
    if not isinstance(key, tuple) or len(key) != len(dtypes):
        return False, None
    vals = []
    for e, t in zip(key, dtypes):
        ok, v = sqlliteral.coerce_value(e, t)
        if not ok:  # a null column never reaches the table (NULL_PARTITION)
            return False, None
        vals.append(v)
    return True, tuple(vals)


def _wall_clock_type(dtype: Any) -> Any:
    """``dtype`` with every TIMESTAMP as TIMESTAMP_NTZ (structs and arrays included).

    A TIMESTAMP key collects to Python as its naive wall-clock datetime, so the table looks
    rows up by wall clock too (the column cast to TIMESTAMP_NTZ in the session zone): the
    two instants of a daylight-saving fall-back hour are one Python key and find its entry
    both, as their SQL hashes (wall-clock microseconds) already agree.
    """
    from pyspark.sql.types import (ArrayType, StructField, StructType, TimestampNTZType,
                                   TimestampType)
    if isinstance(dtype, TimestampType):
        return TimestampNTZType()
    if isinstance(dtype, StructType):
        return StructType([StructField(f.name, _wall_clock_type(f.dataType), f.nullable)
                           for f in dtype.fields])
    if isinstance(dtype, ArrayType):
        return ArrayType(_wall_clock_type(dtype.elementType), dtype.containsNull)
    return dtype


def _lookup_column(df: "DataFrame", c: str, dtype: Any) -> "Column":
    """Key column ``c`` as the table looks it up (wall clock for timestamps)."""
    ref = sqlhash.column_ref(df, c)
    wall = _wall_clock_type(dtype)
    return ref if wall == dtype else ref.cast(wall)


def _key_sql_type(dtypes: Sequence[Any]) -> str:
    if len(dtypes) == 1:
        return sqlliteral.sql_type(dtypes[0])
    return "struct<" + ",".join(f"c{j}:{sqlliteral.sql_type(t)}"
                                for j, t in enumerate(dtypes)) + ">"


def _key_sql(key: Any, dtypes: Sequence[Any]) -> str:
    if len(dtypes) == 1:
        return sqlliteral.literal_sql(key, dtypes[0])
    parts = ", ".join(f"'c{j}', {sqlliteral.literal_sql(e, t)}" for j, (e, t) in
                      enumerate(zip(key, dtypes)))
    return f"CAST(named_struct({parts}) AS {_key_sql_type(dtypes)})"


def _key_struct(df: "DataFrame", cols: Sequence[str], dtypes: Sequence[Any]) -> "Column":
    F = _F()
    if len(cols) == 1:
        return _lookup_column(df, cols[0], dtypes[0])
    return F.struct(*[_lookup_column(df, c, t).alias(f"c{j}")
                      for j, (c, t) in enumerate(zip(cols, dtypes))])


def _value_sql(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "array(" + ", ".join(str(int(v)) for v in value) + ")"
    return str(int(value))


def _table_sql(entries: Sequence[tuple[Any, Any]], dtypes: Sequence[Any], value_type: str
               ) -> tuple[str, int]:
    """(SQL text of the constant ``array<map>`` of ``entries`` bucketed by raw hash, buckets)."""
    dtypes = [_wall_clock_type(t) for t in dtypes]   # literals spelled as the lookup
    num_buckets = max(1, len(entries) // _BUCKET_LOAD)
    buckets: list[list[tuple[Any, Any]]] = [[] for _ in range(num_buckets)]
    for k, v in entries:
        buckets[py_raw_hash(k) % num_buckets].append((k, v))
    key_type = _key_sql_type(dtypes)
    maps = []
    for b in buckets:
        ks = ", ".join(_key_sql(k, dtypes) for k, _ in b)
        vs = ", ".join(_value_sql(v) for _, v in b)
        # one CAST per bucket types every scalar literal (string keys are spelled as
        # BINARY hex; composite keys are cast one by one in _key_sql)
        karr = f"cast(array({ks}) as array<{key_type}>)"
        maps.append(f"map_from_arrays({karr}, cast(array({vs}) as array<{value_type}>))")
    return "array(" + ", ".join(maps) + ")", num_buckets


def bucketed_lookup(df: "DataFrame", cols: Sequence[str], dtypes: Sequence[Any],
                     raw: "Column", entries: Sequence[tuple[Any, Any]], value_type: str
                     ) -> "Column":
    """``entries[key]`` (null when absent) as a constant ``array<map>`` bucketed by raw hash.

    ``entries`` are ``(key, value)`` pairs with keys already coerced (:func:`coerce_key`);
    ``raw`` is the raw hash Column of the key; ``value_type`` the SQL type of the values
    (``"int"``, ``"array<int>"``). Built as SQL text (one py4j call; ``F.lit(list)`` costs one call per element) that
    the optimizer folds into a single literal.
    """
    F = _F()
    text, num_buckets = _table_sql(entries, dtypes, value_type)
    bucket = F.element_at(F.expr(text), (F.pmod(raw, F.lit(num_buckets)) + F.lit(1)).cast("int"))
    return F.element_at(bucket, _key_struct(df, cols, dtypes))


def _partition_id_sql(f: PartitionFunction, cols: Sequence[str], dtypes: Sequence[Any]
                      ) -> str | None:
    """:func:`partition_id` as one piece of SQL text, or None when a key type (or ``f``)
    has no text spelling. One parse on the JVM instead of a Column built call by call:
    ~10 driver round trips where the Columns took ~400 (measured, one BIGINT key)."""
    refs = [sqlhash.quoted(c) for c in cols]
    raw = sqlhash.raw_sql(refs, dtypes)
    if raw is None:
        return None
    n = f.num_partitions
    home = f"pmod({sqlhash.affine_sql(raw, 0)}, {n})"
    if type(f) is HashPartitioner:
        expr = home
    elif type(f) is RoutingTablePartitioner:
        entries = _table_entries(f, dtypes)
        if entries:
            text, num_buckets = _table_sql(entries, dtypes, "int")
            key = refs[0] if len(refs) == 1 else "named_struct(" + ", ".join(
                f"'c{j}', {r}" for j, r in enumerate(refs)) + ")"
            bucket = f"element_at({text}, CAST(pmod({raw}, {num_buckets}) + 1 AS INT))"
            expr = f"coalesce(element_at({bucket}, {key}), {home})"
        else:
            expr = home
    elif type(f) in (KeyGroupPartitioner, GroupMapPartitioner):   # same group hash h_1
        owner = "array(" + ",".join(str(int(o)) for o in f.owner_of_group) + ")"
        group = f"pmod({sqlhash.affine_sql(raw, GROUP_HASH)}, {f.num_groups})"
        expr = f"element_at({owner}, CAST({group} + 1 AS INT))"
    else:
        return None
    null = " OR ".join(f"{r} IS NULL" for r in refs)
    return f"CAST(CASE WHEN {null} THEN {NULL_PARTITION} ELSE {expr} END AS INT)"


def _table_entries(f: RoutingTablePartitioner, dtypes: Sequence[Any]) -> list[tuple[Any, int]]:
    out: dict[Any, int] = {}
    nan: list[tuple[Any, int]] = []
    for k, p in f.table.items():
        ok, v = coerce_key(k, dtypes)
        if not ok:  # entries of another type can never match a row of these columns
            continue
        if _has_nan(v):  # NaN != NaN: a dict cannot dedupe them; Spark's one NaN group
            if not any(_same(v, w) for w, _ in nan):
                nan.append((v, int(p)))
        else:  # equal keys (1 and 1.0 on a DOUBLE column) fold into one map entry
            out.setdefault(v, int(p))
    return list(out.items()) + nan


def _has_nan(v: Any) -> bool:
    if isinstance(v, float):
        return v != v
    return isinstance(v, tuple) and any(_has_nan(e) for e in v)


def _same(a: Any, b: Any) -> bool:
    """Equal with every NaN equal to every NaN (Spark's map-key and grouping equality)."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b or (isinstance(a, float) and isinstance(b, float) and a != a and b != b)


def partition_id(df: "DataFrame", f: PartitionFunction, *cols: str) -> "Column":
    """INT Column equal to ``f(key)`` for every row (``NULL_PARTITION`` for null keys).

    Handles :class:`HashPartitioner`, :class:`RoutingTablePartitioner` (literal table; see
    :func:`with_partition_id` for large tables), :class:`KeyGroupPartitioner` and
    :class:`GroupMapPartitioner` (any group → partition map, e.g. a correlation layout).

    Examples
    --------
    >>> f = RoutingTablePartitioner(4, {"hot": 2})                         # doctest: +SKIP
    >>> place(df.withColumn("pid", partition_id(df, f, "k")), 4, "pid")    # doctest: +SKIP
    """
    F = _F()
    cols = sqlhash.check_key_columns(df, cols)
    dtypes = sqlhash.key_types(df, cols)
    text = _partition_id_sql(f, cols, dtypes)
    if text is not None:
        return F.expr(text)
    raw = sqlhash.raw_hash_of([sqlhash.column_ref(df, c) for c in cols], dtypes)
    n = f.num_partitions
    home = F.pmod(sqlhash.affine(raw, 0), F.lit(n))
    if type(f) is HashPartitioner:
        expr = home
    elif type(f) is RoutingTablePartitioner:
        entries = _table_entries(f, dtypes)
        expr = home if not entries else F.coalesce(
            bucketed_lookup(df, cols, dtypes, raw, entries, "int"), home)
    elif type(f) in (KeyGroupPartitioner, GroupMapPartitioner):   # same group hash h_1
        owner = F.expr("array(" + ",".join(str(int(o)) for o in f.owner_of_group) + ")")
        group = F.pmod(sqlhash.affine(raw, GROUP_HASH), F.lit(f.num_groups))
        expr = F.element_at(owner, (group + F.lit(1)).cast("int"))
    else:
        raise TypeError(f"partition function {type(f).__name__} has no SQL form; expected "
                        "HashPartitioner, RoutingTablePartitioner, KeyGroupPartitioner or "
                        "GroupMapPartitioner (key-grouping strategies)")
    return F.when(sqlhash.any_null(df, cols), F.lit(NULL_PARTITION)).otherwise(
        expr).cast("int")


def with_partition_id(df: "DataFrame", f: PartitionFunction, *cols: str,
                      name: str = PID_COL, literal_limit: int | None = None) -> "DataFrame":
    """``df`` plus an INT column ``name`` = ``f(key)``; large tables by broadcast join.

    A :class:`RoutingTablePartitioner` with more than ``literal_limit`` entries (default
    :data:`DEFAULT_LITERAL_LIMIT`) is looked up by a left broadcast join on the key columns
    instead of a literal: same placement, a plan that stays small.

    Examples
    --------
    >>> place(with_partition_id(df, f, "k"), 4, PID_COL)                # doctest: +SKIP
    """
    F = _F()
    cols = sqlhash.check_key_columns(df, cols)
    limit = DEFAULT_LITERAL_LIMIT if literal_limit is None else int(literal_limit)
    if type(f) is RoutingTablePartitioner and len(f.table) > limit:
        return _with_pid_broadcast(df, f, cols, name)
    return df.withColumn(name, partition_id(df, f, *cols))


def _with_pid_broadcast(df: "DataFrame", f: RoutingTablePartitioner, cols: list[str],
                        name: str) -> "DataFrame":
    from pyspark.sql.types import IntegerType, StructField, StructType
    F = _F()
    dtypes = sqlhash.key_types(df, cols)
    single = len(cols) == 1
    rows = [((k,) if single else tuple(k)) + (p,) for k, p in _table_entries(f, dtypes)]
    # the join matches wall-clock keys, as the literal lookup does (_wall_clock_type)
    names = [f"{_LOOKUP_COL}{j}" for j in range(len(cols))]
    schema = StructType([StructField(c, _wall_clock_type(t)) for c, t in zip(names, dtypes)]
                        + [StructField(_ROUTE_COL, IntegerType())])
    table = df.sparkSession.createDataFrame(rows, schema)
    hash_only = HashPartitioner(f.num_partitions)
    keyed = df.select("*", *[_lookup_column(df, c, t).alias(a)
                             for c, t, a in zip(cols, dtypes, names)])
    joined = keyed.join(F.broadcast(table), on=names, how="left")
    pid = F.when(F.col(_ROUTE_COL).isNotNull(), F.col(_ROUTE_COL)).otherwise(
        partition_id(joined, hash_only, *cols))
    return joined.select(*[sqlhash.column_ref(joined, c) for c in df.columns], pid.cast("int").alias(name))


