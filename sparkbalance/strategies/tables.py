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

from typing import Any, Callable

from ..planning.base import DEFAULT_BETA, DEFAULT_MAX_TABLE, DEFAULT_THETA, Planner
from ..routing.base import PartitionFunction, check_num_partitions
from ..routing.table import RoutingTable, RoutingTablePartitioner
from ..stats.keystats import KeyStats
from ..stats.workload import Workload

__all__ = ["fit_mixed", "fit_mintable", "fit_minmig", "fit_readj", "fit_mixedbf",
           "fit_planner", "plan_from_stats"]


def plan_from_stats(name: str | type[Planner], stats: KeyStats, num_partitions: int, *,
                    current: PartitionFunction | None = None, **params: Any):
    """Plan with planner ``name`` (a registry name, or a planner class) on ``stats``
    starting from ``current``; returns the Plan.

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
    if isinstance(name, str):  # the class the registry lists under that name
        from . import planner_class
        name = planner_class(name)
    return name(**params).plan(workload, table)


def fit_planner(name: str | type[Planner], stats: KeyStats | None, num_partitions: int, *,
                current: PartitionFunction | None = None, **params: Any
                ) -> RoutingTablePartitioner:
    """Fit a :class:`RoutingTablePartitioner` with planner ``name`` (name or class)."""
    if stats is None:
        label = name if isinstance(name, str) else name.__name__.lower()
        raise ValueError(f"strategy {label!r} needs key statistics; got stats=None")
    plan = plan_from_stats(name, stats, num_partitions, current=current, **params)
    return RoutingTablePartitioner(num_partitions, plan.table)


def _fitter(name: str, doc: str, max_table_default: int | None = DEFAULT_MAX_TABLE
            ) -> Callable[..., RoutingTablePartitioner]:
    """The registry fitter of routing-table strategy ``name``: θ, A_max and β as keywords
    (their defaults are the registry record's, a unit test checks) and the planner's other
    parameters passed on."""
    def fit(stats: KeyStats | None, num_partitions: int, *,
            current: PartitionFunction | None = None, theta: float = DEFAULT_THETA,
            max_table: int | None = max_table_default, beta: float = DEFAULT_BETA,
            **params: Any) -> RoutingTablePartitioner:
        return fit_planner(name, stats, num_partitions, current=current, theta=theta,
                           max_table=max_table, beta=beta, **params)
    fit.__name__ = fit.__qualname__ = f"fit_{name}"
    fit.__doc__ = doc
    return fit


fit_mixed = _fitter("mixed", """Mixed (Fang et al. Algorithm 4).

    Examples
    --------
    >>> s = KeyStats.from_counts({i: 1000 if i < 3 else 1 for i in range(200)})
    >>> f = fit_mixed(s, 4, theta=0.1)
    >>> type(f).__name__, f.num_partitions
    ('RoutingTablePartitioner', 4)
    """)
fit_mixedbf = _fitter("mixedbf", "MixedBF (every n_back, cheapest feasible; Fang et al. §3.3).")
fit_mintable = _fitter("mintable", "MinTable (Fang et al. Algorithm 2).")
fit_minmig = _fitter("minmig", "MinMig (Fang et al. Algorithm 3; table size not enforced).",
                     max_table_default=None)
fit_readj = _fitter("readj", "Readj baseline (Gedik 2014).")
