"""Where a split window's cold keys go: a few listed, the rest by Spark's own hash.

A cold key (not cut into segments) must land whole on one partition; which one only
balances the tasks. The keys the statistics pass saw often enough to matter (*warm*: more
than :data:`WARM_SHARE` of a partition's mean rows) are listed and placed, heaviest first,
on the partition with the fewest rows (LPT); every other key goes where plain Spark's hash
partitioning sends it, ``pmod(hash(key), n)`` (Murmur3, compiled by Spark, no allocation per
row). Many small keys spread evenly under any uniform hash, so the listed keys are the only
ones whose place changes the balance.

The expression is one SQL ``CASE`` (one py4j round trip on classic PySpark); the listed keys
are tested only on the rows of a key in the list (an ``IN`` test Spark turns into a hash-set
lookup), so a row of a small key pays one lookup and one hash. A stable key hash (the one
:func:`sparkbalance.spark.sql.route.partition_id` spells, a CRC32 over the key's bytes
built per row) is not needed here: nothing outside this query routes by it, and it cost
the map stage of the split more CPU than plain Spark's whole exchange (measured by
``integration/benchmarks/bench_windows.py --metrics``).

Examples
--------
>>> loads, warm = place_warm(["a", "b"], np.array([50.0, 20.0]), 100.0, 0.0, 4)
>>> warm, loads.tolist()
([('a', 0), ('b', 1)], [57.5, 27.5, 7.5, 7.5])
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from sparkbalance.spark.sql.hash_columns import quoted as _q
from sparkbalance.spark.sql.route import NULL_PARTITION

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column

__all__ = ["WARM_SHARE", "MAX_WARM", "place_warm", "cold_partition"]

#: A cold key holding more than this share of a partition's mean rows is listed and placed.
WARM_SHARE = 0.1
#: At most this many keys per partition are listed (the heaviest).
MAX_WARM = 4


def place_warm(keys: Sequence[Any], counts: np.ndarray, total: float, null_rows: float,
               n: int) -> tuple[np.ndarray, list[tuple[Any, int]]]:
    """(estimated rows per partition, [(key, partition)] of the listed keys).

    ``keys``/``counts``: the cold keys seen by the statistics pass, heaviest first;
    ``total``: the estimated rows of all cold keys (seen or not). The unlisted rest is
    assumed spread evenly by the hash; null keys go to partition 0, as plain Spark's hash
    partitioning of a null sends them all to one partition.
    """
    counts = np.asarray(counts, dtype=np.float64)
    limit = WARM_SHARE * max(total, 1.0) / n
    m = min(len(keys), MAX_WARM * n, int(np.count_nonzero(counts > limit)))
    rest = max(0.0, float(total) - float(counts[:m].sum()) - float(null_rows))
    loads = np.full(n, rest / n)
    loads[NULL_PARTITION] += null_rows
    warm = []
    for key, c in zip(keys[:m], counts[:m]):   # heaviest first (LPT)
        p = int(np.argmin(loads))
        warm.append((key, p))
        loads[p] += c
    return loads, warm


def cold_partition(pcols: Sequence[str], ptypes: Sequence[Any], warm: list[tuple[Any, int]],
                   n: int) -> str:
    """SQL: the partition of a cold row (INT): a listed key's, a null key's
    (:data:`NULL_PARTITION`), else ``pmod(hash(key), n)``.

    A float or double key is hashed as ``key + 0.0`` (-0.0 and 0.0 are one window
    partition, as Spark's normalisation of window keys makes them). Raises TypeError when a
    listed key has no SQL literal form, ValueError for a key type holding floats inside a
    struct, array or map (the caller then routes by the stable hash).
    """
    from sparkbalance.spark.window.segments import _sql_lit
    cols = [_q(c) for c in pcols]
    hashed = []
    for c, t in zip(cols, ptypes):
        name = t.simpleString()
        if name in ("float", "double"):
            hashed.append(f"(CAST({c} AS DOUBLE) + CAST(0 AS DOUBLE))")
        elif "float" in name or "double" in name:
            raise ValueError(f"key type {name} holds floats inside; expected a scalar float")
        else:
            hashed.append(c)
    out = [f"WHEN {' OR '.join(f'{c} IS NULL' for c in cols)} THEN {NULL_PARTITION}"]
    if warm:
        single = len(cols) == 1
        arms, lits = [], []
        for key, p in warm:
            vals = [_sql_lit(v, t) for v, t in zip((key,) if single else key, ptypes)]
            lits.append(vals[0] if single else f"({', '.join(vals)})")
            cond = " AND ".join(f"{c} = {v}" for c, v in zip(cols, vals))
            arms.append(f"WHEN {cond} THEN {int(p)}")
        lhs = cols[0] if single else f"({', '.join(cols)})"
        out.append(f"WHEN {lhs} IN ({', '.join(lits)}) THEN CASE {' '.join(arms)} END")
    return f"CASE {' '.join(out)} ELSE pmod(hash({', '.join(hashed)}), {int(n)}) END"
