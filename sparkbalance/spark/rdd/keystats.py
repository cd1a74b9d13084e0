"""Gather :class:`~sparkbalance.stats.KeyStats` from a pair RDD (exact, sampled, SpaceSaving).

Counting runs on the executors. The driver's memory is bounded independently of the number
of keys: by default (``max_keys``) each partition of the exact (or sampled) per-key counts
keeps its ``max_keys`` heaviest keys plus two totals (records and distinct keys of the rest),
and ``treeReduce`` merges those summaries, so the driver receives O(``max_keys``) entries per
merge; SpaceSaving sends one bounded summary per partition. ``max_keys=None`` collects one
row per distinct key. Every sparkbalance job runs under the
job group :data:`STATS_JOB_GROUP`, so the Spark UI (and a listener created with that group)
can tell them from the user's jobs.

Bad keys (None, NaN, unhashable, unsupported types) never fail obscurely on an executor:
each partition validates its *distinct* keys with :func:`sparkbalance.hashing.validate_key`
(cost per distinct key, not per record) and ships the error message back; the driver then
raises the same ``TypeError`` / ``ValueError`` the hashing module would, naming the key.

Choosing a method: ``"exact"`` (reduceByKey, then the top ``max_keys`` with exact counts);
``"sample"`` (a Bernoulli sample of the records, counts scaled by 1/fraction: cheaper for
huge inputs); ``"spacesaving"`` (bounded executor memory too: one summary per partition
merged with ``treeReduce``; heavy-key counts within the SpaceSaving error bound).
"""
from __future__ import annotations

import heapq
from typing import Any, Iterable, Iterator

import numpy as np

from sparkbalance.hashing import validate_key
from sparkbalance.stats.keystats import KeyStats, as_key_array
from sparkbalance.stats.spacesaving import SpaceSaving
from sparkbalance.spark.session.conf import DEFAULT_MAX_KEYS, FROM_CONF, resolve_max_keys

__all__ = ["gather_key_stats", "exact_counts", "sampled_counts", "spacesaving_summary",
           "top_counts", "top_summaries", "TopCounts", "measured_tasks", "STATS_JOB_GROUP",
           "DEFAULT_SPACESAVING_CAPACITY", "DEFAULT_MAX_KEYS"]

#: Job group of sparkbalance's statistics jobs.
STATS_JOB_GROUP = "sparkbalance-stats"
#: Counters per SpaceSaving summary when none is given (keeps every key of frequency
#: >= 1/1000 of the records; 1/(5n) needs only 5n+1 counters).
DEFAULT_SPACESAVING_CAPACITY = 1000
_METHODS = ("exact", "sample", "spacesaving")


class _BadKey:
    """Marker shipped from an executor instead of a bad key: error class name + message."""

    __slots__ = ("kind", "message")

    def __init__(self, kind: str, message: str) -> None:
        self.kind, self.message = kind, message

    def __reduce__(self):
        return (_BadKey, (self.kind, self.message))

    def raise_(self) -> None:
        exc = ValueError if self.kind == "ValueError" else TypeError
        raise exc(self.message)


def _pair_error(record: Any) -> _BadKey:
    return _BadKey("TypeError", f"records must be (key, value) pairs; got {record!r:.80} of type "
                                f"{type(record).__name__}")


def _local_counts(records: Iterable[Any]) -> dict[Any, int] | _BadKey:
    """Count one partition's keys; a _BadKey for the first bad record or key."""
    counts: dict[Any, int] = {}
    get = counts.get
    for rec in records:
        try:
            k = rec[0]
        except (TypeError, IndexError, KeyError):
            return _pair_error(rec)
        try:
            counts[k] = get(k, 0) + 1
        except TypeError:  # unhashable key
            try:
                validate_key(k)
            except (TypeError, ValueError) as exc:
                return _BadKey(type(exc).__name__, str(exc))
            return _BadKey("TypeError", f"key {k!r:.60} of type {type(k).__name__} is unhashable")
    for k in counts:  # per distinct key: cheap
        try:
            validate_key(k)
        except (TypeError, ValueError) as exc:
            return _BadKey(type(exc).__name__, str(exc))
    return counts


def _count_partition(records: Iterator[Any]) -> Iterator[tuple[Any, int]]:
    counts = _local_counts(records)
    if isinstance(counts, _BadKey):
        yield (counts, 0)  # _BadKey hashes by identity: travels through reduceByKey intact
        return
    yield from counts.items()


def _add(a: int, b: int) -> int:
    return a + b


def _to_stats(rows: list[tuple[Any, float]], scale: float = 1.0) -> KeyStats:
    for k, _ in rows:
        if isinstance(k, _BadKey):
            k.raise_()
    keys = as_key_array([k for k, _ in rows])
    counts = np.fromiter((c for _, c in rows), dtype=np.float64, count=len(rows)) * scale
    return KeyStats(keys, counts)


class TopCounts:
    """The ``k`` heaviest keys of some partitions with exact counts, and the rest as totals.

    Mergeable: the union of two partitions' keys is disjoint after ``reduceByKey``, so the
    merged top-k is the top-k of both listings and everything dropped joins the tail.

    Examples
    --------
    >>> t = TopCounts.of([("a", 5), ("b", 1), ("c", 2)], 2)
    >>> t.merge(TopCounts.of([("d", 3)], 2)).rows(), t.tail, t.distinct
    ([('a', 5), ('d', 3)], 1, 3)
    """

    __slots__ = ("k", "entries", "tail", "distinct")

    def __init__(self, k: int, entries: list[tuple[Any, Any]], tail: float, distinct: int
                 ) -> None:
        self.k, self.entries, self.tail, self.distinct = k, entries, tail, distinct

    @classmethod
    def of(cls, rows: Iterable[tuple[Any, float]], k: int) -> "TopCounts":
        """Summary of distinct ``(key, count)`` rows (each key once)."""
        heap: list[tuple[float, int, Any]] = []   # min-heap of the k heaviest
        total, distinct = 0, 0
        for i, (key, c) in enumerate(rows):
            total += c
            distinct += 1
            if len(heap) < k:
                heapq.heappush(heap, (c, i, key))
            elif c > heap[0][0]:
                heapq.heapreplace(heap, (c, i, key))
        kept = sum(c for c, _, _ in heap)
        return cls(k, [(key, c) for c, _, key in heap], total - kept, distinct)

    def __len__(self) -> int:
        return len(self.entries)

    def merge(self, other: "TopCounts") -> "TopCounts":
        both = self.of(self.entries + other.entries, self.k)
        return TopCounts(self.k, both.entries, self.tail + other.tail + both.tail,
                         self.distinct + other.distinct)

    def rows(self) -> list[tuple[Any, float]]:
        """The listed keys, heaviest first."""
        return sorted(self.entries, key=lambda kc: -kc[1])

    def __reduce__(self):
        return (TopCounts, (self.k, self.entries, self.tail, self.distinct))


def _local_top(k: int):
    def run(rows: Iterator[tuple[Any, int]]) -> Iterator[Any]:
        good = []
        for key, c in rows:
            if isinstance(key, _BadKey):
                yield key
                return
            good.append((key, c))
        yield TopCounts.of(good, k)
    return run


def _merge(a: Any, b: Any) -> Any:
    """treeReduce body of the per-partition summaries (TopCounts, SpaceSaving): merged, or
    the first bad key found (it travels to the driver, which raises its error)."""
    if isinstance(a, _BadKey):
        return a
    if isinstance(b, _BadKey):
        return b
    return a.merge(b)


def top_summaries(counts: Any, max_keys: int) -> Any:
    """One :class:`TopCounts` (at most ``max_keys`` entries) per partition of ``counts``,
    an RDD of distinct ``(key, count)`` rows (what the driver's merge receives)."""
    return counts.mapPartitions(_local_top(max_keys))


def _check_max_keys(max_keys: int | None) -> int | None:
    if max_keys is not None and (isinstance(max_keys, bool) or not isinstance(max_keys, int)
                                 or max_keys < 1):
        raise ValueError(f"max_keys={max_keys!r}; expected an int >= 1 or None (every key)")
    return max_keys


def top_counts(rdd: Any, max_keys: int | None = FROM_CONF, *,
               sample_fraction: float | None = None, seed: int = 17) -> KeyStats:
    """The ``max_keys`` heaviest keys with exact counts, the rest as ``tail_count`` and
    ``num_distinct`` (exact); driver memory O(``max_keys``) whatever the number of keys.

    Examples
    --------
    >>> s = top_counts(sc.parallelize([(i % 1000, 0) for i in range(10**4)]), 10)  # doctest: +SKIP
    >>> len(s), s.data_count, s.num_distinct                                  # doctest: +SKIP
    (10, 10000.0, 1000.0)
    """
    max_keys = _check_max_keys(resolve_max_keys(rdd, max_keys))
    scale = 1.0
    src = rdd
    if sample_fraction is not None:
        _check_fraction(sample_fraction)
        scale = 1.0 / float(sample_fraction)
        src = rdd if sample_fraction >= 1 else rdd.sample(False, float(sample_fraction), seed)
    with _job_group(rdd, f"sparkbalance: top {max_keys} key counts"):
        counts = src.mapPartitions(_count_partition).reduceByKey(_add)
        parts = top_summaries(counts, max_keys)
        out = parts.treeReduce(_merge) if not parts.isEmpty() else TopCounts(max_keys, [],
                                                                                  0, 0)
    if isinstance(out, _BadKey):
        out.raise_()
    stats = _to_stats(out.rows(), scale)
    return KeyStats(stats.keys, stats.counts, tail_count=out.tail * scale,
                    num_distinct=max(out.distinct, len(stats)))


def _check_fraction(fraction: Any) -> None:
    if not (isinstance(fraction, (int, float)) and 0 < fraction <= 1):
        raise ValueError(f"sample_fraction={fraction!r}; expected 0 < fraction <= 1")


def _job_group(rdd: Any, description: str):
    from sparkbalance.spark.session.jobs import sparkbalance_job_group
    return sparkbalance_job_group(rdd.context, STATS_JOB_GROUP, description)


def exact_counts(rdd: Any) -> KeyStats:
    """Records per distinct key (``reduceByKey`` on the executors, collected).

    Examples
    --------
    >>> exact_counts(sc.parallelize([("a", 1), ("a", 2), ("b", 3)])).as_dict()  # doctest: +SKIP
    {'a': 2.0, 'b': 1.0}
    """
    with _job_group(rdd, "sparkbalance: exact key counts"):
        rows = rdd.mapPartitions(_count_partition).reduceByKey(_add).collect()
    return _to_stats(rows)


def sampled_counts(rdd: Any, fraction: float, *, seed: int = 17) -> KeyStats:
    """Counts of a Bernoulli sample of the records, scaled by ``1/fraction`` (estimates).

    Keys absent from the sample are absent from the result (their count is small with high
    probability). ``fraction`` in (0, 1].
    """
    _check_fraction(fraction)
    sample = rdd if fraction >= 1 else rdd.sample(False, float(fraction), seed)
    with _job_group(rdd, f"sparkbalance: sampled key counts (fraction {fraction:g})"):
        rows = sample.mapPartitions(_count_partition).reduceByKey(_add).collect()
    return _to_stats(rows, 1.0 / float(fraction))


def _summarise(capacity: int):
    def run(records: Iterator[Any]) -> Iterator[Any]:
        counts = _local_counts(records)
        if isinstance(counts, _BadKey):
            yield counts
            return
        ss = SpaceSaving(capacity)
        # Feed the partition's exact local counts: a weighted update per distinct key.
        for k, c in sorted(counts.items(), key=lambda kv: -kv[1]):
            ss.update(k, c)
        yield ss
    return run


def spacesaving_summary(rdd: Any, capacity: int = DEFAULT_SPACESAVING_CAPACITY) -> SpaceSaving:
    """One SpaceSaving summary per partition (executors), merged with ``treeReduce``.

    Examples
    --------
    >>> ss = spacesaving_summary(sc.parallelize([("a", 0)] * 9 + [("b", 0)]), 4)  # doctest: +SKIP
    >>> ss.count("a")  # doctest: +SKIP
    9
    """
    SpaceSaving(capacity)  # validate on the driver
    with _job_group(rdd, f"sparkbalance: SpaceSaving summary (capacity {capacity})"):
        parts = rdd.mapPartitions(_summarise(capacity))
        if parts.getNumPartitions() == 0:
            return SpaceSaving(capacity)
        out = parts.treeReduce(_merge) if not parts.isEmpty() else SpaceSaving(capacity)
    if isinstance(out, _BadKey):
        out.raise_()
    return out


def gather_key_stats(rdd: Any, *, method: str | None = None, sample_fraction: float | None = None,
                     capacity: int = DEFAULT_SPACESAVING_CAPACITY, seed: int = 17,
                     max_keys: int | None = FROM_CONF) -> KeyStats:
    """Per-key statistics of a pair RDD.

    Parameters
    ----------
    method : {"exact", "sample", "spacesaving"}, optional
        Default "sample" when ``sample_fraction`` is given, else "exact".
    sample_fraction : float, optional
        Fraction of records sampled (method "sample").
    capacity : int
        Counters of the SpaceSaving summary (method "spacesaving"); the result holds the
        kept keys with their (over-)estimated counts.
    max_keys : int or None
        Methods "exact" and "sample": list only the ``max_keys`` heaviest keys (exact or
        estimated counts), the rest as ``tail_count``/``num_distinct``
        (:func:`top_counts`); None lists every distinct key.

    Examples
    --------
    >>> gather_key_stats(rdd, sample_fraction=0.1).total_count  # doctest: +SKIP
    """
    if method is None:
        method = "sample" if sample_fraction is not None else "exact"
    if method not in _METHODS:
        raise ValueError(f"method={method!r}; expected one of {', '.join(_METHODS)}")
    max_keys = _check_max_keys(resolve_max_keys(rdd, max_keys))
    if method == "sample" and sample_fraction is None:
        raise ValueError("method='sample' needs sample_fraction in (0, 1]")
    if method in ("exact", "sample") and max_keys is not None:
        return top_counts(rdd, max_keys,
                          sample_fraction=sample_fraction if method == "sample" else None,
                          seed=seed)
    if method == "exact":
        return exact_counts(rdd)
    if method == "sample":
        return sampled_counts(rdd, sample_fraction, seed=seed)
    ss = spacesaving_summary(rdd, capacity)
    rows = [(k, c) for k, c, _ in ss.top()]
    stats = _to_stats(rows)
    # Counts are over-estimates (by at most the summary's floor): the tail is what is left.
    return KeyStats(stats.keys, stats.counts, tail_count=max(0.0, ss.total - stats.total_count))


def measured_tasks(listener: Any) -> list[Any]:
    """Successful tasks the listener recorded, minus sparkbalance's own statistics jobs."""
    if listener is None:
        raise ValueError("weights='time' needs listener=<a TaskMetricsListener that recorded the "
                         "previous run of this keyed stage>; got listener=None")
    tasks = [t for t in listener.tasks(successful_only=True)
             if getattr(t, "job_group", None) != STATS_JOB_GROUP]
    if not tasks:
        raise ValueError("weights='time': the listener recorded no successful task; run the "
                         "keyed stage once with the listener attached first")
    return tasks
