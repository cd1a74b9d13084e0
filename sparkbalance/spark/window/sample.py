"""One pass for everything the split needs to know: key counts and order-key samples.

The split needs, per partition key, how many rows it holds (hot or cold, where cold keys go)
and, per hot key, order values to cut it at. Both come from **one job** over the data: a
uniform sample of ``m`` rows, the rows with the ``m`` smallest values of ``rand(seed)``
(Spark's ``TakeOrderedAndProject``: each task keeps its own ``m`` smallest, the driver
merges them; no shuffle), sorted by the partition key and then as the window sorts
(a sort of the ``m`` rows in one task, the same job). So nulls first/last, NaN and
descending orders sort as the window sorts them.

``m`` is :data:`sparkbalance.spark.window.segments.SAMPLE_PER_SEGMENT` per planned segment
(a segment holds :data:`~sparkbalance.spark.window.segments.SEGMENT_SHARE` of a partition's
mean rows, so a key of share ``s`` is cut into ``s n / SEGMENT_SHARE`` segments and draws
``m s`` rows: every hot key gets its sample rows per segment without knowing the keys first).

Counts are the sample's scaled by ``N / m``; ``N`` is estimated from the ``m``-th smallest
draw ``u_(m)`` as ``(m - 1) / u_(m)`` (the order-statistic estimator of a uniform sample's
size, relative error about ``1/sqrt(m)``: ~1 % at ``m`` = 12,800). When the data has fewer
than ``m`` rows every row is drawn and the counts are exact.

Examples
--------
>>> ks = draw(d, ["k"], ["t"], order, num_partitions=16)          # doctest: +SKIP
>>> ks.total, ks.keys[:1], ks.samples[ks.keys[0]][:2]              # doctest: +SKIP
(200000.0, ['hot'], [(0,), (3,)])
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from sparkbalance.spark.sql.keystats import py_value as _py_value
from sparkbalance.spark.window import segments as sg
from sparkbalance.spark.window.spec import SortKey

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

__all__ = ["KeySample", "sample_size", "draw"]

_U = "__sb_u"


@dataclass
class KeySample:
    """What the pass returns: keys heaviest first (null keys left out), their estimated
    rows, each key's sampled order tuples in window order, the estimated total rows and
    the rows with a null key (all in one window partition, placed on partition 0)."""

    keys: list
    counts: np.ndarray
    samples: dict
    total: float
    null_rows: float
    exact: bool


def sample_size(num_partitions: int) -> int:
    """Rows drawn: :data:`SAMPLE_PER_SEGMENT` for each segment of a key holding every row.

    Examples
    --------
    >>> sample_size(16)
    12800
    """
    return int(sg.SAMPLE_PER_SEGMENT * math.ceil(1.0 / sg.SEGMENT_SHARE) * num_partitions)


def draw(d: "DataFrame", pcols: Sequence[str], ocols: Sequence[str],
         order: Sequence[SortKey], num_partitions: int) -> KeySample:
    """Key counts and per-key order samples of ``d`` in one job (module docstring)."""
    from pyspark.sql import functions as F
    m = sample_size(num_partitions)
    sort = [F.col(c).asc_nulls_first() for c in pcols]
    sort += [k.sort_column(F.col(c)) for k, c in zip(order, ocols)]
    # coalesce(1) + a local sort, not orderBy: where Spark knows the data holds fewer than
    # m rows it drops the limit, and a global sort would add its range-sampling jobs
    rows = (d.select(*pcols, *ocols, F.rand(sg.SAMPLE_SEED).alias(_U))
            .orderBy(_U).limit(m).coalesce(1).sortWithinPartitions(*sort).collect())
    exact = len(rows) < m
    if exact:
        total = float(len(rows))
    else:
        total = max(float(m), (m - 1) / max(max(r[-1] for r in rows), 1e-300))
    scale = total / max(1, len(rows))
    np_, single = len(pcols), len(pcols) == 1
    samples: dict[Any, list] = {}
    nulls = 0
    for r in rows:
        kv = r[:np_]
        if any(v is None for v in kv):
            nulls += 1
            continue
        key = _py_value(kv[0]) if single else tuple(_py_value(v) for v in kv)
        samples.setdefault(key, []).append(tuple(r[np_:-1]))
    keys = sorted(samples, key=lambda k: -len(samples[k]))  # stable: ties keep key order
    counts = np.array([len(samples[k]) * scale for k in keys], dtype=np.float64)
    return KeySample(keys, counts, samples, total, nulls * scale, exact)
