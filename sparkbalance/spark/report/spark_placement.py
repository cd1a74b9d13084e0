"""Where plain Spark would have put each key: the "before" of a balance record.

A record's *before* loads answer "what would my job have done without sparkbalance?", so
they use Spark's own placement for the API the user replaced, not sparkbalance's stable hash:

* DataFrame ``repartition(n, cols)`` / ``groupBy(cols)`` / a join's exchange:
  ``pmod(hash(cols), n)``, Spark's Murmur3 (x86, 32 bit, seed 42) of each column's value in
  its SQL type, the hash of one column seeding the next, a null column skipped
  (``Murmur3HashFunction``);
* pair RDD ``partitionBy`` / ``reduceByKey`` / ...: ``portable_hash(key) % n`` as PySpark's
  workers compute it, whose string hash depends on the workers' ``PYTHONHASHSEED``
  (``sc.environment``, ``"0"`` by default): when the driver's own ``hash`` differs (hash
  randomization on), string keys are hashed in a short child interpreter started with the
  workers' seed.

Both return ``None`` where they cannot be exact (a SQL type not handled here, a key column
given as an expression); the record then falls back to sparkbalance's stable hash and says
so in ``before_placement``.

Examples
--------
>>> murmur3_hash([0], ["bigint"]), murmur3_hash(["a"], ["string"])   # SELECT hash(0L), hash('a')
(-1670924195, 1485273170)
>>> df_partitions(np.array([0, 1, 2]), ["bigint"], 8).tolist()
[5, 5, 0]
"""
from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys
from typing import Any, Sequence

import numpy as np

# Spark's vectorised Murmur3 of INT / BIGINT values (one copy, the placement's).
from sparkbalance.spark.sql.placement import SPARK_HASH_SEED, spark_hash_array

__all__ = ["SPARK_HASH_SEED", "murmur3_hash", "df_partitions", "portable_hash",
           "rdd_partitions", "spark_partitions", "before_placement"]

_M = 0xFFFFFFFF
_C1, _C2 = 0xCC9E2D51, 0x1B873593
#: SQL types hashed as ``hashInt`` of the value / as ``hashLong``.
_INT_TYPES = frozenset({"int", "integer", "smallint", "tinyint", "boolean", "date"})
_LONG_TYPES = frozenset({"bigint", "long"})
_EPOCH_ORDINAL = 719163  # datetime.date(1970, 1, 1).toordinal()
#: CPython hashes an int as its residue modulo this prime (sys.hash_info.modulus), sign kept.
_HASH_MODULUS = (1 << 61) - 1


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M


def _mix_k1(k: int) -> int:
    return (_rotl((k * _C1) & _M, 15) * _C2) & _M


def _mix_h1(h: int, k: int) -> int:
    return (_rotl(h ^ k, 13) * 5 + 0xE6546B64) & _M


def _fmix(h: int, length: int) -> int:
    h ^= length
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M
    return h ^ (h >> 16)


def _hash_int(v: int, seed: int) -> int:
    return _fmix(_mix_h1(seed, _mix_k1(v & _M)), 4)


def _hash_long(v: int, seed: int) -> int:
    h = _mix_h1(seed, _mix_k1(v & _M))
    return _fmix(_mix_h1(h, _mix_k1((v >> 32) & _M)), 8)


def _hash_bytes(b: bytes, seed: int) -> int:
    """``Murmur3_x86_32.hashUnsafeBytes``: 4-byte little-endian words, then each trailing
    byte (sign-extended) as a word of its own (Spark's variant, not the reference tail)."""
    h, aligned = seed, len(b) - len(b) % 4
    for (w,) in struct.iter_unpack("<I", b[:aligned]):
        h = _mix_h1(h, _mix_k1(w))
    for x in b[aligned:]:
        h = _mix_h1(h, _mix_k1((x - 256 if x > 127 else x) & _M))
    return _fmix(h, len(b))


def _hash_value(v: Any, sql_type: str, seed: int) -> int | None:
    """Spark's hash of one non-null value of ``sql_type`` with ``seed`` (unsigned 32 bit), or
    None when the type is not handled here."""
    if sql_type in _INT_TYPES:
        if sql_type == "date":
            v = v.toordinal() - _EPOCH_ORDINAL
        return _hash_int(int(v), seed)
    if sql_type in _LONG_TYPES:
        return _hash_long(int(v), seed)
    if sql_type == "string":
        return _hash_bytes(str(v).encode("utf-8"), seed)
    if sql_type == "binary":
        return _hash_bytes(bytes(v), seed)
    if sql_type == "double":
        d = 0.0 if v == 0.0 else float(v)  # -0.0 hashes as 0.0
        return _hash_long(struct.unpack("<q", struct.pack("<d", d))[0], seed)
    if sql_type == "float":
        f = 0.0 if v == 0.0 else float(v)
        return _hash_int(struct.unpack("<i", struct.pack("<f", f))[0], seed)
    return None


def _signed(h: int) -> int:
    return h - (1 << 32) if h & 0x80000000 else h


def murmur3_hash(key: Sequence[Any], sql_types: Sequence[str],
                 seed: int = SPARK_HASH_SEED) -> int | None:
    """Spark SQL's ``hash(c1, c2, ...)`` of one row's key values (signed 32 bit), or None
    when a column's type is not handled (decimal, timestamp, nested types).

    Examples
    --------
    >>> murmur3_hash([1, "x"], ["int", "string"]) == murmur3_hash([1, "x"], ["int", "string"])
    True
    >>> murmur3_hash([None], ["string"])   # a null column leaves the seed
    42
    """
    h = seed & _M
    for v, t in zip(key, sql_types):
        if v is None:
            continue
        h = _hash_value(v, t, h)
        if h is None:
            return None
    return _signed(h)


def df_partitions(keys: np.ndarray, sql_types: Sequence[str], n: int) -> np.ndarray | None:
    """``pmod(hash(cols), n)`` of each key (a tuple per key for several columns), or None
    when a column's type is not handled.

    Examples
    --------
    >>> df_partitions(np.array([("a", 1)], dtype=object), ["string", "int"], 4) is not None
    True
    """
    types = [str(t).lower() for t in sql_types]
    arr = np.asarray(keys) if not isinstance(keys, np.ndarray) else keys
    if len(types) == 1 and types[0] in _INT_TYPES | _LONG_TYPES and arr.dtype.kind in "iu" \
            and types[0] != "date":  # the common integer key: vectorised, same answers
        return np.mod(spark_hash_array(arr.astype(np.int64), types[0] in _LONG_TYPES), n)
    out = np.empty(len(keys), dtype=np.int64)
    many = len(types) > 1
    for i, k in enumerate(keys.tolist() if isinstance(keys, np.ndarray) else keys):
        h = murmur3_hash(tuple(k) if many else (k,), types)
        if h is None:
            return None
        out[i] = h % n
    return out


# ------------------------------------------------------------------------- pair RDDs
def portable_hash(x: Any) -> int:
    """PySpark's ``portable_hash`` without its ``PYTHONHASHSEED`` check (the caller makes
    sure the interpreter hashes strings as the workers do).

    Examples
    --------
    >>> portable_hash(None), portable_hash((None, 1)) & 0xffffffff
    (0, 219750521)
    """
    if x is None:
        return 0
    if isinstance(x, tuple):
        h = 0x345678
        for i in x:
            h ^= portable_hash(i)
            h *= 1000003
            h &= sys.maxsize
        h ^= len(x)
        return -2 if h == -1 else int(h)
    return hash(x)


def _seeded(x: Any) -> bool:
    """True when ``hash(x)`` depends on the interpreter's hash seed (str, bytes inside)."""
    if isinstance(x, (str, bytes)):
        return True
    return isinstance(x, tuple) and any(_seeded(i) for i in x)


_CHILD = ("import pickle, sys\n"
          "from sparkbalance.spark.report.spark_placement import portable_hash\n"
          "keys, n = pickle.load(sys.stdin.buffer)\n"
          "pickle.dump([portable_hash(k) % n for k in keys], sys.stdout.buffer)\n")


def rdd_partitions(keys: Sequence[Any], n: int, worker_seed: str | None = "0"
                   ) -> np.ndarray | None:
    """``portable_hash(key) % n`` of each key as PySpark's workers compute it, their
    ``PYTHONHASHSEED`` being ``worker_seed``; None when that cannot be reproduced (a
    random worker seed with string keys, or the child interpreter failing).

    Examples
    --------
    >>> rdd_partitions([0, 1, 9, (None, 1)], 8).tolist()
    [0, 1, 1, 1]
    """
    if isinstance(keys, np.ndarray) and keys.dtype.kind == "i":  # CPython's int hash, vectorised
        k = keys.astype(np.int64)
        mag = k.astype(np.uint64)
        neg = k < 0
        mag[neg] = ~mag[neg] + np.uint64(1)  # |k| without overflow at -2**63
        h = np.where(neg, -1, 1) * (mag % np.uint64(_HASH_MODULUS)).astype(np.int64)
        return np.mod(np.where(h == -1, -2, h), n)
    items = keys.tolist() if isinstance(keys, np.ndarray) else list(keys)
    if not any(_seeded(k) for k in items):
        return np.fromiter((portable_hash(k) % n for k in items), np.int64, len(items))
    if worker_seed is None or not str(worker_seed).isdigit():
        return None
    if sys.flags.hash_randomization == 0 and str(worker_seed) == "0":
        return np.fromiter((portable_hash(k) % n for k in items), np.int64, len(items))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    env = dict(os.environ, PYTHONHASHSEED=str(worker_seed),
               PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    try:
        p = subprocess.run([sys.executable, "-c", _CHILD], input=pickle.dumps((items, n)),
                           env=env, capture_output=True, timeout=60, check=True)
        return np.asarray(pickle.loads(p.stdout), dtype=np.int64)
    except Exception:  # a report must never fail the operation: fall back, said so
        return None


# ------------------------------------------------------------------------- the record's view
def spark_partitions(data: Any, cols: Any, keys: np.ndarray, n: int
                     ) -> tuple[np.ndarray | None, str]:
    """Where plain Spark puts ``keys`` for ``data`` (a DataFrame keyed by ``cols``, or a
    pair RDD) over ``n`` partitions, and the placement's name for the record; ``(None,
    reason)`` when it cannot be reproduced here.

    Examples
    --------
    >>> spark_partitions(None, None, np.array([1]), 4)
    (None, 'unknown input')
    """
    if hasattr(data, "schema") and hasattr(data, "sparkSession"):
        names = [cols] if isinstance(cols, str) else list(cols or ())
        if not names or not all(isinstance(c, str) for c in names):
            return None, "key columns given as expressions"
        try:
            types = [data.schema[c].dataType.simpleString() for c in names]
        except Exception:  # a nested or unknown name: Spark's error is the adapter's
            return None, "key columns not in the schema"
        where = df_partitions(keys, types, n)
        text = f"Spark: pmod(hash({', '.join(names)}), {n})"
        return (where, text) if where is not None else (None, f"{text}: a type not handled")
    ctx = getattr(data, "context", None)
    if ctx is not None and hasattr(data, "getNumPartitions"):
        seed = (getattr(ctx, "environment", None) or {}).get("PYTHONHASHSEED", "0")
        where = rdd_partitions(keys, n, seed)
        text = f"Spark: portable_hash(key) % {n}"
        return (where, text) if where is not None else (None, f"{text}: worker hash seed "
                                                              f"{seed!r} not reproducible")
    return None, "unknown input"


def before_placement(keys: np.ndarray, n: int, current: Any = None,
                     spark_where: np.ndarray | None = None, placement: str | None = None
                     ) -> tuple[np.ndarray, int, str]:
    """The "before" of a plan record: (partition of each key, partition count, what placed
    them). The partition function in use when the caller gave one (``current=``), else plain
    Spark's placement (``spark_where``), else sparkbalance's stable hash, said so.

    Examples
    --------
    >>> before_placement(np.array([3, 4]), 2, spark_where=np.array([1, 0]), placement="Spark")
    (array([1, 0]), 2, 'Spark')
    """
    if current is not None and not current.splits_keys:
        return (current.assign(keys), current.num_partitions,
                f"current partition function ({type(current).__name__})")
    if spark_where is not None and len(spark_where) == len(keys):
        return np.asarray(spark_where, dtype=np.int64), n, placement or "Spark's hash"
    from sparkbalance.routing.hash import HashPartitioner
    return (HashPartitioner(n).assign(keys), n, "sparkbalance's stable hash (Spark's own "
            f"placement unknown: {placement or 'not computed'})")
