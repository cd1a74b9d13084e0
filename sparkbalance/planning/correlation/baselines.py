"""The baselines of Xing et al. §5.1.3: largest-load-first (LLF) and random (RAND) load
balancing, each global (LLF-GLB, RAND-GLB) and pairwise one-way (LLF-BAL, RAND-BAL).

They run the very same scheme as the correlation planners (§4: "the basic load balancing
scheme of the two algorithms are the same"), only the unit selection differs: the largest
mean load first, or a uniformly random unit. Global: the least loaded node repeatedly takes
the selected unplaced unit, then one round of pairwise one-way balancing with the same
selection. Pairwise: nodes paired by load, pairs whose loads differ by more than ε move
selected units from the more loaded node while the moved load stays < (L₁ − L₂)/2.
Operators only ever move from the more loaded node to the less loaded one.

Call shapes: ``scope="global"`` plans like :class:`~.global_.GlobalCorrelation`
(``plan(series, num_nodes, assignment=None, movable=None)``); ``scope="pairwise"`` like
:class:`~.pairwise.PairwiseCorrelation` (``plan(series, assignment, num_nodes,
movable=None)``). Keyword calls ``plan(series, assignment=a, num_nodes=n)`` work for both.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from .global_ import check_global_inputs, finish_global, global_layout
from .layout import Layout, one_way
from .pairwise import pairwise_round, resolve_capacity
from .params import (DEFAULT_EPSILON, check_assignment, check_capacity, check_movable,
                     check_nonneg, check_num_nodes, check_series, check_sizes)
from .placement import Placement, make_placement

__all__ = ["LLFPlacement", "RandomPlacement", "SCOPES"]

SCOPES = ("global", "pairwise")


class _Baseline:
    policy = ""
    prefix = ""

    def __init__(self, scope: str, epsilon: float, capacity: float | None,
                 relabel: bool) -> None:
        if scope not in SCOPES:
            raise ValueError(f"scope={scope!r}; expected one of {SCOPES}")
        self.scope = scope
        self.epsilon = check_nonneg("epsilon", epsilon)
        self.capacity = None if capacity is None else check_capacity(capacity)
        self.relabel = bool(relabel)

    @property
    def name(self) -> str:
        return f"{self.prefix}-{'GLB' if self.scope == 'global' else 'BAL'}"

    def params(self) -> dict[str, Any]:
        return {"scope": self.scope, "epsilon": self.epsilon, "capacity": self.capacity,
                "relabel": self.relabel}

    def _rng(self) -> np.random.Generator | None:
        return None

    def plan(self, series: Any, *args: Any, **kwargs: Any) -> Placement:
        """Global form ``plan(series, num_nodes, assignment=None, movable=None, *,
        sizes=None)``; pairwise form ``plan(series, assignment, num_nodes, movable=None, *,
        sizes=None)`` (see the module doc)."""
        if self.scope == "global":
            return self._global(series, *args, **kwargs)
        return self._pairwise(series, *args, **kwargs)

    def _global(self, series: Any, num_nodes: int, assignment: Any = None,
                movable: Any = None, *, sizes: Any = None) -> Placement:
        t0 = time.perf_counter()
        s, n, a0, mv, sz = check_global_inputs(series, num_nodes, assignment, movable, sizes)
        lay = global_layout(s, n, a0, mv, self.policy, self.name, self._rng())
        cap = resolve_capacity(self.capacity, lay)
        pairs = pairwise_round(lay, lambda hi, lo: one_way(lay, hi, lo, self.name + " one-way"),
                               self.epsilon * cap)
        final, renamed = finish_global(lay, a0, mv, sz, self.relabel)
        return make_placement(s, final, a0, n, seconds=time.perf_counter() - t0,
                              planner=self.name, params=self.params(), sizes=sz,
                              info={"one_way_pairs": pairs, "relabelled": renamed,
                                    "capacity": cap}, story=lay.story)

    def _pairwise(self, series: Any, assignment: Any, num_nodes: int, movable: Any = None,
                  *, sizes: Any = None) -> Placement:
        t0 = time.perf_counter()
        s = check_series(series)
        m = s.shape[0]
        n = check_num_nodes(num_nodes)
        a0 = check_assignment(assignment, m, n)
        lay = Layout(s, a0, check_movable(movable, m), n, policy=self.policy, rng=self._rng())
        cap = resolve_capacity(self.capacity, lay)
        pairs = pairwise_round(lay, lambda hi, lo: one_way(lay, hi, lo, self.name),
                               self.epsilon * cap)
        return make_placement(s, lay.a, a0, n, seconds=time.perf_counter() - t0,
                              planner=self.name, params=self.params(),
                              sizes=check_sizes(sizes, m),
                              info={"pairs": pairs, "capacity": cap}, story=lay.story)


class LLFPlacement(_Baseline):
    """Largest-load-first load balancing (LLF-GLB / LLF-BAL of Xing et al. §5.1.3).

    Parameters
    ----------
    scope : "global" (LLF-GLB) or "pairwise" (LLF-BAL, one-way).
    epsilon : ε, pairs act when loads differ by more than ε·capacity.
    capacity : node capacity in load units (None = the mean node load).
    relabel : global scope: rename nodes to keep the most in place.

    Examples
    --------
    >>> p = LLFPlacement().plan([[3., 3.], [2., 2.], [1., 1.], [1., 1.]], 2)
    >>> p.node_means.tolist()   # LPT: 3 | 2+1, then the last 1 to the first least loaded
    [4.0, 3.0]
    """

    policy = "largest"
    prefix = "LLF"

    def __init__(self, scope: str = "global", epsilon: float = DEFAULT_EPSILON,
                 capacity: float | None = 1.0, relabel: bool = True) -> None:
        super().__init__(scope, epsilon, capacity, relabel)


class RandomPlacement(_Baseline):
    """Random load balancing (RAND-GLB / RAND-BAL of Xing et al. §5.1.3).

    Deterministic for a given ``seed``: every ``plan`` call starts a fresh generator.

    Parameters
    ----------
    scope : "global" (RAND-GLB) or "pairwise" (RAND-BAL, one-way).
    seed : seed of the random unit selection.
    epsilon, capacity, relabel : as :class:`LLFPlacement`.

    Examples
    --------
    >>> a = RandomPlacement(seed=1).plan([[1., 1.]] * 6, 3).assignment
    >>> a.tolist() == RandomPlacement(seed=1).plan([[1., 1.]] * 6, 3).assignment.tolist()
    True
    """

    policy = "random"
    prefix = "RAND"

    def __init__(self, scope: str = "global", seed: int = 0,
                 epsilon: float = DEFAULT_EPSILON, capacity: float | None = 1.0,
                 relabel: bool = True) -> None:
        super().__init__(scope, epsilon, capacity, relabel)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed={seed!r}; expected an int >= 0")
        self.seed = int(seed)

    def params(self) -> dict[str, Any]:
        return {**super().params(), "seed": self.seed}

    def _rng(self) -> np.random.Generator:
        return np.random.default_rng(self.seed)
