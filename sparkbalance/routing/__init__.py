"""Partition functions: the per-record hot path (pure Python, picklable, no pyspark)."""
from __future__ import annotations

from .base import PartitionFunction, check_num_partitions, partition_func
from .choices import ChoicesPartitioner
from .hash import HashPartitioner, home_partition, home_partitions
from .keygroups import (GroupMapPartitioner, KeyGroupPartitioner, equal_bounds, key_group,
                        key_groups)
from .persist import load, save
from .pkg import PKGPartitioner
from .splitting import SplittingPartitioner
from .table import RoutingDelta, RoutingTable, RoutingTablePartitioner
from .tag import TimeAwarePartitioner

__all__ = [
    "PartitionFunction", "check_num_partitions", "partition_func",
    "HashPartitioner", "home_partition", "home_partitions",
    "RoutingTable", "RoutingDelta", "RoutingTablePartitioner",
    "KeyGroupPartitioner", "key_group", "key_groups", "equal_bounds",
    "GroupMapPartitioner", "save", "load",
    "SplittingPartitioner", "PKGPartitioner", "ChoicesPartitioner", "TimeAwarePartitioner",
]
