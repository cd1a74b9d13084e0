"""Mixed routing (Fang et al.): a small explicit table in front of the hash.

``F(k) = R[k] if k in R else h(k)``. The table ``R`` holds only keys whose destination
differs from their hash home, so it stays small (at most ``A_max`` entries) however many
keys there are. Tables are immutable and versioned: a planner produces a
:class:`RoutingDelta`, and ``table.apply(delta)`` is the next version.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterable, Iterator, Mapping

import numpy as np

from ..hashing import P, _A, _B, _SEED_INT, _SEED_STR, _crc32, raw_hash, validate_key
from .base import PartitionFunction
from .hash import home_partition, home_partitions

__all__ = ["RoutingDelta", "RoutingTable", "RoutingTablePartitioner"]

_A0, _B0 = _A[0], _B[0]


@dataclass(frozen=True)
class RoutingDelta:
    """Difference between two routing tables.

    ``added``: keys that get an entry; ``changed``: keys whose entry points elsewhere;
    ``removed``: keys whose entry is dropped (they go back to their hash home).

    Examples
    --------
    >>> d = RoutingDelta(added={"a": 1})
    >>> d.keys == frozenset({"a"}) and not d.is_empty
    True
    """

    added: Mapping[Any, int] = field(default_factory=dict)
    changed: Mapping[Any, int] = field(default_factory=dict)
    removed: frozenset = frozenset()

    def __post_init__(self) -> None:
        object.__setattr__(self, "added", MappingProxyType(dict(self.added)))
        object.__setattr__(self, "changed", MappingProxyType(dict(self.changed)))
        object.__setattr__(self, "removed", frozenset(self.removed))
        overlap = (set(self.added) & set(self.changed)) | (
            (set(self.added) | set(self.changed)) & self.removed)
        if overlap:
            raise ValueError(f"RoutingDelta: keys {sorted(map(repr, overlap))[:5]} appear in more "
                             "than one of added/changed/removed; expected disjoint sets")

    @property
    def keys(self) -> frozenset:
        """Every key whose entry the delta touches."""
        return frozenset(self.added) | frozenset(self.changed) | self.removed

    @property
    def is_empty(self) -> bool:
        return not (self.added or self.changed or self.removed)

    def __len__(self) -> int:
        return len(self.added) + len(self.changed) + len(self.removed)

    def __reduce__(self):  # MappingProxyType does not pickle
        return (RoutingDelta, (dict(self.added), dict(self.changed), self.removed))


def _is_nan(key: Any) -> bool:
    return type(key) is float and key != key


class RoutingTable(Mapping):
    """Immutable, versioned map key -> partition (only keys routed away from their home).

    Examples
    --------
    >>> t = RoutingTable({"hot": 3})
    >>> t2 = t.apply(RoutingDelta(changed={"hot": 1}, added={"warm": 0}))
    >>> (t2.version, t2["hot"], len(t2), t["hot"])
    (1, 1, 2, 3)
    """

    __slots__ = ("_routes", "_version")

    def __init__(self, routes: Mapping[Any, int] | Iterable[tuple[Any, int]] = (),
                 version: int = 0) -> None:
        d = dict(routes)
        for k, p in d.items():
            validate_key(k)
            if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 0:
                raise ValueError(f"routing table entry {k!r} -> {p!r}; expected a partition "
                                 "index (int >= 0)")
        if isinstance(version, bool) or not isinstance(version, (int, np.integer)) or version < 0:
            raise ValueError(f"version={version!r}; expected an int >= 0")
        self._routes = {k: int(p) for k, p in d.items()}
        self._version = int(version)

    @property
    def version(self) -> int:
        return self._version

    @property
    def routes(self) -> Mapping[Any, int]:
        """Read-only view of the entries."""
        return MappingProxyType(self._routes)

    def __getitem__(self, key: Any) -> int:
        return self._routes[key]

    def get(self, key: Any, default: Any = None) -> Any:
        return self._routes.get(key, default)

    def __contains__(self, key: object) -> bool:
        try:
            return key in self._routes
        except TypeError:
            return False

    def __iter__(self) -> Iterator[Any]:
        return iter(self._routes)

    def __len__(self) -> int:
        return len(self._routes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RoutingTable):
            return NotImplemented
        return self._version == other._version and self._routes == other._routes

    def __hash__(self) -> int:
        return hash((self._version, len(self._routes)))

    def __repr__(self) -> str:
        return f"RoutingTable(<{len(self)} entries>, version={self._version})"

    def __reduce__(self):
        return (RoutingTable, (self._routes, self._version))

    def max_partition(self) -> int:
        """Largest partition index named by an entry (-1 when empty)."""
        return max(self._routes.values(), default=-1)

    def apply(self, delta: RoutingDelta) -> "RoutingTable":
        """Return the next version with ``delta`` applied.

        Raises ``KeyError`` when the delta does not fit this table (adding an existing
        key, changing or removing a missing one) — a sign of a stale plan.
        """
        routes = dict(self._routes)
        for k, p in delta.added.items():
            if k in routes:
                raise KeyError(f"delta adds {k!r} which already has an entry (version "
                               f"{self._version}); the plan is stale")
            routes[k] = p
        for k, p in delta.changed.items():
            if k not in routes:
                raise KeyError(f"delta changes {k!r} which has no entry (version "
                               f"{self._version}); the plan is stale")
            routes[k] = p
        for k in delta.removed:
            if k not in routes:
                raise KeyError(f"delta removes {k!r} which has no entry (version "
                               f"{self._version}); the plan is stale")
            del routes[k]
        return RoutingTable(routes, self._version + 1)

    def diff(self, new: "RoutingTable | Mapping[Any, int]") -> RoutingDelta:
        """Delta that turns this table's entries into ``new``'s."""
        new_routes = new.routes if isinstance(new, RoutingTable) else dict(new)
        old = self._routes
        added = {k: p for k, p in new_routes.items() if k not in old}
        changed = {k: p for k, p in new_routes.items() if k in old and old[k] != p}
        removed = frozenset(k for k in old if k not in new_routes)
        return RoutingDelta(added, changed, removed)


class RoutingTablePartitioner(PartitionFunction):
    """Mixed routing: ``F(k) = table[k]`` if ``k`` has an entry, else ``h(k)``.

    Examples
    --------
    >>> f = RoutingTablePartitioner(4, RoutingTable({"hot": 2}))
    >>> f("hot")
    2
    >>> f("cold") == home_partition("cold", 4)
    True
    """

    #: Partition of the table's NaN entry (None: no NaN key); a class default keeps
    #: instances pickled before it existed working.
    _nan: int | None = None

    def __init__(self, num_partitions: int, table: RoutingTable | Mapping[Any, int] | None = None
                 ) -> None:
        super().__init__(num_partitions)
        if table is None:
            table = RoutingTable()
        elif not isinstance(table, RoutingTable):
            table = RoutingTable(table)
        if table.max_partition() >= self.num_partitions:
            bad = [k for k, p in table.items() if p >= self.num_partitions][:3]
            raise ValueError(f"routing table sends {bad!r} to partition {table.max_partition()}; "
                             f"expected < num_partitions={self.num_partitions}")
        self.table = table
        self._routes = dict(table.routes)  # plain dict: fastest lookup on the hot path
        # Every NaN is one key, as Spark groups them (a dict finds a NaN only by identity).
        self._nan = next((p for k, p in self._routes.items() if _is_nan(k)), None)

    def partition(self, key: Any) -> int:
        p = self._routes.get(key)
        if p is None:  # h(k), inlined with raw_hash's int/str cases: the per-record hot path
            t = type(key)
            if t is int:
                r = _crc32(b"%d" % key, _SEED_INT)
            elif t is str:
                r = _crc32(key.encode("utf-8", "surrogatepass"), _SEED_STR)
            else:
                if self._nan is not None and t is float and key != key:
                    return self._nan
                r = raw_hash(key)
            return ((r * _A0 + _B0) % P) % self.num_partitions
        return p

    def assign(self, keys: Iterable[Any] | np.ndarray) -> np.ndarray:
        items = keys.tolist() if isinstance(keys, np.ndarray) else list(keys)
        out = home_partitions(items, self.num_partitions)
        if not self._routes:
            return out
        # Distinct keys (the planners' case): index them once in C and visit only the
        # table's entries, so the cost stays O(K) hashing + O(|R|) Python.
        position = dict(zip(items, range(len(items))))
        if len(position) == len(items):
            for k, p in self._routes.items():
                i = position.get(k)
                if i is not None:
                    out[i] = p
            return self._nan_entries(items, out)
        get = self._routes.get  # repeated keys: one lookup per item
        for i, k in enumerate(items):
            p = get(k)
            if p is not None:
                out[i] = p
        return self._nan_entries(items, out)

    def _nan_entries(self, items: list, out: np.ndarray) -> np.ndarray:
        """Route every NaN item by the table's NaN entry, if it has one."""
        if self._nan is not None:
            for i, k in enumerate(items):
                if _is_nan(k):
                    out[i] = self._nan
        return out

    def with_table(self, table: RoutingTable) -> "RoutingTablePartitioner":
        """Same partition count, another table version."""
        return RoutingTablePartitioner(self.num_partitions, table)

    def __eq__(self, other: object) -> bool:
        return (type(other) is RoutingTablePartitioner
                and other.num_partitions == self.num_partitions and other.table == self.table)

    def __hash__(self) -> int:
        return hash(("RoutingTablePartitioner", self.num_partitions, self.table))

    def __repr__(self) -> str:
        return (f"RoutingTablePartitioner(num_partitions={self.num_partitions}, "
                f"table=<{len(self.table)} entries, v{self.table.version}>)")
