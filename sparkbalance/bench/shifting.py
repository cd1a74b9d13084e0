"""A shifting Zipf stream (Fang et al. §5) for the keyed-state tests, demo and benchmark.

Interval 0 draws key frequencies ∝ rank^-z over ``num_keys`` integer keys; every next
interval swaps the frequencies of random key pairs homed on different partitions until the
load moved is significant (:func:`sparkbalance.planning.synthetic.fluctuate`, our reading
of the paper's generator), so a layout balanced for one interval is unbalanced for the
next. Keys are shuffled once so that hot keys are not the small integers.

Pure numpy (no pyspark).
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

from sparkbalance.planning.synthetic import fluctuate, zipf_counts
from sparkbalance.routing.hash import home_partitions

__all__ = ["shifting_zipf_counts", "batch_records"]


def shifting_zipf_counts(num_keys: int, num_partitions: int, num_batches: int, *,
                         z: float = 1.0, records_per_batch: int = 5000, f: float = 1.0,
                         seed: int = 0, batches_per_interval: int = 1) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield ``(keys, counts)`` per batch: integer keys and their record counts.

    The frequencies shift every ``batches_per_interval`` batches; each batch is a fresh
    multinomial sample of ``records_per_batch`` records from its interval's frequencies.

    Examples
    --------
    >>> it = shifting_zipf_counts(50, 4, 3, records_per_batch=500, seed=1)
    >>> [int(c.sum()) for _, c in it]
    [500, 500, 500]
    """
    if batches_per_interval < 1:
        raise ValueError(f"batches_per_interval={batches_per_interval}; expected >= 1")
    if num_batches < 0:
        raise ValueError(f"num_batches={num_batches}; expected >= 0")
    rng = np.random.default_rng(seed)
    keys = rng.permutation(num_keys).astype(np.int64)
    freq = zipf_counts(num_keys, z, records_per_batch / num_keys, rng)
    home = home_partitions(keys, num_partitions)
    for t in range(num_batches):
        if t and t % batches_per_interval == 0:
            freq = fluctuate(freq, home, num_partitions, f=f, rng=rng)
        p = freq / freq.sum()
        counts = rng.multinomial(records_per_batch, p)
        nz = counts > 0
        yield keys[nz], counts[nz].astype(np.int64)


def batch_records(keys: np.ndarray, counts: np.ndarray, value: int = 1,
                  seed: int = 0) -> list[tuple[int, int]]:
    """``(key, value)`` records of one batch in a shuffled order.

    Examples
    --------
    >>> sorted(batch_records(np.array([3, 5]), np.array([2, 1])))
    [(3, 1), (3, 1), (5, 1)]
    """
    rep = np.repeat(keys, counts)
    np.random.default_rng(seed).shuffle(rep)
    return [(int(k), value) for k in rep.tolist()]
