"""Where each key's state lives: the versioned partition function of the keyed state.

Two layouts:

- :class:`TableLayout` — Mixed routing (Fang et al.): ``F(k) = R[k] if k in R else h(k)``
  over ``n`` logical partitions (a :class:`~sparkbalance.routing.RoutingTablePartitioner`).
- :class:`GroupLayout` — key groups in contiguous intervals (Ding et al.): interval ``j`` of
  ``bounds`` lives on physical partition ``phys[j]``; or, with ``owner``, any group on any
  of the ``phys`` partitions (the correlation planners of Xing et al. separate groups whose
  loads rise together, which intervals cannot express).

Logical vs physical partitions. The state RDD holds one block per *physical* partition and
every RDD zipped with it must have the same count. Growing is narrow (a union with empty
blocks); shrinking cannot drop partitions of an RDD narrowly from PySpark (no partition
pruning in the Python API, and ``coalesce`` groups parents by locality, not by index), so a
layout may route to fewer partitions than it physically has: the tail partitions are then
empty blocks (empty tasks, a few ms each). SSM's ``owners`` may keep an old node whose index
is >= n'; ``phys`` keeps that node's physical partition so its state does not move.

Pure (no pyspark).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sparkbalance.routing.base import check_num_partitions
from sparkbalance.routing.keygroups import (GroupMapPartitioner, default_num_groups,
                                 equal_bounds, validate_bounds)
from sparkbalance.routing.table import RoutingTable, RoutingTablePartitioner

__all__ = ["TableLayout", "GroupLayout", "Layout"]


@dataclass(frozen=True)
class TableLayout:
    """Routing-table layout: ``num_partitions`` logical, ``num_physical`` >= it.

    Examples
    --------
    >>> lay = TableLayout(4, 4, RoutingTable({"hot": 2}))
    >>> lay.fn("hot"), lay.version
    (2, 0)
    """

    num_partitions: int
    num_physical: int
    table: RoutingTable = field(default_factory=RoutingTable)

    kind = "table"

    def __post_init__(self) -> None:
        check_num_partitions(self.num_partitions)
        check_num_partitions(self.num_physical, "num_physical")
        if self.num_physical < self.num_partitions:
            raise ValueError(f"num_physical={self.num_physical}; expected >= num_partitions="
                             f"{self.num_partitions}")
        object.__setattr__(self, "_fn", RoutingTablePartitioner(self.num_partitions, self.table))

    @property
    def fn(self) -> RoutingTablePartitioner:
        """The partition function (picklable; shipped inside the tasks' closures)."""
        return self._fn  # type: ignore[attr-defined]

    @property
    def version(self) -> int:
        return self.table.version

    @property
    def table_size(self) -> int:
        return len(self.table)

    def with_table(self, table: RoutingTable) -> "TableLayout":
        return TableLayout(self.num_partitions, self.num_physical, table)


@dataclass(frozen=True)
class GroupLayout:
    """Key-group layout: interval ``j`` = groups ``bounds[j]:bounds[j+1]`` on ``phys[j]``.

    Examples
    --------
    >>> lay = GroupLayout.initial(2, num_groups=4)
    >>> lay.bounds.tolist(), lay.phys.tolist(), lay.group_to_partition().tolist()
    ([0, 2, 4], [0, 1], [0, 0, 1, 1])
    """

    num_partitions: int
    num_physical: int
    num_groups: int
    bounds: np.ndarray
    phys: np.ndarray
    version: int = 0
    #: Physical partition of every group (a group map); None: the intervals decide.
    owner: np.ndarray | None = None

    kind = "groups"

    def __post_init__(self) -> None:
        n = check_num_partitions(self.num_partitions)
        check_num_partitions(self.num_groups, "num_groups")
        b = validate_bounds(self.bounds, self.num_groups, n)
        ph = np.asarray(self.phys, dtype=np.int64)
        if ph.shape != (n,):
            raise ValueError(f"phys has shape {ph.shape}; expected ({n},), one physical "
                             "partition per interval")
        if len(set(ph.tolist())) != n or ph.min() < 0 or ph.max() >= self.num_physical:
            raise ValueError(f"phys={ph.tolist()}; expected distinct partitions in "
                             f"[0, num_physical={self.num_physical})")
        object.__setattr__(self, "bounds", b)
        object.__setattr__(self, "phys", ph)
        if self.owner is not None:
            ow = np.asarray(self.owner, dtype=np.int64)
            if ow.shape != (self.num_groups,):
                raise ValueError(f"owner has shape {ow.shape}; expected ({self.num_groups},), "
                                 "one physical partition per key group")
            if not np.isin(ow, ph).all():
                bad = sorted(set(ow.tolist()) - set(ph.tolist()))[:5]
                raise ValueError(f"owner names partitions {bad} outside phys={ph.tolist()}")
            object.__setattr__(self, "owner", ow)
        object.__setattr__(self, "_fn", GroupMapPartitioner(self.num_physical,
                                                            self.group_to_partition()))

    @classmethod
    def initial(cls, num_partitions: int, num_groups: int | None = None) -> "GroupLayout":
        n = check_num_partitions(num_partitions)
        m = default_num_groups(n) if num_groups is None else num_groups
        return cls(n, n, m, equal_bounds(m, n), np.arange(n, dtype=np.int64))

    @property
    def fn(self) -> GroupMapPartitioner:
        return self._fn  # type: ignore[attr-defined]

    @property
    def table_size(self) -> int:
        """No per-key table: routing state is the n+1 cut points."""
        return 0

    def group_to_partition(self) -> np.ndarray:
        if self.owner is not None:
            return self.owner
        return np.repeat(self.phys, np.diff(self.bounds))

    def interval_of_group(self) -> np.ndarray:
        """Logical partition (index into ``phys``) of every group."""
        if self.owner is not None:
            where = np.full(self.num_physical, -1, dtype=np.int64)
            where[self.phys] = np.arange(self.num_partitions)
            return where[self.owner]
        return np.repeat(np.arange(self.num_partitions, dtype=np.int64), np.diff(self.bounds))

    def after_map(self, assignment: np.ndarray, num_partitions: int) -> "GroupLayout":
        """Layout after a group-map plan: group ``g`` on logical partition ``assignment[g]``.

        Logical partitions that exist now keep their physical partition (what stays does
        not move); new ones take the lowest free physical partitions.

        Examples
        --------
        >>> lay = GroupLayout.initial(2, num_groups=4).after_map(np.array([0, 1, 0, 1]), 2)
        >>> lay.group_to_partition().tolist(), lay.version
        ([0, 1, 0, 1], 1)
        """
        a = np.asarray(assignment, dtype=np.int64)
        n = check_num_partitions(num_partitions)
        if a.shape != (self.num_groups,) or (a.size and (a.min() < 0 or a.max() >= n)):
            raise ValueError(f"assignment must give every one of {self.num_groups} groups a "
                             f"partition in [0, {n})")
        keep = self.phys[:n].tolist()
        taken = set(keep)
        free = (p for p in range(10 ** 9) if p not in taken)
        phys = np.array(keep + [next(free) for _ in range(n - len(keep))], dtype=np.int64)
        num_physical = max(self.num_physical, int(phys.max()) + 1)
        return GroupLayout(n, num_physical, self.num_groups, equal_bounds(self.num_groups, n),
                           phys, self.version + 1, phys[a])

    def after_plan(self, new_bounds: np.ndarray, owners: np.ndarray) -> "GroupLayout":
        """Layout after an interval plan (SSM ``bounds``/``owners``, Ding et al. §3).

        New interval ``j`` stays on the physical partition of its owner when the owner is
        an old node, so the overlap does not move; new nodes get the lowest free physical
        partitions (growing ``num_physical`` when needed).
        """
        new_bounds = np.asarray(new_bounds, dtype=np.int64)
        owners = np.asarray(owners, dtype=np.int64)
        n_new = int(new_bounds.shape[0] - 1)
        if owners.shape != (n_new,):
            raise ValueError(f"owners has shape {owners.shape}; expected ({n_new},)")
        phys = np.full(n_new, -1, dtype=np.int64)
        used: set[int] = set()
        for j, o in enumerate(owners.tolist()):
            if 0 <= o < self.num_partitions:
                p = int(self.phys[o])
                if p not in used:
                    phys[j] = p
                    used.add(p)
        free = (p for p in range(10 ** 9) if p not in used)
        for j in range(n_new):
            if phys[j] < 0:
                phys[j] = next(free)
                used.add(int(phys[j]))
        num_physical = max(self.num_physical, int(phys.max()) + 1)
        return GroupLayout(n_new, num_physical, self.num_groups, new_bounds, phys,
                           self.version + 1)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, GroupLayout) and other.num_partitions == self.num_partitions
                and other.num_physical == self.num_physical
                and other.num_groups == self.num_groups and other.version == self.version
                and np.array_equal(other.bounds, self.bounds)
                and np.array_equal(other.phys, self.phys)
                and np.array_equal(other.group_to_partition(), self.group_to_partition()))

    __hash__ = None  # type: ignore[assignment]


Layout = TableLayout | GroupLayout
