"""The head sample's verdict (strategies.auto.sample_verdict): it keeps plain hash only where
hash placement of the whole distribution really leaves less than min_gain to gain."""
from __future__ import annotations

import numpy as np
import pytest

from sparkbalance.strategies.auto import MIN_SAMPLE, sample_verdict


def _true_gain(p: np.ndarray, n: int, rng: np.random.Generator) -> float:
    """1 - max(1, n p_1) / (hash max/mean), hash placing each key on a random partition."""
    loads = np.bincount(rng.integers(0, n, p.shape[0]), weights=p, minlength=n)
    return 1.0 - max(1.0, n * float(p.max())) / (n * float(loads.max()))


@pytest.mark.parametrize("n", [8, 16, 64])
@pytest.mark.parametrize("keys,z", [(10**5, 0.0), (10**6, 0.0), (10**4, 0.0), (10**5, 0.5),
                                    (10**5, 0.8), (10**5, 1.0), (50, 0.0)])
def test_keep_hash_only_when_no_plan_gains(n, keys, z):
    rng = np.random.default_rng(keys + n + int(10 * z))
    p = np.arange(1, keys + 1, dtype=np.float64) ** -z
    p /= p.sum()
    for _ in range(5):
        sample = rng.choice(keys, 4096, p=p)
        verdict = sample_verdict(np.bincount(sample)[np.bincount(sample) > 0], n)
        if verdict["keep_hash"]:
            # a few percent of slack: the true gain is itself one random hash draw
            assert _true_gain(p, n, rng) < 0.08, (keys, z, n, verdict)


def test_uniform_distinct_keys_keep_hash_and_hot_keys_do_not():
    assert sample_verdict([1] * 4096, 16)["keep_hash"]
    assert not sample_verdict([500] + [1] * 3596, 16)["keep_hash"]
    assert not sample_verdict([64] * 64, 16)["keep_hash"]  # 64 keys on 16 partitions


def test_too_small_a_sample_gives_no_verdict():
    verdict = sample_verdict([1] * (MIN_SAMPLE - 1), 16)
    assert not verdict["keep_hash"] and verdict["sample"] == MIN_SAMPLE - 1


def test_bad_parameters():
    with pytest.raises(ValueError, match="min_gain"):
        sample_verdict([1] * 1000, 4, min_gain=1.5)
    with pytest.raises(ValueError):
        sample_verdict([1] * 1000, 0)
