"""Partition functions: the per-record hot path (pure Python, picklable, no pyspark)."""
from __future__ import annotations

from .base import PartitionFunction, check_num_partitions
from .hash import HashPartitioner, home_partition, home_partitions
from .keygroups import KeyGroupPartitioner, equal_bounds, key_group, key_groups
from .table import RoutingDelta, RoutingTable, RoutingTablePartitioner

__all__ = [
    "PartitionFunction", "check_num_partitions",
    "HashPartitioner", "home_partition", "home_partitions",
    "RoutingTable", "RoutingDelta", "RoutingTablePartitioner",
    "KeyGroupPartitioner", "key_group", "key_groups", "equal_bounds",
]

# Splitting partitioners (PKG, D/W-Choices, TAG) are added by their modules below when present.
try:  # pragma: no cover - filled in as modules land
    from .pkg import PKGPartitioner  # noqa: F401
    __all__.append("PKGPartitioner")
except ImportError:
    pass
try:  # pragma: no cover
    from .choices import ChoicesPartitioner  # noqa: F401
    __all__.append("ChoicesPartitioner")
except ImportError:
    pass
try:  # pragma: no cover
    from .tag import TimeAwarePartitioner  # noqa: F401
    __all__.append("TimeAwarePartitioner")
except ImportError:
    pass
