"""Rows to the partition a column names, in one exchange, on Spark 3.5 and 4.x alike.

Spark 4.1+ has ``df.repartitionById(n, pid)``: row to partition ``pid``. Spark 3.5 has only
hash partitioning, ``df.repartition(n, c)``, which sends a row to
``pmod(hash(c), n)`` — Spark's Murmur3 (x86, 32 bit) with seed 42. So :func:`place` maps
each target ``p`` to a precomputed INT value ``v_p`` whose Spark hash lands on ``p``
(:func:`route_values`: the smallest such non-negative int, found by hashing 0, 1, 2, ... on
the driver) and repartitions by it. Still one exchange, no Python UDF and no round trip
through the RDD API: the lookup ``v[pid]`` is a constant array in the query.

The column keeps its name and now holds ``v_pid``; as a function of ``pid`` (distinct
targets have distinct values) it groups and joins exactly as ``pid`` does, and Spark sees the
output hash-partitioned on it, so a later ``groupBy(pid, key)`` or join on ``(pid, key)``
adds no exchange.

Examples
--------
>>> [spark_hash_int(v) % 4 for v in route_values(4)]
[0, 1, 2, 3]
"""
from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from sparkbalance.routing.hash import HashPartitioner

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

    from sparkbalance.routing.base import PartitionFunction

__all__ = ["SPARK_HASH_SEED", "spark_hash_int", "spark_hash_int_array", "spark_hash_array",
           "route_values",
           "has_repartition_by_id", "place", "spark_places", "place_as_spark"]

#: Seed of Spark's ``hash`` and of its hash partitioning (``Murmur3Hash(_, 42)``).
SPARK_HASH_SEED = 42
_M32 = 0xFFFFFFFF
_C1, _C2 = 0xCC9E2D51, 0x1B873593


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return ((x << np.uint64(r)) | (x >> np.uint64(32 - r))) & np.uint64(_M32)


def spark_hash_array(values: np.ndarray, long: bool = False,
                     seed: int = SPARK_HASH_SEED) -> np.ndarray:
    """Spark's ``hash`` of many INT (``Murmur3_x86_32.hashInt``) or, with ``long``, BIGINT
    values (``hashLong``: the low then the high 32-bit word), signed 32-bit results.

    Examples
    --------
    >>> spark_hash_array(np.array([0]), long=True)   # SELECT hash(0L)
    array([-1670924195])
    """
    m = np.uint64(_M32)
    u = np.asarray(values, dtype=np.int64).astype(np.uint64)

    def mix(h: np.ndarray, k: np.ndarray) -> np.ndarray:
        k = (_rotl((k * np.uint64(_C1)) & m, 15) * np.uint64(_C2)) & m
        return (_rotl(h ^ k, 13) * np.uint64(5) + np.uint64(0xE6546B64)) & m

    h = mix(np.full(u.shape, np.uint64(seed & _M32)), u & m)
    if long:
        h = mix(h, (u >> np.uint64(32)) & m)
    h ^= np.uint64(8 if long else 4)  # fmix with the input length in bytes
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & m
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & m
    h ^= h >> np.uint64(16)
    return h.astype(np.uint32).astype(np.int32).astype(np.int64)


def spark_hash_int_array(values: np.ndarray, seed: int = SPARK_HASH_SEED) -> np.ndarray:
    """Spark's ``hash(int_column)`` of many ints: ``Murmur3_x86_32.hashInt(v, seed)``.

    Examples
    --------
    >>> spark_hash_int_array(np.array([0, 1]))   # SELECT hash(0), hash(1)
    array([ 933211791, -559580957])
    """
    return spark_hash_array(values, long=False, seed=seed)


def spark_hash_int(value: int, seed: int = SPARK_HASH_SEED) -> int:
    """Spark's ``hash(value)`` of one INT value (signed 32-bit result).

    Examples
    --------
    >>> spark_hash_int(0)
    933211791
    """
    return int(spark_hash_int_array(np.array([value]), seed)[0])


@lru_cache(maxsize=64)
def route_values(num_partitions: int) -> tuple[int, ...]:
    """``v`` with ``pmod(hash(v[p]), n) == p`` for every ``p < n``: the smallest such ints.

    Hashes 0, 1, 2, ... in blocks until every target has a value; a uniform hash needs about
    ``n ln n`` draws (the coupon collector), e.g. ~10^5 for n = 10^4, a few milliseconds.

    Examples
    --------
    >>> route_values(3)
    (0, 1, 11)
    """
    n = int(num_partitions)
    if n < 1:
        raise ValueError(f"num_partitions={num_partitions!r}; expected an int >= 1")
    out = np.full(n, -1, dtype=np.int64)
    missing, start = n, 0
    block = max(1024, 4 * n)
    while missing:
        cand = np.arange(start, start + block, dtype=np.int64)
        target = np.mod(spark_hash_int_array(cand), n)  # pmod: non-negative
        hit, first = np.unique(target, return_index=True)  # smallest candidate per target
        fill = out[hit] < 0
        out[hit[fill]] = cand[first[fill]]
        missing = int(np.count_nonzero(out < 0))
        start += block
        if start > (1 << 31) - block:  # pragma: no cover - impossible for a 32-bit hash
            raise RuntimeError(f"no INT value hashes to some partition of n={n}")
    return tuple(int(v) for v in out)


def has_repartition_by_id(df: "DataFrame") -> bool:
    """True when this PySpark has ``DataFrame.repartitionById`` (Spark 4.1 and later)."""
    return callable(getattr(type(df), "repartitionById", None))


def place(df: "DataFrame", num_partitions: int, pid_col: str, *,
          by_id: bool | None = None) -> "DataFrame":
    """``df`` with row r in partition ``r[pid_col]`` (an INT in ``[0, n)``), one exchange.

    ``by_id=None`` uses ``repartitionById`` where PySpark has it, else hash partitioning on
    the route value (module docstring); ``by_id=False`` forces the latter (tests compare the
    two on Spark 4). On the hash path ``pid_col`` holds the route value afterwards.

    Examples
    --------
    >>> placed = place(df.withColumn("pid", pid_expr), 8, "pid")      # doctest: +SKIP
    >>> placed.rdd.getNumPartitions()                                  # doctest: +SKIP
    8
    """
    from pyspark.sql import functions as F
    n = int(num_partitions)
    if by_id is None:
        by_id = has_repartition_by_id(df)
    if by_id:
        return df.repartitionById(n, pid_col)
    values = F.expr("array(" + ",".join(map(str, route_values(n))) + ")")
    route = F.element_at(values, (F.col(pid_col) + F.lit(1)).cast("int")).cast("int")
    return df.withColumn(pid_col, route).repartition(n, pid_col)


def spark_places(record: Any, f: "PartitionFunction") -> bool:
    """True when strategy "auto" (``record``, the resolved strategy) fitted plain hashing
    ``f``: no key is heavy enough to unbalance a partition, so Spark's own exchange
    (:func:`place_as_spark`) balances as well as any and costs nothing more.

    Examples
    --------
    >>> from sparkbalance import strategies
    >>> spark_places(strategies.resolve("auto"), HashPartitioner(4))
    True
    >>> spark_places(strategies.resolve("hash"), HashPartitioner(4))
    False
    """
    spec = getattr(record, "spec", None)
    return spec is not None and spec.name == "auto" and type(f) is HashPartitioner


def place_as_spark(df: "DataFrame", num_partitions: int, cols: Sequence[str],
                   pid_col: str | None = None) -> "DataFrame":
    """``df.repartition(n, *cols)``, plain Spark's own exchange, plus ``pid_col`` = 0 (when
    given).

    The constant column keeps the shape of :func:`place`'s output (callers group by
    ``(pid_col, *cols)`` and drop it); Spark's hash partitioning on ``cols`` already
    clusters every such grouping, so it adds no exchange, and a projection that drops it
    again leaves the plan of ``df.repartition(n, *cols)``.

    Examples
    --------
    >>> place_as_spark(df, 8, ["k"], "pid").drop("pid")   # == df.repartition(8, "k")  # doctest: +SKIP
    """
    from pyspark.sql import functions as F
    refs = [df["`" + c.replace("`", "``") + "`"] for c in cols]
    out = df.repartition(int(num_partitions), *refs)
    return out if pid_col is None else out.withColumn(pid_col, F.lit(0))
