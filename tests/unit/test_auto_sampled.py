"""Strategy "auto" on a bounded sample, without Spark: uniform keys keep plain hashing, a
Zipf head is placed near the key-grouping bound of the whole data, and a sample's noise
is not mistaken for skew."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from sparkbalance.routing.hash import HashPartitioner
from sparkbalance.routing.keygroups import GroupMapPartitioner
from sparkbalance.spark.rdd.bounded import SAMPLE_RECORDS, listed_stats, sampled_partitions
from sparkbalance.strategies.auto import fit_sampled

N = 16


def _zipf(z: float, num_keys: int, size: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if z == 0:
        return rng.integers(0, num_keys, size)
    p = np.arange(1, num_keys + 1, dtype=np.float64) ** -z
    return rng.choice(num_keys, size, p=p / p.sum())


def _fitted(sample: np.ndarray):
    counts = Counter(sample.tolist())
    return fit_sampled(listed_stats(counts, len(sample), N), N)


@pytest.mark.parametrize("num_keys", [1_000, 1_000_000])
def test_uniform_keys_keep_plain_hashing(num_keys):
    for seed in range(5):
        assert isinstance(_fitted(_zipf(0, num_keys, SAMPLE_RECORDS, seed)), HashPartitioner)


@pytest.mark.parametrize("z", [1.0, 1.2])
def test_a_zipf_head_is_placed_near_the_bound_of_the_whole_data(z):
    data = _zipf(z, 100_000, 400_000, seed=1)
    f = _fitted(data[:SAMPLE_RECORDS])
    assert isinstance(f, GroupMapPartitioner)
    keys, counts = np.unique(data, return_counts=True)
    mean = len(data) / N
    planned = np.bincount(f.assign(keys), weights=counts, minlength=N).max() / mean
    hashed = np.bincount(HashPartitioner(N).assign(keys), weights=counts,
                         minlength=N).max() / mean
    bound = max(1.0, counts.max() / mean)
    assert planned < hashed and planned <= 1.15 * bound, (planned, hashed, bound)


def test_partitions_are_spread_over_the_input():
    assert sampled_partitions(200, 4) == [25, 75, 125, 175]
    assert sampled_partitions(3, 4) == [0, 1, 2] and sampled_partitions(0, 4) == []
