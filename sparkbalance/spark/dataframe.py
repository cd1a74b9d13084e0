"""Balanced DataFrame repartition, groupBy and join, routed inside the JVM (no Python UDF).

``repartition(df, n, "key")`` is a drop-in for ``df.repartition(n, "key")`` that balances
skewed keys: it gathers per-key counts with one aggregation (or a sample, or takes given
:class:`~sparkbalance.stats.KeyStats`), fits a key-grouping strategy from
:mod:`sparkbalance.strategies` (hash, mixed, mintable, minmig, readj, keygroups), turns the
fitted partition function into a Spark SQL expression, and calls
``df.repartitionById(n, expr)``. The expression computes exactly what the Python partition
function computes (:mod:`sparkbalance.spark.sqlhash`), so the DataFrame path and the RDD path
agree key by key:

* ``HashPartitioner``          -> ``pmod(h0(key), n)``
* ``RoutingTablePartitioner``  -> ``coalesce(table[key], pmod(h0(key), n))``; the table is a
  literal ``array<map<key, int>>`` bucketed by the raw key hash (Spark looks a map up by a
  linear scan, so buckets of ~4 entries keep the lookup O(1)); tables above
  ``literal_limit`` entries are a broadcast hash join instead.
* ``KeyGroupPartitioner``      -> ``owner[pmod(h1(key), m)]``, ``owner`` an array literal.

Null keys (a null in any key column) cannot be hashed; they all go to partition
:data:`NULL_PARTITION` (0), in every path.

``group_by(df, "key").agg(...)`` groups by ``(pid, key)`` after the placement: Spark sees the
data already clustered on ``pid`` and plans **one** exchange (the placement itself), then
drops ``pid``. ``join(left, right, on)`` routes both sides with one function and joins on
``(pid, on)``: one exchange per side. ``join(..., strategy="split")`` spreads the heavy keys
of one side (the *split* side) over several partitions and replicates the matching rows of
the other side to each of them. AQE's skew-join handling splits a partition only when it is
both > 5x the median and > 256 MB (defaults), by map-output ranges, and leaves moderately
skewed partitions (say 1.6x the mean) alone; the split here is planned per key from the
statistics (pieces on the least loaded partitions, LPT), so the work after the join is
balanced whatever the thresholds.

Configuration (explicit arguments win), read from the session's conf::

    spark.sparkbalance.strategy        default strategy             ("mixed")
    spark.sparkbalance.theta           θ_max of table planners      (planner default 0.08)
    spark.sparkbalance.maxTable        A_max of table planners      (planner default)
    spark.sparkbalance.sampleFraction  sample statistics            (exact when unset)

Example
-------
>>> import sparkbalance as sb                                     # doctest: +SKIP
>>> balanced = sb.repartition(df, 8, "user")                       # doctest: +SKIP
>>> totals = sb.group_by(df, "user", num_partitions=8).sum("amount")   # doctest: +SKIP
>>> pairs = sb.join_df(clicks, users, "user", strategy="split")    # doctest: +SKIP
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from .. import strategies as _strategies
from ..hashing import raw_hash as _py_raw_hash
from ..routing.base import PartitionFunction, check_num_partitions
from ..routing.hash import HashPartitioner, home_partitions
from ..routing.keygroups import KeyGroupPartitioner
from ..routing.table import RoutingTablePartitioner
from ..stats.keystats import KeyStats
from . import sqlhash

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame, GroupedData

__all__ = [
    "NULL_PARTITION", "PID_COL", "CONF_STRATEGY", "CONF_THETA", "CONF_MAX_TABLE",
    "CONF_SAMPLE_FRACTION", "DEFAULT_STRATEGY", "DEFAULT_LITERAL_LIMIT",
    "key_stats", "fit_partitioner", "partition_id", "with_partition_id", "repartition",
    "group_by", "BalancedGroupedData", "join", "join_df", "plan_split", "SplitPlan",
    "install_dataframe_methods", "uninstall_dataframe_methods",
    "balanced_repartition", "balanced_agg", "balanced_join",
]

#: Partition that receives every row whose key has a null column (nulls cannot be hashed;
#: ``repartitionById`` also sends a null partition id to 0).
NULL_PARTITION: int = 0
#: Helper column holding the target partition (dropped from every result).
PID_COL: str = "__sb_pid"
_ROUTE_COL = "__sb_route"

CONF_STRATEGY = "spark.sparkbalance.strategy"
CONF_THETA = "spark.sparkbalance.theta"
CONF_MAX_TABLE = "spark.sparkbalance.maxTable"
CONF_SAMPLE_FRACTION = "spark.sparkbalance.sampleFraction"
DEFAULT_STRATEGY = "mixed"
#: Routing-table entries placed in the query as a literal; larger tables become a broadcast
#: hash join (a literal of 10^4 entries plans in well under a second, measured).
DEFAULT_LITERAL_LIMIT = 10_000
#: Mean entries per bucket of the literal table (Spark's map lookup is a linear scan).
_BUCKET_LOAD = 4
#: Strategies planned from a routing table, which take ``theta`` / ``max_table``.
_TABLE_STRATEGIES = ("mixed", "mixedbf", "mintable", "minmig", "readj")
#: Seed of sampled statistics (repeatable plans).
_SAMPLE_SEED = 17
#: Hot-key split: a key is heavy when its cost exceeds this fraction of the mean partition
#: load L̄; it is cut into pieces of at most this fraction of L̄.
DEFAULT_SPLIT_THRESHOLD = 0.5
#: Hot-key split: keys above this fraction of L̄ are placed whole by the greedy (a table
#: entry), so the medium keys that hashing would pile up are spread too; at most
#: ``DEFAULT_MAX_PLACED`` of them (the map literal stays small).
DEFAULT_PLACED_FRACTION = 0.02
DEFAULT_MAX_PLACED = 2000


def _F():
    from pyspark.sql import functions as F
    return F


# ---------------------------------------------------------------------------------------
# configuration
# ---------------------------------------------------------------------------------------
def _conf(df: "DataFrame", key: str) -> str | None:
    try:
        value = df.sparkSession.conf.get(key, None)
    except Exception:  # pragma: no cover - conf access failures mean "unset"
        return None
    return None if value in (None, "") else value


def _resolve(df: "DataFrame", strategy: str | None, sample_fraction: float | None,
             params: dict[str, Any]) -> tuple[str, float | None, dict[str, Any]]:
    """Explicit arguments win over ``spark.sparkbalance.*`` conf keys, which win over defaults."""
    if strategy is None:
        strategy = _conf(df, CONF_STRATEGY) or DEFAULT_STRATEGY
    spec = _strategies.get(strategy)  # clear error on unknown names
    if spec.splits_keys:
        raise ValueError(f"strategy={strategy!r} splits keys over partitions; the DataFrame "
                         f"adapter needs a key-grouping strategy, one of "
                         f"{', '.join(_strategies.KEY_GROUPING)}")
    params = dict(params)
    if strategy in _TABLE_STRATEGIES:
        theta = _conf(df, CONF_THETA)
        if "theta" not in params and theta is not None:
            params["theta"] = _parse_float(theta, CONF_THETA)
        max_table = _conf(df, CONF_MAX_TABLE)
        if "max_table" not in params and max_table is not None:
            params["max_table"] = int(_parse_float(max_table, CONF_MAX_TABLE))
    if sample_fraction is None:
        sf = _conf(df, CONF_SAMPLE_FRACTION)
        sample_fraction = None if sf is None else _parse_float(sf, CONF_SAMPLE_FRACTION)
    if sample_fraction is not None:
        if not 0.0 < float(sample_fraction) <= 1.0:
            raise ValueError(f"sample_fraction={sample_fraction!r}; expected 0 < fraction <= 1")
        sample_fraction = float(sample_fraction)
        if sample_fraction == 1.0:
            sample_fraction = None
    return strategy, sample_fraction, params


def _parse_float(value: str, key: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{key}={value!r}; expected a number") from None


def _default_partitions(df: "DataFrame") -> int:
    return int(_conf(df, "spark.sql.shuffle.partitions") or 200)


# ---------------------------------------------------------------------------------------
# statistics
# ---------------------------------------------------------------------------------------
def _py_value(v: Any) -> Any:
    return bytes(v) if isinstance(v, bytearray) else v


def _key_array(keys: list) -> np.ndarray:
    if keys and all(type(k) is int for k in keys):
        return np.asarray(keys, dtype=np.int64)
    out = np.empty(len(keys), dtype=object)
    for i, k in enumerate(keys):  # element-wise: tuples must stay tuples
        out[i] = k
    return out


def _counts(df: "DataFrame", cols: Sequence[str], sample_fraction: float | None
            ) -> tuple[list, np.ndarray]:
    """Distinct non-null keys and their record counts, by one aggregation."""
    F = _F()
    src = df.select(*cols).where(~sqlhash.any_null(df, cols))
    if sample_fraction is not None:
        src = src.sample(withReplacement=False, fraction=sample_fraction, seed=_SAMPLE_SEED)
    rows = src.groupBy(*cols).agg(F.count(F.lit(1)).alias("__sb_n")).collect()
    single = len(cols) == 1
    keys = [(_py_value(r[0]) if single else tuple(_py_value(v) for v in r[:-1])) for r in rows]
    counts = np.fromiter((r[-1] for r in rows), dtype=np.float64, count=len(rows))
    if sample_fraction is not None:
        counts = counts / sample_fraction  # Horvitz-Thompson scale-up to the whole data
    return keys, counts


def key_stats(df: "DataFrame", *cols: str, sample_fraction: float | None = None
              ) -> KeyStats:
    """Per-key record counts of ``df`` over key ``cols`` (null keys left out).

    One aggregation over the data (or over a Bernoulli sample of ``sample_fraction``, with
    counts scaled by ``1 / sample_fraction``). A multi-column key is a Python tuple.

    Example
    -------
    >>> s = key_stats(spark.createDataFrame([(1,), (1,), (2,)], "k int"), "k")  # doctest: +SKIP
    >>> sorted(s.as_dict().items())                                            # doctest: +SKIP
    [(1, 2.0), (2, 1.0)]
    """
    cols = sqlhash.check_key_columns(df, cols)
    keys, counts = _counts(df, cols, sample_fraction)
    return KeyStats(_key_array(keys), counts)


def fit_partitioner(df: "DataFrame", num_partitions: int, *cols: str,
                    strategy: str | None = None, stats: KeyStats | None = None,
                    sample_fraction: float | None = None,
                    current: PartitionFunction | None = None, **params: Any
                    ) -> PartitionFunction:
    """Fit the partition function :func:`repartition` would use (statistics + strategy).

    Example
    -------
    >>> f = fit_partitioner(df, 8, "user", strategy="mixed")   # doctest: +SKIP
    >>> f("alice") == f("alice")                               # doctest: +SKIP
    True
    """
    n = check_num_partitions(num_partitions)
    cols = sqlhash.check_key_columns(df, cols)
    strategy, sample_fraction, params = _resolve(df, strategy, sample_fraction, params)
    spec = _strategies.get(strategy)
    if spec.needs_stats and stats is None:
        stats = key_stats(df, *cols, sample_fraction=sample_fraction)
    if spec.needs_stats and len(stats) == 0:
        return HashPartitioner(n)  # nothing to balance (empty or all-null data)
    return _strategies.fit(strategy, stats if spec.needs_stats else None, n, current=current,
                           **params)


# ---------------------------------------------------------------------------------------
# partition function -> SQL expression
# ---------------------------------------------------------------------------------------
_INTEGRAL = ("tinyint", "smallint", "int", "bigint")
_INT_BOUNDS = {"tinyint": 1 << 7, "smallint": 1 << 15, "int": 1 << 31, "bigint": 1 << 63}


def _coerce(value: Any, dtype: Any) -> tuple[bool, Any]:
    """(ok, value) — whether a Python key element can equal a value of SQL type ``dtype``."""
    name = dtype.simpleString()
    if name in _INTEGRAL:
        if isinstance(value, (bool, np.bool_)):
            value = int(value)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, (int, np.integer)):
            v = int(value)
            lim = _INT_BOUNDS[name]
            return (-lim <= v < lim), v
        return False, None
    if name == "boolean":
        if isinstance(value, (bool, np.bool_)) or value in (0, 1):
            return True, bool(value)
        return False, None
    if name == "string":
        return isinstance(value, str), value
    if name == "binary":
        return isinstance(value, (bytes, bytearray)), (bytes(value) if isinstance(
            value, (bytes, bytearray)) else None)
    return False, None


def _coerce_key(key: Any, dtypes: Sequence[Any]) -> tuple[bool, Any]:
    if len(dtypes) == 1:
        ok, v = _coerce(key, dtypes[0])
        return ok, v
    if not isinstance(key, tuple) or len(key) != len(dtypes):
        return False, None
    vals = []
    for e, t in zip(key, dtypes):
        ok, v = _coerce(e, t)
        if not ok:
            return False, None
        vals.append(v)
    return True, tuple(vals)


def _sql_scalar(value: Any, dtype: Any) -> str:
    name = dtype.simpleString()
    if name in _INTEGRAL:
        # plain digits (no L suffix: "-9223372036854775808L" would overflow as -(2**63)L);
        # the array is cast to the column type afterwards, exactly
        return str(int(value))
    if name == "boolean":
        return "true" if value else "false"
    if name == "string":
        return "X'" + value.encode("utf-8", "surrogatepass").hex() + "'"  # cast to string below
    if name == "binary":
        return "X'" + bytes(value).hex() + "'"
    raise TypeError(f"key type {name} has no literal form")  # pragma: no cover


def _key_sql_type(dtypes: Sequence[Any]) -> str:
    if len(dtypes) == 1:
        return dtypes[0].simpleString()
    return "struct<" + ",".join(f"c{j}:{t.simpleString()}" for j, t in enumerate(dtypes)) + ">"


def _key_sql(key: Any, dtypes: Sequence[Any]) -> str:
    if len(dtypes) == 1:
        return _sql_scalar(key, dtypes[0])
    parts = ", ".join(f"'c{j}', {_sql_scalar(e, t)}" for j, (e, t) in
                      enumerate(zip(key, dtypes)))
    return f"named_struct({parts})"


def _key_struct(df: "DataFrame", cols: Sequence[str]) -> "Column":
    F = _F()
    if len(cols) == 1:
        return df[cols[0]]
    return F.struct(*[df[c].alias(f"c{j}") for j, c in enumerate(cols)])


def _value_sql(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "array(" + ", ".join(str(int(v)) for v in value) + ")"
    return str(int(value))


def _bucketed_lookup(df: "DataFrame", cols: Sequence[str], dtypes: Sequence[Any],
                     raw: "Column", entries: Sequence[tuple[Any, Any]], value_type: str
                     ) -> "Column":
    """``entries[key]`` (null when absent) as a constant ``array<map>`` bucketed by raw hash.

    Built as SQL text (one py4j call; ``F.lit(list)`` costs one call per element) that
    the optimizer folds into a single literal.
    """
    F = _F()
    num_buckets = max(1, len(entries) // _BUCKET_LOAD)
    buckets: list[list[tuple[Any, Any]]] = [[] for _ in range(num_buckets)]
    for k, v in entries:
        buckets[_py_raw_hash(k) % num_buckets].append((k, v))
    key_type = _key_sql_type(dtypes)
    lit_type = key_type.replace("string", "binary") if "string" in key_type else key_type
    maps = []
    for b in buckets:
        ks = ", ".join(_key_sql(k, dtypes) for k, _ in b)
        vs = ", ".join(_value_sql(v) for _, v in b)
        karr = f"cast(array({ks}) as array<{lit_type}>)"
        if lit_type != key_type:
            karr = f"cast({karr} as array<{key_type}>)"
        maps.append(f"map_from_arrays({karr}, cast(array({vs}) as array<{value_type}>))")
    table = F.expr("array(" + ", ".join(maps) + ")")
    bucket = F.element_at(table, (F.pmod(raw, F.lit(num_buckets)) + F.lit(1)).cast("int"))
    return F.element_at(bucket, _key_struct(df, cols))


def _table_entries(f: RoutingTablePartitioner, dtypes: Sequence[Any]) -> list[tuple[Any, int]]:
    out = []
    for k, p in f.table.items():
        ok, v = _coerce_key(k, dtypes)
        if ok:  # entries of another type can never match a row of these columns
            out.append((v, int(p)))
    return out


def partition_id(df: "DataFrame", f: PartitionFunction, *cols: str) -> "Column":
    """INT Column equal to ``f(key)`` for every row (``NULL_PARTITION`` for null keys).

    Handles :class:`HashPartitioner`, :class:`RoutingTablePartitioner` (literal table; see
    :func:`with_partition_id` for large tables) and :class:`KeyGroupPartitioner`.

    Example
    -------
    >>> f = RoutingTablePartitioner(4, {"hot": 2})                         # doctest: +SKIP
    >>> df.repartitionById(4, partition_id(df, f, "k"))                     # doctest: +SKIP
    """
    F = _F()
    cols = sqlhash.check_key_columns(df, cols)
    dtypes = sqlhash.key_types(df, cols)
    raw = sqlhash.raw_hash_of([df[c] for c in cols], dtypes)
    n = f.num_partitions
    home = F.pmod(sqlhash.affine(raw, 0), F.lit(n))
    if type(f) is HashPartitioner:
        expr = home
    elif type(f) is RoutingTablePartitioner:
        entries = _table_entries(f, dtypes)
        expr = home if not entries else F.coalesce(
            _bucketed_lookup(df, cols, dtypes, raw, entries, "int"), home)
    elif type(f) is KeyGroupPartitioner:
        owner = F.expr("array(" + ",".join(str(int(o)) for o in f.owner_of_group) + ")")
        group = F.pmod(sqlhash.affine(raw, 1), F.lit(f.num_groups))
        expr = F.element_at(owner, (group + F.lit(1)).cast("int"))
    else:
        raise TypeError(f"partition function {type(f).__name__} has no SQL form; expected "
                        "HashPartitioner, RoutingTablePartitioner or KeyGroupPartitioner "
                        "(key-grouping strategies)")
    return F.when(sqlhash.any_null(df, cols), F.lit(NULL_PARTITION)).otherwise(
        expr).cast("int")


def with_partition_id(df: "DataFrame", f: PartitionFunction, *cols: str,
                      name: str = PID_COL, literal_limit: int | None = None) -> "DataFrame":
    """``df`` plus an INT column ``name`` = ``f(key)``; large tables by broadcast join."""
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
    schema = StructType([StructField(c, t) for c, t in zip(cols, dtypes)]
                        + [StructField(_ROUTE_COL, IntegerType())])
    table = df.sparkSession.createDataFrame(rows, schema)
    hash_only = HashPartitioner(f.num_partitions)
    joined = df.join(F.broadcast(table), on=cols, how="left")
    pid = F.when(F.col(_ROUTE_COL).isNotNull(), F.col(_ROUTE_COL)).otherwise(
        partition_id(joined, hash_only, *cols))
    return joined.select(*[joined[c] for c in df.columns], pid.cast("int").alias(name))


def repartition(df: "DataFrame", num_partitions: int, *cols: str, strategy: str | None = None,
                stats: KeyStats | None = None, sample_fraction: float | None = None,
                partitioner: PartitionFunction | None = None,
                current: PartitionFunction | None = None, literal_limit: int | None = None,
                **params: Any) -> "DataFrame":
    """Balanced drop-in for ``df.repartition(num_partitions, *cols)``.

    Parameters
    ----------
    df : the DataFrame.
    num_partitions : n >= 1.
    cols : key column names (INT/BIGINT/SMALLINT/TINYINT/BOOLEAN/STRING/BINARY).
    strategy : key-grouping strategy (default ``spark.sparkbalance.strategy`` or "mixed").
    stats : per-key statistics to plan from (skips the aggregation).
    sample_fraction : gather statistics on a sample of this fraction.
    partitioner : use this partition function (skips statistics and fitting).
    current : the partitioner in use (table planners minimise moves from it).
    literal_limit : largest routing table placed in the query as a literal.
    params : strategy parameters (``theta``, ``max_table``, ``num_groups``, ``tau``...).

    Returns
    -------
    DataFrame with the same rows and columns, row with key k in partition ``F(k)``
    (``NULL_PARTITION`` for null keys), where F is the fitted partition function.

    Example
    -------
    >>> out = repartition(df, 8, "user", strategy="mixed")                # doctest: +SKIP
    >>> out.rdd.getNumPartitions()                                        # doctest: +SKIP
    8
    """
    placed, _ = _place(df, num_partitions, cols, strategy, stats, sample_fraction,
                       partitioner, current, literal_limit, params)
    return placed.drop(PID_COL)


def _place(df, num_partitions, cols, strategy, stats, sample_fraction, partitioner, current,
           literal_limit, params) -> tuple["DataFrame", PartitionFunction]:
    n = check_num_partitions(num_partitions)
    cols = sqlhash.check_key_columns(df, cols)
    if partitioner is None:
        partitioner = fit_partitioner(df, n, *cols, strategy=strategy, stats=stats,
                                      sample_fraction=sample_fraction, current=current,
                                      **params)
    elif partitioner.num_partitions != n:
        raise ValueError(f"partitioner has {partitioner.num_partitions} partitions; expected "
                         f"num_partitions={n}")
    with_pid = with_partition_id(df, partitioner, *cols, literal_limit=literal_limit)
    return with_pid.repartitionById(n, PID_COL), partitioner


# ---------------------------------------------------------------------------------------
# groupBy
# ---------------------------------------------------------------------------------------
class BalancedGroupedData:
    """``GroupedData`` over balanced partitions: one exchange, the helper column dropped.

    Example
    -------
    >>> g = group_by(df, "user", num_partitions=8)          # doctest: +SKIP
    >>> g.agg(F.sum("amount").alias("total"))                # doctest: +SKIP
    """

    def __init__(self, placed: "DataFrame", cols: Sequence[str], numeric: Sequence[str],
                 partitioner: PartitionFunction) -> None:
        self._grouped: "GroupedData" = placed.groupBy(PID_COL, *cols)
        self._cols = list(cols)
        self._numeric = list(numeric)
        #: The fitted partition function (key -> partition).
        self.partitioner = partitioner

    def _done(self, out: "DataFrame") -> "DataFrame":
        return out.drop(PID_COL)

    def agg(self, *exprs: Any) -> "DataFrame":
        """Same as ``GroupedData.agg`` (Columns or a ``{column: function}`` dict)."""
        return self._done(self._grouped.agg(*exprs))

    def count(self) -> "DataFrame":
        return self._done(self._grouped.count())

    def _numeric_cols(self, cols: tuple[str, ...]) -> list[str]:
        # With no columns Spark aggregates every numeric column; name them so the helper
        # column is never one of them.
        return list(cols) if cols else list(self._numeric)

    def sum(self, *cols: str) -> "DataFrame":
        return self._done(self._grouped.sum(*self._numeric_cols(cols)))

    def avg(self, *cols: str) -> "DataFrame":
        return self._done(self._grouped.avg(*self._numeric_cols(cols)))

    mean = avg

    def min(self, *cols: str) -> "DataFrame":
        return self._done(self._grouped.min(*self._numeric_cols(cols)))

    def max(self, *cols: str) -> "DataFrame":
        return self._done(self._grouped.max(*self._numeric_cols(cols)))


def group_by(df: "DataFrame", *cols: str, num_partitions: int | None = None,
             strategy: str | None = None, **kwargs: Any) -> BalancedGroupedData:
    """Balanced ``df.groupBy(*cols)``: rows placed by a fitted function, one exchange.

    ``num_partitions`` defaults to ``spark.sql.shuffle.partitions``; other keyword
    arguments are those of :func:`repartition`.

    Example
    -------
    >>> group_by(df, "user", num_partitions=8, strategy="mixed").count()   # doctest: +SKIP
    """
    from pyspark.sql.types import NumericType
    n = _default_partitions(df) if num_partitions is None else num_partitions
    placed, f = _place(df, n, cols, strategy, kwargs.pop("stats", None),
                       kwargs.pop("sample_fraction", None), kwargs.pop("partitioner", None),
                       kwargs.pop("current", None), kwargs.pop("literal_limit", None), kwargs)
    numeric = [fld.name for fld in df.schema.fields if isinstance(fld.dataType, NumericType)]
    return BalancedGroupedData(placed, list(cols), numeric, f)


# ---------------------------------------------------------------------------------------
# join
# ---------------------------------------------------------------------------------------
_HOW = {
    "inner": "inner", "cross": "inner",
    "outer": "full", "full": "full", "fullouter": "full",
    "left": "left", "leftouter": "left",
    "right": "right", "rightouter": "right",
    "semi": "left_semi", "leftsemi": "left_semi",
    "anti": "left_anti", "leftanti": "left_anti",
}


def _normalize_how(how: str) -> str:
    key = str(how).lower().replace("_", "")
    if key not in _HOW:
        raise ValueError(f"how={how!r}; expected one of inner, left, right, full, left_semi, "
                         "left_anti (and Spark's aliases)")
    return _HOW[key]


def _check_join_keys(left: "DataFrame", right: "DataFrame", on: Sequence[str]) -> list[str]:
    on = sqlhash.check_key_columns(left, on)
    sqlhash.check_key_columns(right, on)
    fam = lambda t: "integral" if t.simpleString() in _INTEGRAL else t.simpleString()  # noqa
    for c, lt, rt in zip(on, sqlhash.key_types(left, on), sqlhash.key_types(right, on)):
        if fam(lt) != fam(rt):
            raise TypeError(f"join key {c!r} is {lt.simpleString()} on the left and "
                            f"{rt.simpleString()} on the right; expected the same type "
                            "(cast one side)")
    return on


@dataclass(frozen=True)
class SplitPlan:
    """Hot-key split: heavy key -> the partitions its pieces go to; light keys -> ``base``."""

    base: PartitionFunction
    pieces: Mapping[Any, tuple[int, ...]]
    split_side: str
    loads: np.ndarray

    def explain(self) -> str:
        mean = self.loads.mean() if self.loads.size else 0.0
        ratio = float(self.loads.max() / mean) if mean > 0 else 1.0
        split = [p for p in self.pieces.values() if len(p) > 1]
        return (f"{len(split)} heavy keys of the {self.split_side} side split into "
                f"{sum(map(len, split))} pieces, {len(self.pieces) - len(split)} keys placed "
                f"whole; planned max/avg load {ratio:.3f}")


def plan_split(stats: KeyStats, num_partitions: int, *, split_side: str = "left",
               threshold: float = DEFAULT_SPLIT_THRESHOLD,
               placed_fraction: float = DEFAULT_PLACED_FRACTION,
               max_placed: int = DEFAULT_MAX_PLACED) -> SplitPlan:
    """Choose the heavy keys, their pieces, and where every piece goes (greedy LPT).

    A key of cost ``c > threshold * L̄`` is cut into ``s = min(n, ceil(c / (threshold * L̄)))``
    equal pieces on ``s`` distinct partitions. Keys above ``placed_fraction * L̄`` (at most
    ``max_placed`` of them) are placed whole, like a routing-table entry; the rest stay at
    their hash home. Placed keys go, in decreasing order of cost, to the least loaded
    partitions given the hashed load (LPT, Graham 1969).

    Example
    -------
    >>> p = plan_split(KeyStats.from_counts({"hot": 90, "a": 5, "b": 5}), 4)
    >>> len(p.pieces["hot"])
    4
    """
    n = check_num_partitions(num_partitions)
    if not threshold > 0:
        raise ValueError(f"threshold={threshold!r}; expected > 0")
    if not 0 <= placed_fraction <= threshold:
        raise ValueError(f"placed_fraction={placed_fraction!r}; expected 0 <= fraction <= "
                         f"threshold={threshold}")
    cost = stats.cost
    mean = float(cost.sum()) / n
    order = np.argsort(-cost, kind="stable")
    placed = np.zeros(len(cost), dtype=bool)
    if mean > 0:
        top = order[:max(0, int(max_placed))]
        placed[top[cost[top] > placed_fraction * mean]] = True
        placed[cost > threshold * mean] = True  # heavy keys are always split
    home = home_partitions(stats.keys, n)
    loads = np.bincount(home[~placed], weights=cost[~placed], minlength=n).astype(np.float64)
    pieces: dict[Any, tuple[int, ...]] = {}
    keys = stats.keys
    for i in order:
        if not placed[i]:
            continue
        s = int(min(n, max(1, math.ceil(cost[i] / (threshold * mean)))))
        chosen = np.argsort(loads, kind="stable")[:s]
        loads[chosen] += cost[i] / s
        k = keys[i]
        pieces[k.item() if isinstance(k, np.generic) else k] = tuple(sorted(int(c) for c in chosen))
    return SplitPlan(HashPartitioner(n), pieces, split_side, loads)


def _salt(df: "DataFrame") -> "Column":
    """Deterministic per-row salt (a hash of the row): retries recompute the same pieces."""
    from pyspark.sql.types import MapType
    F = _F()
    cols = [df[f.name] for f in df.schema.fields if not isinstance(f.dataType, MapType)]
    return F.xxhash64(*cols)


def _split_pid(df: "DataFrame", on: list[str], plan: SplitPlan, replicate: bool) -> "DataFrame":
    """Split side: one piece per row; replicated side: one copy per piece (explode)."""
    F = _F()
    dtypes = sqlhash.key_types(df, on)
    raw = sqlhash.raw_hash_of([df[c] for c in on], dtypes)
    home = partition_id(df, plan.base, *on)
    entries = []
    for k, parts in plan.pieces.items():
        ok, v = _coerce_key(k, dtypes)
        if ok:
            entries.append((v, list(parts)))
    null = sqlhash.any_null(df, on)
    if not entries:
        parts = None
    else:
        parts = _bucketed_lookup(df, on, dtypes, raw, entries, "array<int>")
    if replicate:
        arr = F.array(home) if parts is None else F.coalesce(parts, F.array(home))
        arr = F.when(null, F.array(F.lit(NULL_PARTITION))).otherwise(arr).cast("array<int>")
        return df.select("*", F.explode(arr).alias(PID_COL))
    if parts is None:
        return df.withColumn(PID_COL, home)
    pick = F.element_at(parts, (F.pmod(_salt(df), F.size(parts)) + F.lit(1)).cast("int"))
    pid = F.when(null, F.lit(NULL_PARTITION)).when(parts.isNotNull(), pick).otherwise(home)
    return df.withColumn(PID_COL, pid.cast("int"))


def _join_stats(left: "DataFrame", right: "DataFrame", on: list[str],
                sample_fraction: float | None) -> KeyStats:
    """Keys of both sides; cost = left rows + right rows + output rows of the key."""
    lk, lc = _counts(left, on, sample_fraction)
    rk, rc = _counts(right, on, sample_fraction)
    index: dict[Any, int] = {}
    keys: list = []
    for k in lk + rk:
        if k not in index:
            index[k] = len(keys)
            keys.append(k)
    lv = np.zeros(len(keys))
    rv = np.zeros(len(keys))
    lv[[index[k] for k in lk]] = lc
    rv[[index[k] for k in rk]] = rc
    return KeyStats(_key_array(keys), lv + rv, cost=lv + rv + lv * rv)


def join(left: "DataFrame", right: "DataFrame", on: str | Sequence[str], how: str = "inner",
         *, num_partitions: int | None = None, strategy: str | None = None,
         split_side: str | None = None, split_threshold: float = DEFAULT_SPLIT_THRESHOLD,
         stats: KeyStats | None = None, sample_fraction: float | None = None,
         literal_limit: int | None = None, **params: Any) -> "DataFrame":
    """Balanced equi-join on the key columns ``on`` (same names on both sides).

    ``strategy`` a key-grouping name (default from conf, else "mixed"): both sides are placed
    by one partition function fitted on the keys of both sides (cost = left rows + right rows
    + output rows per key) and joined partition-wise, one exchange per side; any join type.

    ``strategy="split"``: hot-key split. The heavy keys of the *split side* are cut into
    pieces on several partitions; rows of the other side with those keys are replicated to
    each piece. Exact when the replicated side is not preserved: inner, and the outer /
    semi / anti joins that preserve only the split side. ``split_side`` defaults to "right"
    for right outer joins and "left" otherwise; full outer joins, or joins preserving the
    replicated side, raise ``ValueError``. ``stats`` (optional) are those of the split side.

    Returns the same rows and columns as ``left.join(right, on, how)``.

    Example
    -------
    >>> join(clicks, users, "user", "left", strategy="split")   # doctest: +SKIP
    """
    on = [on] if isinstance(on, str) else list(on)
    kind = _normalize_how(how)
    on = _check_join_keys(left, right, on)
    n = _default_partitions(left) if num_partitions is None else num_partitions
    n = check_num_partitions(n)
    if strategy == "split":
        return _split_join(left, right, on, kind, n, split_side, split_threshold, stats,
                           sample_fraction, literal_limit)
    strategy, sample_fraction, params = _resolve(left, strategy, sample_fraction, params)
    spec = _strategies.get(strategy)
    if spec.needs_stats and stats is None:
        stats = _join_stats(left, right, on, sample_fraction)
    if spec.needs_stats and len(stats) == 0:
        f: PartitionFunction = HashPartitioner(n)
    else:
        f = _strategies.fit(strategy, stats if spec.needs_stats else None, n, **params)
    lp = with_partition_id(left, f, *on, literal_limit=literal_limit).repartitionById(n, PID_COL)
    rp = with_partition_id(right, f, *on, literal_limit=literal_limit).repartitionById(n, PID_COL)
    return lp.join(rp, [PID_COL] + on, kind).drop(PID_COL)


#: join type -> sides whose split keeps the result exact (the replicated side must not be
#: preserved: its unmatched rows would appear once per copy, and a semi/anti join outputs
#: left rows, so the left side may not be replicated).
_SPLITTABLE = {"inner": ("left", "right"), "left": ("left",), "right": ("right",),
               "left_semi": ("left",), "left_anti": ("left",), "full": ()}


def _split_join(left, right, on, kind, n, split_side, threshold, stats, sample_fraction,
                literal_limit) -> "DataFrame":
    allowed = _SPLITTABLE[kind]
    if split_side is None:
        split_side = "right" if kind == "right" else "left"
    if split_side not in ("left", "right"):
        raise ValueError(f"split_side={split_side!r}; expected 'left' or 'right'")
    if split_side not in allowed:
        other = "right" if split_side == "left" else "left"
        why = ("a full outer join preserves both sides" if kind == "full" else
               f"a {kind} join preserves the {other if kind != 'inner' else ''} side")
        raise ValueError(
            f"strategy='split' with how={kind!r} and split_side={split_side!r} would duplicate "
            f"rows: the {other} side is replicated but {why}; allowed split sides for "
            f"{kind!r}: {list(allowed) or 'none'} (use a key-grouping strategy such as "
            "'mixed' instead)")
    big, small = (left, right) if split_side == "left" else (right, left)
    if sample_fraction is None:
        sf = _conf(left, CONF_SAMPLE_FRACTION)
        sample_fraction = None if sf is None else _parse_float(sf, CONF_SAMPLE_FRACTION)
    if stats is None:
        keys, counts = _counts(big, on, sample_fraction)
        stats = KeyStats(_key_array(keys), counts)
    plan = plan_split(stats, n, split_side=split_side, threshold=threshold)
    bp = _split_pid(big, on, plan, replicate=False).repartitionById(n, PID_COL)
    sp = _split_pid(small, on, plan, replicate=True).repartitionById(n, PID_COL)
    lp, rp = (bp, sp) if split_side == "left" else (sp, bp)
    return lp.join(rp, [PID_COL] + on, kind).drop(PID_COL)


#: Name exported by :mod:`sparkbalance` (``sparkbalance.join`` is the RDD join).
join_df = join


# ---------------------------------------------------------------------------------------
# DataFrame methods and transform-friendly functions
# ---------------------------------------------------------------------------------------
def balanced_repartition(num_partitions: int, *cols: str, **kwargs: Any
                         ) -> Callable[["DataFrame"], "DataFrame"]:
    """``df.transform(balanced_repartition(8, "user"))``.

    Example
    -------
    >>> df.transform(balanced_repartition(8, "user", strategy="keygroups"))  # doctest: +SKIP
    """
    return lambda df: repartition(df, num_partitions, *cols, **kwargs)


def balanced_agg(cols: str | Sequence[str], *exprs: Any, **kwargs: Any
                 ) -> Callable[["DataFrame"], "DataFrame"]:
    """``df.transform(balanced_agg("user", F.sum("x")))`` = balanced ``groupBy(...).agg(...)``."""
    cols = [cols] if isinstance(cols, str) else list(cols)
    return lambda df: group_by(df, *cols, **kwargs).agg(*exprs)


def balanced_join(right: "DataFrame", on: str | Sequence[str], how: str = "inner",
                  **kwargs: Any) -> Callable[["DataFrame"], "DataFrame"]:
    """``df.transform(balanced_join(users, "user", strategy="split"))``."""
    return lambda df: join(df, right, on, how, **kwargs)


def _df_balanced_repartition(self, numPartitions: int, *cols: str, **kwargs: Any):
    return repartition(self, numPartitions, *cols, **kwargs)


def _df_balanced_group_by(self, *cols: str, **kwargs: Any):
    return group_by(self, *cols, **kwargs)


def _df_balanced_join(self, other, on, how: str = "inner", **kwargs: Any):
    return join(self, other, on, how, **kwargs)


for _fn in (_df_balanced_repartition, _df_balanced_group_by, _df_balanced_join):
    _fn._sparkbalance = True  # type: ignore[attr-defined]  # marks our own methods

_METHODS = {
    "balancedRepartition": _df_balanced_repartition,
    "balancedGroupBy": _df_balanced_group_by,
    "balancedJoin": _df_balanced_join,
}


def install_dataframe_methods() -> list[str]:
    """Attach opt-in ``DataFrame.balancedRepartition/balancedGroupBy/balancedJoin``.

    Spark's own methods are untouched; returns the names attached.

    Example
    -------
    >>> install_dataframe_methods()                          # doctest: +SKIP
    ['balancedRepartition', 'balancedGroupBy', 'balancedJoin']
    >>> df.balancedGroupBy("user", num_partitions=8).count()  # doctest: +SKIP
    """
    from pyspark.sql import DataFrame
    for name, fn in _METHODS.items():
        existing = getattr(DataFrame, name, None)
        if existing is not None and not getattr(existing, "_sparkbalance", False):
            raise RuntimeError(f"pyspark DataFrame already has {name!r} (not from "
                               "sparkbalance); refusing to replace it")
    for name, fn in _METHODS.items():
        setattr(DataFrame, name, fn)
    return list(_METHODS)


def uninstall_dataframe_methods() -> None:
    """Remove what :func:`install_dataframe_methods` attached."""
    from pyspark.sql import DataFrame
    for name, fn in _METHODS.items():
        if getattr(DataFrame, name, None) is fn:
            delattr(DataFrame, name)
