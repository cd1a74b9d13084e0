"""The tally of a batch: its records per key, counted before its merge runs.

The controller that plans on the batch being merged
(:mod:`sparkbalance.state.control.lookahead`) needs the batch's own key counts before the
routing shuffle is written. One small job counts them: each task counts its partition's
keys at C speed (``collections.Counter`` over the keys) and sends one dict; the driver
sums them. The pairs are validated on the way (:func:`~sparkbalance.state.inputs.as_pairs`'s
checks run in this job too), so a bad key fails the batch before anything moved.

Spark side (imports pyspark inside the functions).
"""
from __future__ import annotations

from collections import Counter
from operator import itemgetter
from typing import Any, Callable, Iterable, Iterator

from sparkbalance.spark.session.jobs import sparkbalance_job_group

__all__ = ["count_keys", "key_counts", "tally_keys"]


def key_counts(items: Iterable[tuple], weight: Callable[[list], int] | None = None) -> Counter:
    """Records per key of ``(key, value)`` items: each item counts one (C speed), or
    ``weight([value])`` with a weight hook — a value standing for several records, as the
    stateful drop-in's Arrow chunk does (the merge's own hook, ``StateFold.weight``), so the
    look-ahead plans on the same loads the merge measures.

    Examples
    --------
    >>> key_counts([("a", 1), ("b", 2), ("a", 3)])
    Counter({'a': 2, 'b': 1})
    >>> key_counts([("a", 1), ("b", 2), ("a", 3)], weight=lambda vs: sum(vs))
    Counter({'a': 4, 'b': 2})
    """
    if weight is None:
        return Counter(map(itemgetter(0), items))
    counts: Counter = Counter()
    for k, v in items:
        counts[k] += weight([v])
    return counts


def count_keys(pairs: Iterable[tuple], weight: Callable[[list], int] | None = None
               ) -> Iterator[dict]:
    """One partition's records per key, as one dict (the map side of :func:`tally_keys`).

    Examples
    --------
    >>> list(count_keys([("a", 1), ("b", 2), ("a", 3)]))
    [{'a': 2, 'b': 1}]
    """
    yield dict(key_counts(pairs, weight))


def tally_keys(pairs: Any, group: str, description: str,
               weight: Callable[[list], int] | None = None) -> Counter:
    """Records per key of the RDD ``pairs`` (one job, in job group ``group``), each
    weighed by ``weight`` when given (:func:`key_counts`).

    Examples
    --------
    >>> tally_keys(sc.parallelize([("a", 1), ("a", 2)]), "g", "tally")  # doctest: +SKIP
    Counter({'a': 2})
    """
    total: Counter = Counter()
    with sparkbalance_job_group(pairs.context, group, description):
        for part in pairs.mapPartitions(lambda it: count_keys(it, weight)).collect():
            total.update(part)
    return total
