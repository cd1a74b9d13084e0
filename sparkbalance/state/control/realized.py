"""How much of a move's planned gain the next batch keeps: the payoff model's discount.

A move is judged on the batch it was planned on (:mod:`~sparkbalance.state.control.payoff`):
it saves ``b⁺ · (L_max − λ' L̄)`` a batch over the horizon, as if every coming batch were
that one. Where hot keys drift (a gradual shift) or are weak against a batch's noise (Zipf
0.8, whose hottest key holds a third of a partition's mean), a plan fitted to one batch
keeps only part of its gain on the next, and moves that paid back a part were credited in
full: on the stream matrix's Zipf 0.8 cell whose hot keys drift over 5 batches the reactive
Mixed moved on half of the batches, the clairvoyant that pays for its moves on 0.3.

What a plan keeps is measured on the next batch as a counterfactual, free of the load: that
batch's per-key work placed by the layout the move left and by the plan, λ = max / mean
under each; the share kept is ``(λ_left − λ_plan) / (λ − λ')`` of the planned batch. A
plan made on the batch it rides in (the look-ahead's) is exact on that batch, so it is
measured on the batch after. Shares are averaged as the riding cost is (a prior of 1
counted as one sample, then each weighing 0.3), each clipped to [0, 2]; the payoff model
uses the mean up to 1. Routing-table layouts only (a key-group plan keeps 1).

Pure (no pyspark).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from sparkbalance.state.control.layout import TableLayout
from sparkbalance.state.control.payoff import prior_weight
from sparkbalance.stats.workload import imbalance

__all__ = ["RealizedGain", "MAX_SAMPLE"]

#: A sample's largest share kept (a next batch the plan suits better than its own).
MAX_SAMPLE: float = 2.0


class RealizedGain:
    """The share of a move's planned gain that the batch after its plan's batch keeps.

    Examples
    --------
    >>> from sparkbalance.routing.table import RoutingTable
    >>> import numpy as np
    >>> left = TableLayout(2, 2, RoutingTable())
    >>> keys = np.array([1, 2, 3, 4])
    >>> home = left.fn.assign(keys.tolist())
    >>> plan = TableLayout(2, 2, RoutingTable({int(keys[0]): 1 - int(home[0])}, 1))
    >>> rg = RealizedGain()
    >>> rg.share
    1.0
    >>> rg.planned(left, plan, 0.5)
    >>> rg.observe(keys, np.zeros(4)) is None      # an empty batch tells nothing
    True
    """

    def __init__(self) -> None:
        self.mean = 1.0              # the prior: a plan keeps all of its gain
        self.seen = 0
        #: (layout the move left, planned layout, planned λ − λ', batches to skip)
        self._pending: tuple[TableLayout, TableLayout, float, int] | None = None

    @property
    def share(self) -> float:
        """The share of a planned gain the payoff model counts on (the mean, at most 1)."""
        return min(max(self.mean, 0.0), 1.0)

    def planned(self, left: Any, plan: Any, gain: float, skip: int = 0) -> None:
        """A move judged to pay, from layout ``left`` to ``plan``, planned to take
        ``gain`` off λ; measured on the batch after ``skip`` more (1: the plan was made
        on the batch it rides in). Replaces a plan not yet measured; key-group layouts
        and gains that are not positive are not measured."""
        if (isinstance(left, TableLayout) and isinstance(plan, TableLayout)
                and math.isfinite(gain) and gain > 0 and
                left.num_partitions == plan.num_partitions):
            self._pending = (left, plan, float(gain), int(skip))
        else:
            self._pending = None

    def observe(self, keys: Any, cost: np.ndarray) -> float | None:
        """A batch merged with per-key work ``cost`` of ``keys``: the share of the
        pending plan's gain it keeps (None: nothing pending, skipped, or no load)."""
        if self._pending is None:
            return None
        left, plan, gain, skip = self._pending
        if skip > 0:
            self._pending = (left, plan, gain, skip - 1)
            return None
        self._pending = None
        cost = np.asarray(cost, dtype=np.float64)
        if keys is None or len(keys) == 0 or not np.isfinite(cost).all() or cost.sum() <= 0:
            return None
        ks = list(keys.tolist() if hasattr(keys, "tolist") else keys)
        n = left.num_partitions
        lam = [imbalance(np.bincount(np.asarray(lay.fn.assign(ks)), weights=cost,
                                     minlength=lay.num_physical)[:n])   # as measured
               for lay in (left, plan)]
        sample = min(max((lam[0] - lam[1]) / gain, 0.0), MAX_SAMPLE)
        w = prior_weight(self.seen)
        self.mean = (1 - w) * self.mean + w * sample
        self.seen += 1
        return sample
