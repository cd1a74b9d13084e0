"""The result of a correlation-based (or baseline) placement: a value, never touches data.

A :class:`Placement` says which node every unit goes to, which units change node relative
to the assignment the planner started from, how much load (and state, when sizes were
given) that moves, and the quality figures of Xing et al.: the average node load standard
deviation and the mean pairwise node correlation, both over the planner's window.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from .stats import load_statistics, mean_pair_correlation, node_series, node_std_mean

__all__ = ["Placement", "make_placement"]


@dataclass(frozen=True, eq=False)  # holds numpy arrays: identity equality
class Placement:
    """What a planner decided.

    Attributes
    ----------
    assignment : length-m int array, the node of every unit after planning.
    previous : the assignment the planner started from (None for a global plan from
        scratch; then every unit counts as placed, none as moved).
    moved_units : indices of the units whose node changed (net: a unit moved away and back
        within one plan does not count).
    load_moved : Σ E S_o over ``moved_units`` (Xing et al. §5.2.1 footnote 3).
    state_moved : Σ size_o over ``moved_units`` when sizes were given, else None.
    mean_pair_correlation : (2 / n(n−1)) Σ_{i<j} ρ_ij of the node series after planning.
    node_std_mean : (1/n) Σ_j √var X_j after planning; Theorem 1's bound is ``std_bound``.
    std_bound : std(X)/n for the total series X (Xing et al. Theorem 1, Fig. 4 "MINIMUM").
    node_means : E X_j of every node after planning.
    seconds : wall time of ``plan()``.
    planner, params : name and parameters of the planner; ``info``: extra figures.

    Examples
    --------
    >>> import numpy as np
    >>> from sparkbalance.planning.correlation import GlobalCorrelation
    >>> s = np.array([[2., 0.], [0., 2.], [2., 0.], [0., 2.]])
    >>> p = GlobalCorrelation().plan(s, 2)
    >>> p.node_std_mean, p.mean_pair_correlation
    (0.0, 0.0)
    """

    assignment: np.ndarray
    previous: np.ndarray | None
    moved_units: np.ndarray
    load_moved: float
    state_moved: float | None
    mean_pair_correlation: float
    node_std_mean: float
    std_bound: float
    node_means: np.ndarray
    seconds: float
    planner: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    info: Mapping[str, Any] = field(default_factory=dict, repr=False)
    _loads: np.ndarray | None = field(default=None, repr=False)
    _story: Mapping[int, Sequence[str]] = field(default_factory=dict, repr=False)

    @property
    def num_moved(self) -> int:
        return int(self.moved_units.size)

    @property
    def moves(self) -> list[tuple[int, int, int]]:
        """(unit, src, dst) of every moved unit, by unit index."""
        if self.previous is None:
            return []
        return [(int(u), int(self.previous[u]), int(self.assignment[u]))
                for u in self.moved_units]

    def summary(self) -> str:
        """One line with the figures that matter.

        Examples
        --------
        >>> from sparkbalance.planning.correlation import GlobalCorrelation
        >>> GlobalCorrelation().plan([[1., 0.], [0., 1.]], 1).summary().startswith("COR-GLB")
        True
        """
        return (f"{self.planner}: ρ̄ {self.mean_pair_correlation:.3f}, node std "
                f"{self.node_std_mean:.4g} (bound {self.std_bound:.4g}), "
                f"{self.num_moved} moved, load moved {self.load_moved:.4g}, "
                f"{self.seconds * 1e3:.1f} ms")

    def explain(self, unit: int) -> str:
        """Why ``unit`` ends on its node: the planner's decisions about it, in order.

        Examples
        --------
        >>> from sparkbalance.planning.correlation import PairwiseCorrelation
        >>> s = [[1., 1.], [1., 1.], [1., 1.], [1., 1.]]
        >>> p = PairwiseCorrelation().plan(s, [0, 0, 0, 0], 2)
        >>> p.explain(0).startswith("unit 0: moved 0 -> 1")
        True
        """
        m = self.assignment.size
        if not (isinstance(unit, (int, np.integer)) and 0 <= unit < m):
            raise ValueError(f"unit={unit!r}; expected an index in [0, {m})")
        u = int(unit)
        dst = int(self.assignment[u])
        load = "" if self._loads is None else f" (load {self._loads[u]:.4g})"
        if self.previous is None:
            head = f"unit {u}: placed on {dst}{load}"
        elif int(self.previous[u]) != dst:
            head = f"unit {u}: moved {int(self.previous[u])} -> {dst}{load}"
        else:
            head = f"unit {u}: stays on {dst}{load}"
        steps = list(self._story.get(u, ()))
        if not steps:
            return head + "; not selected by the planner"
        return head + "; " + "; ".join(steps)


def make_placement(series: np.ndarray, assignment: np.ndarray, previous: np.ndarray | None,
                   num_nodes: int, *, seconds: float, planner: str,
                   params: Mapping[str, Any], sizes: np.ndarray | None = None,
                   info: Mapping[str, Any] | None = None,
                   story: Mapping[int, Sequence[str]] | None = None) -> Placement:
    """Measure a final assignment into a :class:`Placement` (figures over ``series``).

    Examples
    --------
    >>> import numpy as np
    >>> p = make_placement(np.array([[1., 0.], [0., 1.]]), np.array([0, 0]), np.array([0, 1]),
    ...                    2, seconds=0.0, planner="manual", params={})
    >>> p.moved_units.tolist(), p.load_moved, p.node_std_mean
    ([1], 0.5, 0.0)
    """
    a = np.asarray(assignment, dtype=np.int64)
    loads = series.mean(axis=1) if series.size else np.zeros(series.shape[0])
    if previous is None:
        moved = np.zeros(0, dtype=np.int64)
    else:
        moved = np.flatnonzero(a != previous)
    x = node_series(series, a, num_nodes)
    total_std = float(load_statistics(x.sum(axis=0)[None, :]).std[0]) if series.size else 0.0
    return Placement(
        assignment=a, previous=None if previous is None else np.asarray(previous, np.int64),
        moved_units=moved, load_moved=float(loads[moved].sum()),
        state_moved=None if sizes is None else float(sizes[moved].sum()),
        mean_pair_correlation=mean_pair_correlation(x), node_std_mean=node_std_mean(x),
        std_bound=total_std / num_nodes, node_means=x.mean(axis=1), seconds=seconds,
        planner=planner, params=dict(params), info=dict(info or {}), _loads=loads,
        _story={k: tuple(v) for k, v in (story or {}).items()})
