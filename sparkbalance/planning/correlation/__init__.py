"""Correlation-based load distribution (Xing, Zdonik, Hwang, "Dynamic Load Distribution in
the Borealis Stream Processor", ICDE 2005): balance the *time series* of load.

Units (key groups, operators) carry an (m, k) series of loads over the last k samples
(per-batch costs); nodes (partitions) carry the sum of their units' series. Units whose
loads rise and fall together are separated, units that alternate are co-located, so every
node's load stays flat and fewer migrations are needed when load fluctuates.

:class:`LoadWindow` keeps the last k samples of every unit (feed it one batch's per-group
costs at a time). Planners (pure numpy, never import pyspark), all returning a
:class:`Placement`:

* :class:`GlobalCorrelation` (COR-GLB, §3.4): ``plan(series, num_nodes, assignment=None,
  movable=None)``.
* :class:`PairwiseCorrelation` (COR-BAL / COR-RE / COR-SE, -IMP; §3.3):
  ``plan(series, assignment, num_nodes, movable=None)``.
* :class:`CorrelationPlanner`: COR-GLB once, then a pairwise scheme (§5.4), the form the
  keyed state runs (``KeyedStateOperator(planner="correlation")``).
* :class:`LLFPlacement`, :class:`RandomPlacement` (§5.1.3 baselines), ``scope="global"`` or
  ``"pairwise"`` with the matching call shape.

Every ``plan`` also takes keywords (``plan(series, assignment=a, num_nodes=n,
movable=mv, sizes=bytes)``), the form the keyed state should use for all of them.

Our readings of the paper (each explained where it is implemented): ρ = 0 for a constant
series (``stats``); scores recomputed after every move, ties to the larger load then the
lower index, all-zero units never moved (``layout``); -IMP nodes visited by decreasing
divergent load level (``pairwise``); a global plan's nodes renamed to keep the most load
or state in place when the current assignment is given (``relabel``; an extension).

Examples
--------
>>> import numpy as np
>>> from sparkbalance.planning.correlation import GlobalCorrelation, correlation
>>> t = np.arange(10)
>>> up, down = 1.0 + (t < 5), 1.0 + (t >= 5)
>>> float(correlation(up, down))
-1.0
>>> GlobalCorrelation().plan(np.array([up, up, down, down]), 2).node_std_mean
0.0
"""
from __future__ import annotations

from .baselines import SCOPES, LLFPlacement, RandomPlacement
from .global_ import GlobalCorrelation
from .pairwise import MODES, PairwiseCorrelation
from .params import DEFAULT_DELTA, DEFAULT_EPSILON, DEFAULT_THETA, DEFAULT_WINDOW, POLICIES
from .placement import Placement
from .stream import CorrelationPlanner, series_imbalance
from .stats import (ZERO_STD_RTOL, LoadStatistics, LoadWindow, correlation,
                    correlation_matrix, covariance, load_statistics, mean_pair_correlation,
                    node_series, node_std_mean, unit_node_correlation)

__all__ = ["GlobalCorrelation", "PairwiseCorrelation", "CorrelationPlanner", "series_imbalance", "LLFPlacement", "RandomPlacement",
           "Placement", "LoadWindow", "correlation", "covariance", "correlation_matrix",
           "load_statistics", "LoadStatistics", "node_series", "unit_node_correlation",
           "mean_pair_correlation", "node_std_mean", "DEFAULT_EPSILON", "DEFAULT_DELTA",
           "DEFAULT_THETA", "DEFAULT_WINDOW", "ZERO_STD_RTOL", "MODES", "SCOPES", "POLICIES"]
