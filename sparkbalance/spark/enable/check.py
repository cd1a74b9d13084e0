"""The skew check of the session-wide mode: does balancing this call pay?

A bounded sample of the call's input is the *only* statistics the call gathers: for an RDD
strategy "auto"'s bounded sample (:mod:`sparkbalance.spark.rdd.bounded`, one job over at
most :data:`MAX_CHECK_PARTITIONS` input partitions), for a DataFrame the key sample
strategy "auto" takes too (:func:`sample_dataframe`: a look at input partition 0, then,
only when a key is hot there, up to ``spark.sparkbalance.check.sampleRows`` rows (default
16384) spread over the other partitions, in the JVM), with each counted key's partition
under **Spark's own** placement: ``pmod(hash(keys), n)`` for a DataFrame (Spark's hash
partitioning, Murmur3 seed 42) and ``portable_hash(key) % n`` for an RDD (PySpark's
default ``partitionFunc``, computed in the sampling tasks). No full pass: a task stops
reading its partition after its share of rows.
From that sample :func:`predicted_gain` predicts how much shorter the slowest task would be
if the keys were placed by load instead of by hash; the call is balanced when the cut is at
least ``spark.sparkbalance.check.minGain`` (default 25 %), and a DataFrame call then plans
from the same sample (:attr:`Sample.stats`, strategy "auto"'s
:func:`sparkbalance.strategies.auto.fit_sampled`): uniform keys one small job (the look),
skewed keys two, then the job.

Why 16384 rows: a task's planned load is a sum of sampled counts, off by about
``sqrt(n / N)`` of the mean (sampling noise), and the slowest of ``n`` tasks by more; at
``n = 8`` a plan fitted on 2048 rows left the slowest task 1.09x the mean on the NYC
flights' destinations (1.06 at 4096, 1.04 at 8192, 1.02 at 16384; exact counts: 1.002).

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

__all__ = ["predicted_gain", "listed_gain", "split_gain", "Sample", "sample_dataframe",
           "sample_rdd",
           "has_shuffle", "MAX_CHECK_PARTITIONS", "MIN_HOT_SAMPLES", "HOT_SHARE_DIVISOR",
           "MIN_SAMPLE_ROWS", "MIN_LISTED_HITS", "skipped_reason"]

#: Input partitions an RDD check reads from at most (evenly spaced over the input).
MAX_CHECK_PARTITIONS = 16
#: A key is hot only when the sample saw it at least this often (its count then has a
#: relative error of ~1/sqrt(8) = 35 % or better).
MIN_HOT_SAMPLES = 8
#: ... and holds at least 1 / (HOT_SHARE_DIVISOR n) of the rows: a quarter of a fair share.
HOT_SHARE_DIVISOR = 4
#: Fewest sampled rows of a key the plan places by its own count (seen once: the tail,
#: spread evenly; see :func:`sample_dataframe`).
MIN_LISTED_HITS = 2
#: Fewer sampled rows than this say nothing: the call stays plain.
MIN_SAMPLE_ROWS = 32
#: An RDD call only decides from its sample (its plan gathers statistics of its own), and
#: an RDD's rows pass through Python: it reads at most this many (the decision needs a key
#: of >= 2 % of the rows to show ~40 times, not a plan's precision).
RDD_DECISION_ROWS: int = 2048


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
    got = _plain_slowest(counts, homes, rows, num_partitions)
    if got is None:
        return 1.0
    plain, heaviest = got
    return float(max(1.0, plain / max(heaviest, rows / int(num_partitions))))


def split_gain(counts: Sequence[int] | np.ndarray, homes: Sequence[int] | np.ndarray,
               rows: int, num_partitions: int) -> float:
    """:func:`listed_gain` for a placement that may cut a key into ranges (a window split by
    :func:`sparkbalance.with_window_columns`): the balanced slowest task is the mean,
    ``rows / n``, however heavy the heaviest key; plain Spark's as in :func:`listed_gain`.
    Exactly 1.0 when no key is hot.

    Examples
    --------
    >>> split_gain([8, 8], [0, 0], 16, 2)               # two hot keys on one partition
    2.0
    >>> round(split_gain([60], [1], 100, 4), 2)         # one key of 60 %: 70 -> 25 rows
    2.8
    >>> split_gain([3, 2], [0, 1], 400, 4)              # nothing hot: stays plain
    1.0
    """
    got = _plain_slowest(counts, homes, rows, num_partitions)
    if got is None:
        return 1.0
    return float(max(1.0, got[0] / (rows / int(num_partitions))))


def _plain_slowest(counts: Sequence[int] | np.ndarray, homes: Sequence[int] | np.ndarray,
                   rows: int, num_partitions: int) -> tuple[float, float] | None:
    """Plain Spark's slowest partition in sampled rows (the hot keys where Spark puts them,
    the rest spread evenly) and the heaviest hot key's rows; None when no key is hot."""
    n = int(num_partitions)
    counts = np.asarray(counts, dtype=np.float64)
    homes = np.asarray(homes, dtype=np.int64)
    if rows <= 0:
        return None
    hot = counts >= _hot_floor(rows, n)
    if not hot.any():
        return None
    plain = np.bincount(homes[hot], weights=counts[hot], minlength=n)
    plain = plain + (rows - counts[hot].sum()) / n
    return float(plain.max()), float(counts[hot].max())


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
    #: The Python step computing the keys when nothing was sampled (a sample would re-run
    #: it: :mod:`sparkbalance.spark.sql.python_source`); None when sampled.
    skipped: str | None = None
    #: The sample an earlier call took of the same query over the same files (no job now).
    remembered: bool = False

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
                     rows: int, refuse_shuffle: bool = False) -> Sample:
    """The bounded key sample of ``df`` over ``cols``
    (:func:`sparkbalance.spark.sql.keysample.sample_keys`, the sampler strategy "auto"
    uses too) with Spark's partition of each key, ``pmod(hash(cols), n)``, and the
    :class:`KeyStats` strategy "auto" plans from (:attr:`Sample.stats`).

    First a look at the first :func:`~sparkbalance.spark.sql.keystats.first_look_records`
    rows of input partition 0 (one job, one task); only when a key is hot there
    (:func:`listed_gain`'s threshold) the sample is spread over the other input partitions
    up to ``rows`` rows in all (one more job, in the JVM, each task stopping at its share;
    only the sampled keys reach the driver). Uniform keys stay plain after the look: no key
    is hot in it, so the gain is exactly 1.

    :attr:`Sample.stats` lists every key the sample saw at least :data:`MIN_LISTED_HITS`
    times with its sampled rows; the keys seen once are the tail, spread evenly. Listing
    only the keys heavy enough to unbalance a partition on their own leaves the warm keys
    to the even spread, and the plan then errs by how unevenly few of them fall into key
    groups (slowest/mean 1.08 on the NYC flights' destinations however large the sample;
    1.02 listing every key seen twice in 16k rows, 1.002 on exact counts).

    With ``refuse_shuffle`` an input a shuffle computes is not sampled
    (:attr:`Sample.skipped` is :data:`~sparkbalance.spark.sql.keysample.SHUFFLE_INPUT`;
    decided from the sample's own plan, as :func:`has_shuffle` decides from the input's).
    """
    from sparkbalance.spark.sql import hash_columns as sqlhash
    from sparkbalance.spark.sql.keysample import sample_keys
    from sparkbalance.spark.sql.keystats import first_look_records, key_array
    n = int(num_partitions)
    cols = sqlhash.check_key_columns(df, list(cols))
    look = min(first_look_records(n), int(rows))
    got = sample_keys(df, cols, n, rows=int(rows), look=look,
                      could_matter=lambda c, read: c.max() >= _hot_floor(read, n),
                      refuse_shuffle=refuse_shuffle)
    counts, total = got.counts, got.rows
    listed = counts >= MIN_LISTED_HITS
    stats = KeyStats(key_array([k for k, keep in zip(got.keys, listed) if keep]),
                     counts[listed].astype(np.float64),
                     tail_count=float(total - counts[listed].sum()))
    return Sample(counts, got.homes, total, stats, got.skipped, got.remembered)


def skipped_reason(step: str) -> str:
    """A decision's reason when the keys were not sampled because the Python ``step``
    computes them, or a shuffle does (:attr:`Sample.skipped`)."""
    from sparkbalance.spark.sql.keysample import SHUFFLE_INPUT
    if step == SHUFFLE_INPUT:
        return "input is a shuffle's output: even a sample would cost a full pass"
    return f"keys computed in Python ({step}): a sample would run that Python work again"


def _hot_floor(rows: int, num_partitions: int) -> float:
    """Fewest sampled rows of a hot key among ``rows`` (see the module docstring)."""
    return max(MIN_HOT_SAMPLES, rows / (HOT_SHARE_DIVISOR * int(num_partitions)))


def has_shuffle(df: "DataFrame") -> bool:
    """Whether computing any partition of ``df`` runs a shuffle first (then even a prefix
    costs a full pass over the shuffle's input, and the check is not cheap).

    :func:`sparkbalance.spark.sql.keysample.runs_shuffle` of its physical plan.
    """
    from sparkbalance.spark.sql.keysample import runs_shuffle
    return runs_shuffle(df._jdf.queryExecution().executedPlan())
