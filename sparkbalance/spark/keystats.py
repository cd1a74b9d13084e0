"""Gather :class:`~sparkbalance.stats.KeyStats` from a pair RDD (exact, sampled, SpaceSaving).

Counting runs on the executors; the driver only receives one row per distinct key (exact,
sampled) or one summary per partition (SpaceSaving). Every sparkbalance job runs under the
job group :data:`STATS_JOB_GROUP`, so the Spark UI (and a listener created with that group)
can tell them from the user's jobs.

Bad keys (None, NaN, unhashable, unsupported types) never fail obscurely on an executor:
each partition validates its *distinct* keys with :func:`sparkbalance.hashing.validate_key`
(cost per distinct key, not per record) and ships the error message back; the driver then
raises the same ``TypeError`` / ``ValueError`` the hashing module would, naming the key.

Choosing a method: ``"exact"`` (reduceByKey + collect, fine up to ~10^6 distinct keys);
``"sample"`` (a Bernoulli sample of the records, counts scaled by 1/fraction: cheaper for
huge inputs, still one row per sampled key); ``"spacesaving"`` (bounded memory: one
summary per partition merged with ``reduce``; only the heavy keys come back).
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

import numpy as np

from ..hashing import validate_key
from ..stats.keystats import KeyStats, as_key_array
from ..stats.spacesaving import SpaceSaving

__all__ = ["gather_key_stats", "exact_counts", "sampled_counts", "spacesaving_summary",
           "measured_tasks", "STATS_JOB_GROUP", "DEFAULT_SPACESAVING_CAPACITY"]

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


def _job_group(rdd: Any, description: str):
    from .jobs import sparkbalance_job_group
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
    if not (isinstance(fraction, (int, float)) and 0 < fraction <= 1):
        raise ValueError(f"sample_fraction={fraction!r}; expected 0 < fraction <= 1")
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


def _merge(a: Any, b: Any) -> Any:
    if isinstance(a, _BadKey):
        return a
    if isinstance(b, _BadKey):
        return b
    return a.merge(b)


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
                     capacity: int = DEFAULT_SPACESAVING_CAPACITY, seed: int = 17) -> KeyStats:
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

    Examples
    --------
    >>> gather_key_stats(rdd, sample_fraction=0.1).total_count  # doctest: +SKIP
    """
    if method is None:
        method = "sample" if sample_fraction is not None else "exact"
    if method not in _METHODS:
        raise ValueError(f"method={method!r}; expected one of {', '.join(_METHODS)}")
    if method == "exact":
        return exact_counts(rdd)
    if method == "sample":
        if sample_fraction is None:
            raise ValueError("method='sample' needs sample_fraction in (0, 1]")
        return sampled_counts(rdd, sample_fraction, seed=seed)
    ss = spacesaving_summary(rdd, capacity)
    rows = [(k, c) for k, c, _ in ss.top()]
    return _to_stats(rows)


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
