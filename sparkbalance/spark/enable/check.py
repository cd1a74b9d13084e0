"""The skew check of the session-wide mode: does balancing this call pay?

One small Spark job reads a bounded prefix of the call's input — at most
``spark.sparkbalance.check.sampleRows`` rows (default 2048) — and is the *only* statistics
the call gathers: it is strategy "auto"'s bounded sample (:mod:`sparkbalance.spark.rdd.bounded`
for an RDD: the first records of up to :data:`MAX_CHECK_PARTITIONS` input partitions spread
over the input; its DataFrame twin
:func:`sparkbalance.spark.sql.keystats.bounded_key_stats`: Spark's ``limit`` in the JVM, no
Python worker), with each counted key's partition under **Spark's own** placement:
``pmod(hash(keys), n)`` for a DataFrame (Spark's hash partitioning, Murmur3 seed 42, a
column of the sampled rows) and ``portable_hash(key) % n`` for an RDD (PySpark's default
``partitionFunc``, computed in the sampling tasks). No full pass: a task stops reading its
partition after its share of rows. From that sample :func:`predicted_gain` predicts how much
shorter the slowest task would be if the keys were placed by load instead of by hash; the
call is balanced when the cut is at least ``spark.sparkbalance.check.minGain`` (default
25 %), and a DataFrame call then plans from the same sample (:attr:`Sample.stats`, strategy
"auto"'s :func:`sparkbalance.strategies.auto.fit_sampled`): one small job, then the job.

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

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from sparkbalance.stats.keystats import KeyStats

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

__all__ = ["predicted_gain", "listed_gain", "Sample", "sample_dataframe", "sample_rdd",
           "has_shuffle", "MAX_CHECK_PARTITIONS", "MIN_HOT_SAMPLES", "HOT_SHARE_DIVISOR",
           "MIN_SAMPLE_ROWS", "HOME_COLUMN"]

#: Input partitions an RDD check reads from at most (evenly spaced over the input).
MAX_CHECK_PARTITIONS = 16
#: A key is hot only when the sample saw it at least this often (its count then has a
#: relative error of ~1/sqrt(8) = 35 % or better).
MIN_HOT_SAMPLES = 8
#: ... and holds at least 1 / (HOT_SHARE_DIVISOR n) of the rows: a quarter of a fair share.
HOT_SHARE_DIVISOR = 4
#: Fewer sampled rows than this say nothing: the call stays plain.
MIN_SAMPLE_ROWS = 32
#: The sampled rows' column holding Spark's partition of their key (a suffix is added when
#: the DataFrame has a column of that name).
HOME_COLUMN = "__sparkbalance_home"


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
    homes = np.asarray(homes, dtype=np.int64)
    if homes.shape[0] == 0:
        return 1.0
    _, first, counts = np.unique(_tokens(tokens), return_index=True, return_counts=True)
    return listed_gain(counts, homes[first], homes.shape[0], num_partitions)


def listed_gain(counts: Sequence[int] | np.ndarray, homes: Sequence[int] | np.ndarray,
                rows: int, num_partitions: int) -> float:
    """:func:`predicted_gain` from a listing: ``counts[j]`` sampled rows of listed key j,
    ``homes[j]`` its partition under Spark's placement, ``rows`` sampled rows in all (the
    unlisted ones are light keys, spread evenly). Exact as long as every hot key is listed.

    Examples
    --------
    >>> listed_gain([8, 8], [0, 0], 16, 2)
    2.0
    """
    n = int(num_partitions)
    counts = np.asarray(counts, dtype=np.float64)
    homes = np.asarray(homes, dtype=np.int64)
    if rows <= 0:
        return 1.0
    hot = counts >= max(MIN_HOT_SAMPLES, rows / (HOT_SHARE_DIVISOR * n))
    if not hot.any():
        return 1.0
    hot_rows = counts[hot]
    plain = np.bincount(homes[hot], weights=hot_rows, minlength=n)
    plain = plain + (rows - hot_rows.sum()) / n
    balanced = max(float(hot_rows.max()), rows / n)
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


@dataclass(frozen=True)
class Sample:
    """What the check read: the keys it counted (``counts``; ``homes``: each one's partition
    under Spark's placement), the ``rows`` read in all, and for a DataFrame the
    :class:`KeyStats` strategy "auto" plans from (None: the adapter gathers its own, e.g.
    an RDD shuffle counting its keys at no extra pass)."""

    counts: np.ndarray
    homes: np.ndarray
    rows: int
    stats: KeyStats | None = None

    def gain(self, num_partitions: int) -> float:
        """:func:`listed_gain` of this sample."""
        return listed_gain(self.counts, self.homes, self.rows, num_partitions)


def sample_rdd(rdd: Any, num_partitions: int, rows: int) -> Sample:
    """The bounded prefix sample of a pair RDD, with PySpark's homes
    (:func:`sparkbalance.spark.rdd.bounded.sample_counts`: one job over at most
    :data:`MAX_CHECK_PARTITIONS` partitions)."""
    from sparkbalance.spark.rdd.bounded import sample_counts
    total, counts, homes = sample_counts(rdd, records=rows, partitions=MAX_CHECK_PARTITIONS,
                                         homes_for=int(num_partitions))
    keys = list(counts)
    return Sample(np.array([counts[k] for k in keys], dtype=np.int64),
                  np.array([homes[k] for k in keys], dtype=np.int64), int(total))


def sample_dataframe(df: "DataFrame", cols: Sequence[str], num_partitions: int,
                     rows: int) -> Sample:
    """The bounded sample of strategy "auto" over the key columns
    (:func:`sparkbalance.spark.sql.keystats.bounded_key_stats`: the first ``rows`` rows
    with non-null keys, ``limit`` in the JVM) ``cols`` of ``df`` and Spark's partition of each, ``pmod(hash(cols), n)``; its
    :attr:`Sample.stats` are the listed keys without that column.

    One job: Spark's ``limit`` then ``collect`` reads the first two input partitions
    (:func:`sparkbalance.spark.sql.keystats.first_take_partitions`), each task stopping
    after ``rows`` rows, so a large input is read for a prefix only (more jobs follow only
    when those two partitions hold fewer rows than asked).
    """
    from pyspark.sql import functions as F

    from sparkbalance.spark.sql.keystats import bounded_key_stats, key_array
    n = int(num_partitions)
    cols = list(cols)
    home = HOME_COLUMN
    while home in df.columns:
        home += "_"
    with_home = df.withColumn(home, F.pmod(F.hash(*cols), F.lit(n)))
    listed = bounded_key_stats(with_home, [*cols, home], n, records=int(rows))
    pairs = listed.keys.tolist()      # (key values..., home) tuples, heaviest first
    keys = [p[0] if len(cols) == 1 else tuple(p[:-1]) for p in pairs]
    counts = np.asarray(listed.counts, dtype=np.int64)
    stats = KeyStats(key_array(keys), listed.counts, tail_count=listed.tail_count)
    return Sample(counts, np.array([p[-1] for p in pairs], dtype=np.int64),
                  int(round(listed.total_count + listed.tail_count)), stats)


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
