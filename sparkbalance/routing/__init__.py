"""Partition functions: the per-record hot path (pure Python, picklable, no pyspark).

Key-grouping functions keep each key on one partition: :class:`HashPartitioner` (stable
hash mod n), :class:`RoutingTablePartitioner` (hash + a small routing table, Fang et al.),
:class:`KeyGroupPartitioner` and :class:`GroupMapPartitioner` (key groups in intervals or
mapped one by one, Ding et al., Xing et al.). Splitting functions may send one key's records
to several partitions: :class:`PKGPartitioner` (Nasir et al. 2015),
:class:`ChoicesPartitioner` (D-/W-Choices, Nasir et al. 2016), :class:`TimeAwarePartitioner`
(TAG, Yang et al.). :func:`save` / :func:`load` keep a fitted function as JSON
(``sparkbalance.save_plan`` / ``load_plan``).

Examples
--------
>>> from sparkbalance.routing import HashPartitioner
>>> f = HashPartitioner(4)
>>> f("user-7") == int(f.assign(["user-7"])[0])
True
"""
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
