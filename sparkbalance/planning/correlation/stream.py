"""Correlation-based placement over a stream of batches: COR-GLB once, then pairwise.

Xing et al. §5.4 (Fig. 10) combine the two: a global placement (COR-GLB) when the system
starts or its shape changes, then a pairwise scheme every period (their best, COR-SE-IMP:
selective exchange with the correlation improvement step). :class:`CorrelationPlanner`
is that combination with one call shape for the keyed state's controller:
``plan(series, assignment, num_nodes, sizes=...)``. The first plan (``assignment`` None
or ``global_first`` and nothing planned yet) and every plan that changes the node count
are global; the rest are pairwise from the current assignment.

Loads here are the per-batch costs of key groups (records, or seconds under time
weights), not the paper's utilisation of a node of capacity 1; ``capacity=None`` (the
default here) takes the mean node load of the window as the capacity, so ε and the -IMP
overload test keep the paper's relative meaning.

Examples
--------
>>> import numpy as np
>>> t = np.arange(10)
>>> up, down = 1.0 + (t < 5), 1.0 + (t >= 5)
>>> p = CorrelationPlanner().plan(np.array([up, up, down, down]), None, 2)
>>> sorted(p.assignment.tolist()), p.node_std_mean
([0, 0, 1, 1], 0.0)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .global_ import GlobalCorrelation
from .pairwise import MODES, PairwiseCorrelation
from .params import DEFAULT_DELTA, DEFAULT_EPSILON, DEFAULT_THETA, DEFAULT_WINDOW
from .placement import Placement

__all__ = ["CorrelationPlanner", "series_imbalance"]


def series_imbalance(series: np.ndarray, assignment: np.ndarray, num_nodes: int) -> float:
    """Mean over the window's samples of max / mean node load (λ of Fang et al. per batch).

    The figure a batch pays for: each batch waits for its slowest partition, so a placement
    whose node loads stay flat over the window has a mean λ near 1 even when every single
    unit's load swings. Samples with no load count as balanced.

    Examples
    --------
    >>> s = np.array([[2., 0.], [0., 2.], [2., 0.], [0., 2.]])   # two anti-correlated pairs
    >>> series_imbalance(s, np.array([0, 1, 0, 1]), 2), series_imbalance(s, np.array([0, 0, 1, 1]), 2)
    (2.0, 1.0)
    """
    s = np.asarray(series, dtype=np.float64)
    a = np.asarray(assignment, dtype=np.int64)
    nodes = np.zeros((num_nodes, s.shape[1]))
    np.add.at(nodes, a, s)
    mean = nodes.mean(axis=0)
    live = mean > 0
    if not live.any():
        return 1.0
    return float(np.mean(nodes.max(axis=0)[live] / mean[live]))


class CorrelationPlanner:
    """COR-GLB for the first plan and node-count changes, a pairwise scheme after that.

    Parameters
    ----------
    k : samples (batches) in the statistics window (Xing et al. Table 2: 10).
    mode : pairwise scheme, "exchange" (COR-SE, default), "redistribute" (COR-RE) or
        "one-way" (COR-BAL).
    improved : the -IMP correlation improvement step (two-way modes only).
    global_first : plan the first placement globally (False: pairwise from the start).
    theta, epsilon, delta, capacity : of :class:`GlobalCorrelation` and
        :class:`PairwiseCorrelation` (θ here is the paper's correlation threshold, not the
        keyed state's imbalance tolerance).

    Examples
    --------
    >>> CorrelationPlanner(mode="one-way", improved=False).name
    'COR-GLB + COR-BAL'
    """

    def __init__(self, k: int = DEFAULT_WINDOW, mode: str = "exchange", improved: bool = True,
                 global_first: bool = True, theta: float = DEFAULT_THETA,
                 epsilon: float = DEFAULT_EPSILON, delta: float = DEFAULT_DELTA,
                 capacity: float | None = None) -> None:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
            raise ValueError(f"k={k!r}; expected an int >= 2 (a correlation needs two samples)")
        if mode not in MODES:
            raise ValueError(f"mode={mode!r}; expected one of {tuple(MODES)}")
        self.k = int(k)
        self.global_first = bool(global_first)
        self.pairwise = PairwiseCorrelation(mode, improved and mode != "one-way", epsilon,
                                            delta, theta, capacity)
        self.global_ = GlobalCorrelation(theta, epsilon, capacity)
        self._planned = False

    @property
    def name(self) -> str:
        return ("COR-GLB + " if self.global_first else "") + self.pairwise.name

    def plan(self, series: Any, assignment: Any, num_nodes: int, *,
             sizes: Any = None) -> Placement:
        """Plan from the window ``series`` (m, k) and the current ``assignment``.

        ``assignment`` may name nodes >= ``num_nodes`` when the node count shrinks (a
        global plan then moves their units); None means nothing is placed yet.
        """
        a = None if assignment is None else np.asarray(assignment, dtype=np.int64)
        reshape = a is not None and a.size and int(a.max()) >= num_nodes
        if a is None or reshape or (self.global_first and not self._planned):
            out = self.global_.plan(series, num_nodes, a, sizes=sizes)
        else:
            out = self.pairwise.plan(series, a, num_nodes, sizes=sizes)
        self._planned = True
        return out
