"""Key groups with contiguous intervals (Ding et al.; the layout of Flink).

Keys hash into ``m = num_groups`` key groups (the paper's tasks T_1..T_m); partition ``i``
owns the contiguous interval of groups ``bounds[i] : bounds[i+1]``. Rebalancing moves
interval boundaries (planned optimally by SSM), so routing needs no per-key table::

    0 <= key_group(k, m) < m
    partition(k) = i  such that  bounds[i] <= key_group(k, m) < bounds[i+1]

Intervals may be empty (``bounds[i] == bounds[i+1]``); Lemma 3.4 of Ding et al. relies on it.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from ..hashing import (GROUP_HASH, P, _SEED_INT, _SEED_STR, _crc32, family_constants,
                       hash_family, hash_family_array, raw_hash)
from .base import PartitionFunction, check_num_partitions

__all__ = ["KeyGroupPartitioner", "GroupMapPartitioner", "key_group", "key_groups",
           "equal_bounds", "validate_bounds", "DEFAULT_GROUPS_PER_PARTITION",
           "default_num_groups", "GROUP_BUDGET"]

#: Default number of key groups per partition when none is given (Flink's default
#: max parallelism of 128 for small jobs is in the same spirit: enough groups to balance).
DEFAULT_GROUPS_PER_PARTITION: int = 16

#: Most key groups :func:`default_num_groups` gives every partition its full
#: DEFAULT_GROUPS_PER_PARTITION for (2^18: up to 16,384 partitions; a few MB of per-group
#: arrays).
GROUP_BUDGET: int = 1 << 18


def default_num_groups(num_partitions: int) -> int:
    """Default m: 16 groups per partition up to :data:`GROUP_BUDGET` groups, then
    ``max(4 n, GROUP_BUDGET)``.

    The key-group plan's cost no longer grows with m (past the exact programme's limit the
    banded plan of Ding et al. costs O(n' W^2) whatever m), so the finer grouping is nearly
    free: at n = 10,000 on a Zipf workload 16 per partition plans in about 1-2 CPU s and
    leaves the worst partition 1.25 x the mean, where 4 per partition left 1.68 x.

    Examples
    --------
    >>> default_num_groups(8), default_num_groups(10_000), default_num_groups(100_000)
    (128, 160000, 400000)
    """
    n = check_num_partitions(num_partitions)
    full = DEFAULT_GROUPS_PER_PARTITION * n
    return full if full <= GROUP_BUDGET else max(4 * n, GROUP_BUDGET)


# Key groups use a hash independent of the home hash h_0 (family member 1), so that groups
# and hash partitions are not aligned.
_A1, _B1 = family_constants(GROUP_HASH)


def key_group(key: Any, num_groups: int) -> int:
    """Key group of ``key`` among ``num_groups``.

    Examples
    --------
    >>> 0 <= key_group("k", 64) < 64
    True
    """
    return hash_family(key, GROUP_HASH) % num_groups


def key_groups(keys: Iterable[Any] | np.ndarray, num_groups: int) -> np.ndarray:
    """Vectorised :func:`key_group` (``int64``)."""
    return (hash_family_array(keys, GROUP_HASH) % np.uint64(num_groups)).astype(np.int64)


def equal_bounds(num_groups: int, num_partitions: int) -> np.ndarray:
    """Cut points giving each partition an equal count of consecutive groups (±1).

    Examples
    --------
    >>> equal_bounds(10, 3).tolist()
    [0, 4, 7, 10]
    """
    num_groups = check_num_partitions(num_groups, "num_groups")
    num_partitions = check_num_partitions(num_partitions)
    base, extra = divmod(num_groups, num_partitions)
    sizes = np.full(num_partitions, base, dtype=np.int64)
    sizes[:extra] += 1
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def validate_bounds(bounds: Sequence[int] | np.ndarray, num_groups: int,
                    num_partitions: int) -> np.ndarray:
    """Check ``bounds`` is ``[0, ..., num_groups]`` non-decreasing with n+1 entries."""
    b = np.asarray(bounds)
    if b.ndim != 1 or b.shape[0] != num_partitions + 1:
        raise ValueError(f"bounds has shape {b.shape}; expected num_partitions+1="
                         f"{num_partitions + 1} cut points")
    if b.dtype.kind not in "iu":
        raise TypeError(f"bounds has dtype {b.dtype}; expected integers")
    if b[0] != 0 or b[-1] != num_groups:
        raise ValueError(f"bounds run from {b[0]} to {b[-1]}; expected 0 to num_groups={num_groups}")
    if np.any(np.diff(b) < 0):
        raise ValueError(f"bounds {b.tolist()[:12]} are not non-decreasing")
    return b.astype(np.int64)


class KeyGroupPartitioner(PartitionFunction):
    """Key -> key group (stable hash) -> partition owning the group's interval.

    Examples
    --------
    >>> f = KeyGroupPartitioner(2, 4, [0, 1, 4])
    >>> f.owner_of_group.tolist()
    [0, 1, 1, 1]
    """

    def __init__(self, num_partitions: int, num_groups: int | None = None,
                 bounds: Sequence[int] | np.ndarray | None = None) -> None:
        super().__init__(num_partitions)
        if num_groups is None:
            num_groups = default_num_groups(self.num_partitions)
        self.num_groups = check_num_partitions(num_groups, "num_groups")
        if bounds is None:
            bounds = equal_bounds(self.num_groups, self.num_partitions)
        self.bounds = validate_bounds(bounds, self.num_groups, self.num_partitions)
        owner = np.repeat(np.arange(self.num_partitions, dtype=np.int64), np.diff(self.bounds))
        self.owner_of_group = owner
        self._owner = owner.tolist()  # list indexing beats numpy scalar access per record

    def partition(self, key: Any) -> int:
        # h_1 with raw_hash's int and str cases inlined, as HashPartitioner.partition: one
        # Python frame per record (hash_family's range check and call cost ~7 % of a route).
        t = type(key)
        if t is int:
            r = _crc32(b"%d" % key, _SEED_INT)
        elif t is str:
            r = _crc32(key.encode("utf-8", "surrogatepass"), _SEED_STR)
        else:
            r = raw_hash(key)
        return self._owner[((r * _A1 + _B1) % P) % self.num_groups]

    def assign(self, keys: Iterable[Any] | np.ndarray) -> np.ndarray:
        return self.owner_of_group[key_groups(keys, self.num_groups)]

    def with_bounds(self, bounds: Sequence[int] | np.ndarray,
                    num_partitions: int | None = None) -> "KeyGroupPartitioner":
        """Same groups, new interval boundaries (and possibly a new partition count)."""
        n = self.num_partitions if num_partitions is None else num_partitions
        return KeyGroupPartitioner(n, self.num_groups, bounds)

    def __eq__(self, other: object) -> bool:
        return (type(other) is KeyGroupPartitioner and other.num_partitions == self.num_partitions
                and other.num_groups == self.num_groups
                and np.array_equal(other.bounds, self.bounds))

    def __hash__(self) -> int:
        return hash(("KeyGroupPartitioner", self.num_partitions, self.num_groups,
                     tuple(self.bounds.tolist())))

    def __repr__(self) -> str:
        return (f"KeyGroupPartitioner(num_partitions={self.num_partitions}, "
                f"num_groups={self.num_groups}, bounds={self.bounds.tolist()})")


class GroupMapPartitioner(PartitionFunction):
    """Key -> key group (the same hash as :class:`KeyGroupPartitioner`) -> any partition.

    Unlike :class:`KeyGroupPartitioner` the groups of one partition need not be contiguous:
    ``owner[g]`` is free, as an LPT assignment of measured group sizes gives it (the
    zero-pass statistics of :mod:`sparkbalance.spark.rdd.mapstats`). ``n`` equal runs of
    groups (``owner[g] = g n // m``) are hash placement by ranges of ``h_1``.

    Examples
    --------
    >>> f = GroupMapPartitioner(2, [1, 0, 0, 1])
    >>> f.num_groups, f.owner_of_group.tolist()
    (4, [1, 0, 0, 1])
    >>> f("k") == int(f.owner_of_group[key_group("k", 4)])
    True
    """

    def __init__(self, num_partitions: int, owner: Sequence[int] | np.ndarray) -> None:
        super().__init__(num_partitions)
        o = np.asarray(owner)
        if o.ndim != 1 or o.shape[0] < 1:
            raise ValueError(f"owner has shape {o.shape}; expected one partition per key group "
                             "(a 1-D array of at least one entry)")
        if o.dtype.kind not in "iu":
            raise TypeError(f"owner has dtype {o.dtype}; expected integers")
        if o.min() < 0 or o.max() >= self.num_partitions:
            raise ValueError(f"owner names partitions {int(o.min())}..{int(o.max())}; expected "
                             f"0 <= owner < num_partitions={self.num_partitions}")
        self.num_groups = int(o.shape[0])
        self.owner_of_group = o.astype(np.int64)
        self._owner = self.owner_of_group.tolist()

    # the same per-record route and batch route as KeyGroupPartitioner (one group hash
    # h_1, then the owner of the group): shared, not a call per record more
    partition = KeyGroupPartitioner.partition
    assign = KeyGroupPartitioner.assign

    def __eq__(self, other: object) -> bool:
        return (type(other) is GroupMapPartitioner and other.num_partitions == self.num_partitions
                and np.array_equal(other.owner_of_group, self.owner_of_group))

    def __hash__(self) -> int:
        return hash(("GroupMapPartitioner", self.num_partitions,
                     tuple(self.owner_of_group.tolist())))

    def __repr__(self) -> str:
        return (f"GroupMapPartitioner(num_partitions={self.num_partitions}, "
                f"num_groups={self.num_groups})")
