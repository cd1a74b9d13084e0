"""Fitters of the routing-table strategies: key statistics -> RoutingTablePartitioner.

Shape (see :mod:`sparkbalance.strategies`)::

    fit(stats, num_partitions, *, current=None, theta=0.08, max_table=..., beta=1.5,
        **params) -> RoutingTablePartitioner

``current`` is the partition function routing today (a :class:`RoutingTablePartitioner`
whose table is the starting point; None or any other key-grouping function: plain hash
homes, empty table). When the partition count changes, planning starts from plain hash
(every key's home changes anyway).
"""
from __future__ import annotations

from typing import Any

from ..planning.base import DEFAULT_BETA, DEFAULT_MAX_TABLE, DEFAULT_THETA, Planner
from ..planning.llfd_planner import LLFD
from ..planning.minmig import MinMig
from ..planning.mintable import MinTable
from ..planning.mixed import Mixed, MixedBF
from ..routing.base import PartitionFunction, check_num_partitions
from ..routing.table import RoutingTable, RoutingTablePartitioner
from ..stats.keystats import KeyStats
from ..stats.workload import Workload

__all__ = ["fit_mixed", "fit_mintable", "fit_minmig", "fit_readj", "fit_mixedbf",
           "fit_planner", "plan_from_stats", "PLANNERS"]


def _readj_cls():
    from ..planning.readj import Readj
    return Readj


#: registry name -> planner class (Readj loaded lazily)
PLANNERS: dict[str, Any] = {"mixed": Mixed, "mixedbf": MixedBF, "mintable": MinTable,
                            "minmig": MinMig, "llfd": LLFD, "readj": _readj_cls}


def _planner_cls(name: str) -> type[Planner]:
    if name not in PLANNERS:
        raise ValueError(f"planner={name!r}; expected one of {', '.join(PLANNERS)}")
    cls = PLANNERS[name]
    return cls() if cls is _readj_cls else cls


def plan_from_stats(name: str, stats: KeyStats, num_partitions: int, *,
                    current: PartitionFunction | None = None, **params: Any):
    """Plan with planner ``name`` on ``stats`` starting from ``current``; returns the Plan.

    Examples
    --------
    >>> s = KeyStats.from_counts({i: 100 if i == 0 else 1 for i in range(50)})
    >>> plan_from_stats("mixed", s, 4).table_size <= 3000
    True
    """
    if not isinstance(stats, KeyStats):
        raise TypeError(f"stats is {type(stats).__name__}; expected KeyStats")
    n = check_num_partitions(num_partitions)
    table = RoutingTable()
    start = current
    if current is not None:
        if not isinstance(current, PartitionFunction):
            raise TypeError(f"current is {type(current).__name__}; expected a "
                            "PartitionFunction or None")
        if current.num_partitions != n or current.splits_keys:
            start = None  # rescaling / leaving a splitting function: start from hash
        elif isinstance(current, RoutingTablePartitioner):
            table = current.table
    workload = Workload.from_stats(stats, start, n)
    if start is not None and not isinstance(start, RoutingTablePartitioner):
        # another key-grouping function (e.g. key groups): its routes become table entries
        table = None
    planner = _planner_cls(name)(**params)
    return planner.plan(workload, table)


def fit_planner(name: str, stats: KeyStats | None, num_partitions: int, *,
                current: PartitionFunction | None = None, **params: Any
                ) -> RoutingTablePartitioner:
    """Fit a :class:`RoutingTablePartitioner` with planner ``name``."""
    if stats is None:
        raise ValueError(f"strategy {name!r} needs key statistics; got stats=None")
    plan = plan_from_stats(name, stats, num_partitions, current=current, **params)
    return RoutingTablePartitioner(num_partitions, plan.table)


def fit_mixed(stats: KeyStats | None, num_partitions: int, *,
              current: PartitionFunction | None = None, theta: float = DEFAULT_THETA,
              max_table: int | None = DEFAULT_MAX_TABLE, beta: float = DEFAULT_BETA,
              **params: Any) -> RoutingTablePartitioner:
    """Mixed (Fang et al. Algorithm 4).

    Examples
    --------
    >>> s = KeyStats.from_counts({i: 1000 if i < 3 else 1 for i in range(200)})
    >>> f = fit_mixed(s, 4, theta=0.1)
    >>> type(f).__name__, f.num_partitions
    ('RoutingTablePartitioner', 4)
    """
    return fit_planner("mixed", stats, num_partitions, current=current, theta=theta,
                       max_table=max_table, beta=beta, **params)


def fit_mixedbf(stats: KeyStats | None, num_partitions: int, *,
                current: PartitionFunction | None = None, theta: float = DEFAULT_THETA,
                max_table: int | None = DEFAULT_MAX_TABLE, beta: float = DEFAULT_BETA,
                **params: Any) -> RoutingTablePartitioner:
    """MixedBF (every n_back, cheapest feasible)."""
    return fit_planner("mixedbf", stats, num_partitions, current=current, theta=theta,
                       max_table=max_table, beta=beta, **params)


def fit_mintable(stats: KeyStats | None, num_partitions: int, *,
                 current: PartitionFunction | None = None, theta: float = DEFAULT_THETA,
                 max_table: int | None = DEFAULT_MAX_TABLE, beta: float = DEFAULT_BETA,
                 **params: Any) -> RoutingTablePartitioner:
    """MinTable (Fang et al. Algorithm 2)."""
    return fit_planner("mintable", stats, num_partitions, current=current, theta=theta,
                       max_table=max_table, beta=beta, **params)


def fit_minmig(stats: KeyStats | None, num_partitions: int, *,
               current: PartitionFunction | None = None, theta: float = DEFAULT_THETA,
               max_table: int | None = None, beta: float = DEFAULT_BETA,
               **params: Any) -> RoutingTablePartitioner:
    """MinMig (Fang et al. Algorithm 3; table size not enforced)."""
    return fit_planner("minmig", stats, num_partitions, current=current, theta=theta,
                       max_table=max_table, beta=beta, **params)


def fit_readj(stats: KeyStats | None, num_partitions: int, *,
              current: PartitionFunction | None = None, theta: float = DEFAULT_THETA,
              max_table: int | None = DEFAULT_MAX_TABLE, beta: float = DEFAULT_BETA,
              **params: Any) -> RoutingTablePartitioner:
    """Readj baseline (Gedik 2014)."""
    return fit_planner("readj", stats, num_partitions, current=current, theta=theta,
                       max_table=max_table, beta=beta, **params)
