"""The skew check of the session-wide mode: does balancing this call pay?

A small Spark job reads a bounded prefix of the call's input — at most
``spark.sparkbalance.check.sampleRows`` rows (default 2048): for an RDD a few rows from each
of up to :data:`MAX_CHECK_PARTITIONS` input partitions spread over the input; for a
DataFrame the first rows of its first partitions, read in the JVM without a Python worker
(Spark's ``limit``) — and returns, per sampled row, a token of its key and the partition
**Spark itself** would send it to:
``pmod(hash(keys), n)`` for a DataFrame (Spark's hash partitioning, Murmur3 seed 42) and
``portable_hash(key) % n`` for an RDD (PySpark's default ``partitionFunc``). No full pass:
a task stops reading its partition after its share of rows. From that sample
:func:`predicted_gain` predicts how much shorter the slowest task would be if the keys were
placed by load instead of by hash; the call is balanced when the cut is at least
``spark.sparkbalance.check.minGain`` (default 25 %).

The prediction (rows as the unit of work, as the ``count`` weights of the adapters):

* *hot* keys are those seen at least ``max(MIN_HOT_SAMPLES, N / (HOT_SHARE_DIVISOR n))``
  times in the ``N`` sampled rows: heavy enough for their sampled count to mean something,
  and too heavy to vanish among the keys of one partition;
* plain Spark's slowest task ≈ ``max_p (hot rows hashed to p) + (other rows) / n``;
* a balanced placement's slowest task ≈ ``max(heaviest key, N / n)`` (no key-grouping can
  do better; Mixed gets within θ = 8 % of it, Fang et al. §3);
* gain = plain / balanced.

With uniform keys (no hot key) the gain is exactly 1 and the call stays plain, whatever the
sampling noise.

Examples
--------
>>> import numpy as np
>>> keys = np.array([0] * 60 + list(range(1, 41)))      # key 0: 60 % of the rows
>>> homes = keys % 4                                     # where Spark's hash sends each
>>> round(predicted_gain(keys, homes, 4), 2)            # slowest 70 -> 60 rows
1.17
>>> predicted_gain(np.arange(400), np.arange(400) % 4, 4)   # uniform: stays plain
1.0
"""
from __future__ import annotations

import math
from itertools import islice
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

__all__ = ["predicted_gain", "sample_dataframe", "sample_rdd", "has_shuffle", "partitions_to_read",
           "MAX_CHECK_PARTITIONS", "MIN_HOT_SAMPLES", "HOT_SHARE_DIVISOR", "MIN_SAMPLE_ROWS"]

#: Input partitions the check reads from at most (evenly spaced over the input).
MAX_CHECK_PARTITIONS = 16
#: A key is hot only when the sample saw it at least this often (its count then has a
#: relative error of ~1/sqrt(8) = 35 % or better).
MIN_HOT_SAMPLES = 8
#: ... and holds at least 1 / (HOT_SHARE_DIVISOR n) of the rows: a quarter of a fair share.
HOT_SHARE_DIVISOR = 4
#: Fewer sampled rows than this say nothing: the call stays plain.
MIN_SAMPLE_ROWS = 32


def predicted_gain(tokens: Sequence[Any] | np.ndarray, homes: Sequence[int] | np.ndarray,
                   num_partitions: int) -> float:
    """Plain Spark's predicted slowest task over a balanced placement's (>= 1 when hot keys
    collide; exactly 1.0 when no key is hot).

    ``tokens[i]`` identifies the key of sampled row i, ``homes[i]`` is the partition Spark
    sends it to. See the module docstring for the model.

    Examples
    --------
    >>> predicted_gain([1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2], [0] * 16, 2)
    2.0
    """
    n = int(num_partitions)
    homes = np.asarray(homes, dtype=np.int64)
    total = homes.shape[0]
    if total == 0:
        return 1.0
    _, first, inverse, counts = np.unique(_tokens(tokens), return_index=True,
                                          return_inverse=True, return_counts=True)
    del inverse
    hot = counts >= max(MIN_HOT_SAMPLES, total / (HOT_SHARE_DIVISOR * n))
    if not hot.any():
        return 1.0
    hot_rows = counts[hot].astype(np.float64)
    plain = np.bincount(homes[first[hot]], weights=hot_rows, minlength=n)
    plain = plain + (total - hot_rows.sum()) / n
    balanced = max(float(hot_rows.max()), total / n)
    return float(max(1.0, plain.max() / balanced))


def _tokens(tokens: Sequence[Any] | np.ndarray) -> np.ndarray:
    """Tokens as an array ``np.unique`` can sort: as given when numeric, else arbitrary
    hashable keys (an RDD's) numbered by first appearance."""
    if isinstance(tokens, np.ndarray) and tokens.dtype != object and tokens.ndim == 1:
        return tokens
    index: dict[Any, int] = {}
    items = list(tokens)
    return np.fromiter((index.setdefault(t, len(index)) for t in items), dtype=np.int64,
                       count=len(items))


def partitions_to_read(num_input: int, rows: int) -> tuple[list[int], int]:
    """``(input partitions to read, rows to read from each)``: up to
    :data:`MAX_CHECK_PARTITIONS` partitions evenly spaced, ``ceil(rows / m)`` rows each.

    Examples
    --------
    >>> partitions_to_read(100, 2048)
    ([0, 6, 12, 18, 25, 31, 37, 43, 50, 56, 62, 68, 75, 81, 87, 93], 128)
    >>> partitions_to_read(2, 100)
    ([0, 1], 50)
    """
    m = max(1, min(int(num_input), MAX_CHECK_PARTITIONS))
    parts = sorted({int(i * num_input / m) for i in range(m)})
    return parts, int(math.ceil(rows / len(parts)))


class _Prefix:
    """runJob body: the first ``rows`` records of a partition, as ``(token, home)``."""

    def __init__(self, rows: int, num_partitions: int | None) -> None:
        self.rows, self.n = rows, num_partitions

    def __call__(self, records: Any) -> list:
        if self.n is None:            # DataFrame rows: (xxhash64 of the key, Spark's home)
            return [(r[0], r[1]) for r in islice(records, self.rows)]
        from pyspark.rdd import portable_hash   # PySpark's default partitionFunc
        return [(kv[0], portable_hash(kv[0]) % self.n) for kv in islice(records, self.rows)]


def _split(pairs: list) -> tuple[list, np.ndarray]:
    return [p[0] for p in pairs], np.array([p[1] for p in pairs], dtype=np.int64)


def sample_rdd(rdd: Any, num_partitions: int, rows: int) -> tuple[list, np.ndarray]:
    """``(keys, homes)`` of a bounded prefix sample of a pair RDD (one job, few tasks)."""
    parts, each = partitions_to_read(rdd.getNumPartitions(), rows)
    return _split(rdd.context.runJob(rdd, _Prefix(each, num_partitions), parts))


def sample_dataframe(df: "DataFrame", cols: Sequence[Any], num_partitions: int,
                     rows: int) -> tuple[np.ndarray, np.ndarray]:
    """``(key tokens, homes)`` of the first ``rows`` rows of ``df``'s key columns: the token
    is ``xxhash64(keys)``, the home Spark's ``pmod(hash(keys), n)``.

    Runs in the JVM only (no Python worker): Spark's ``limit`` then ``collect`` reads the
    first input partition, then 4 times as many, ... until it has ``rows`` rows
    (``spark.sql.limit.scaleUpFactor``), so a large input is read for a prefix only.
    """
    from pyspark.sql import functions as F
    got = df.select(F.xxhash64(*cols).alias("t"),
                    F.pmod(F.hash(*cols), F.lit(int(num_partitions))).alias("p")
                    ).limit(int(rows)).collect()
    return (np.array([r[0] for r in got], dtype=np.int64),
            np.array([r[1] for r in got], dtype=np.int64))


def has_shuffle(df: "DataFrame") -> bool:
    """Whether computing any partition of ``df`` runs a shuffle first (then even a prefix
    costs a full pass over the shuffle's input, and the check is not cheap).

    Walks the physical plan (AQE's input plan) down to its leaves; a cached relation is a
    leaf (its shuffles, if any, already ran or run once for every reader).
    """
    plan = df._jdf.queryExecution().executedPlan()
    if plan.getClass().getSimpleName() == "AdaptiveSparkPlanExec":
        plan = plan.inputPlan()
    stack = [plan]
    while stack:
        node = stack.pop()
        if node.getClass().getSimpleName() == "ShuffleExchangeExec":
            return True
        children = node.children()
        stack.extend(children.apply(i) for i in range(children.size()))
    return False
