"""Plain stable hash partitioning: ``h(k) = stable_hash(k) mod n`` (the paper's home h(k))."""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from ..hashing import P, raw_hash, stable_hash_array, _A, _B, _SEED_INT, _SEED_STR, _crc32
from .base import PartitionFunction

__all__ = ["HashPartitioner", "home_partition", "home_partitions"]

_A0, _B0 = _A[0], _B[0]


def home_partition(key: Any, num_partitions: int) -> int:
    """h(k): the stable-hash home partition of ``key`` among ``num_partitions``.

    Examples
    --------
    >>> 0 <= home_partition("k", 8) < 8
    True
    """
    return ((raw_hash(key) * _A0 + _B0) % P) % num_partitions


def home_partitions(keys: Iterable[Any] | np.ndarray, num_partitions: int) -> np.ndarray:
    """Vectorised :func:`home_partition` (``int64``)."""
    h = stable_hash_array(keys)
    np.remainder(h, np.uint64(num_partitions), out=h)
    return h.view(np.int64)   # < num_partitions: the same values, no 80 MB copy at 10^7


class HashPartitioner(PartitionFunction):
    """Stable hash mod n; the drop-in baseline for ``rdd.partitionBy(n)``.

    Examples
    --------
    >>> f = HashPartitioner(4)
    >>> f("a") == f("a") and 0 <= f("a") < 4
    True
    """

    def partition(self, key: Any) -> int:
        # raw_hash's int and str cases inlined: one Python frame per record, as
        # portable_hash (the routing benchmark's part (a) measures the per-record cost).
        t = type(key)
        if t is int:
            r = _crc32(b"%d" % key, _SEED_INT)
        elif t is str:
            r = _crc32(key.encode("utf-8", "surrogatepass"), _SEED_STR)
        else:
            r = raw_hash(key)
        return ((r * _A0 + _B0) % P) % self.num_partitions

    def assign(self, keys: Iterable[Any] | np.ndarray) -> np.ndarray:
        return home_partitions(keys, self.num_partitions)

    def __eq__(self, other: object) -> bool:
        return type(other) is HashPartitioner and other.num_partitions == self.num_partitions

    def __hash__(self) -> int:
        return hash(("HashPartitioner", self.num_partitions))
