"""Rebalancing the keyed state ahead of a batch, on a forecast of its per-key work.

The operator's controller is reactive (Fang et al. §4): it measures a batch, plans, and the
next batch moves the keys. A user who knows the coming load (a scheduled event, a
campaign's keys, the window's replays of the next batch) can move the state first:
:meth:`Forecasting.rebalance` plans with the operator's own planner on the given per-key
costs and moves the state now, delta only (one job, as between batches). The stream
benchmark uses it with the exact work of each coming batch: a clairvoyant rebalancer whose
moves are free, the floor any reactive controller is measured against.

A part of :class:`~sparkbalance.state.operator.KeyedStateOperator` kept in its own module,
not a class to use alone.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Real
from typing import Any

import numpy as np

from sparkbalance.hashing import validate_key
from sparkbalance.routing.keygroups import key_groups
from sparkbalance.state.control import report
from sparkbalance.state.control.controller import Measurement
from sparkbalance.state.inputs import state_key_error
from sparkbalance.state.control.layout import GroupLayout
from sparkbalance.state.control.records import MigrationRecord

__all__ = ["Forecasting", "check_costs"]


def check_costs(costs: Any) -> dict:
    """``costs`` as a dict ``{key: float}``, or a clear error before any job runs.

    Examples
    --------
    >>> check_costs({"a": 2, "b": 0.5})
    {'a': 2.0, 'b': 0.5}
    >>> check_costs({"a": -1})
    Traceback (most recent call last):
    ...
    ValueError: costs['a'] = -1; expected a finite number >= 0
    """
    if not isinstance(costs, Mapping):
        raise TypeError(f"costs is a {type(costs).__name__}; expected a mapping "
                        "{key: predicted work of the key}")
    out: dict = {}
    for k, c in costs.items():
        if k is None or (isinstance(k, float) and k != k):
            raise state_key_error(k, "costs")
        validate_key(k)
        if isinstance(c, bool) or not isinstance(c, Real) or not math.isfinite(c) or c < 0:
            raise ValueError(f"costs[{k!r}] = {c!r}; expected a finite number >= 0")
        out[k] = float(c)
    return out


class Forecasting:
    """``rebalance`` of :class:`~sparkbalance.state.operator.KeyedStateOperator`."""

    @report.labelled("rebalance")
    def rebalance(self, costs: Mapping[Any, float]) -> MigrationRecord | None:
        """Move the state now to the layout the planner makes for ``costs``.

        ``costs`` maps keys to their predicted work in the coming batch (records, seconds:
        any unit, only ratios matter); keys not in it are predicted idle. The planner is the
        operator's own (Mixed's table, SSM's intervals, ...) and plans as after a batch, from
        the current layout, so only the keys (or key groups) whose placement changes move;
        a correlation planner plans on the forecast alone, not on its window of batches.
        A pending migration is moved first. Returns the migration's record (reason
        "forecast"), or None when the plan changes nothing (or the planner is "none").
        Bad ``costs`` raise before any job runs; a failed move leaves the operator as it
        was (and its checkpoint, which the move then commits).
        """
        costs = check_costs(costs)
        self._settle()
        layout = self._state.layout
        m = self._forecast(costs)
        decision = self._controller.plan(m, layout, forecast=True)
        if decision.layout == layout:
            return None
        return self._move_now(decision, "forecast", observe=True)

    def _forecast(self, costs: dict) -> Measurement:
        """The loads ``costs`` put on the current layout, as the planner reads a batch's.

        State sizes (the planners' migration cost) come from the last batch's measurement
        where it has the key (or group); a key it lacks gets the mean size of a key.
        """
        layout = self._state.layout
        last = self._last
        if isinstance(layout, GroupLayout):
            G = layout.num_groups
            keys = list(costs)
            cost = np.bincount(key_groups(keys, G), weights=[costs[k] for k in keys],
                               minlength=G).astype(np.float64) if keys else np.zeros(G)
            mem = (np.asarray(last.memory, dtype=np.float64)
                   if last is not None and last.memory.size == G else np.zeros(G))
            stats = [(0, None, cost, mem, self._num_keys, float(mem.sum()))]
            return self._controller.measure(stats, layout)
        keys = list(dict.fromkeys([*costs, *layout.table.routes]))
        size: dict = {}
        if last is not None and last.keys is not None:
            size = dict(zip(last.keys.tolist(), np.asarray(last.memory).tolist()))
        mean = self._state_bytes / self._num_keys if self._num_keys else 0.0
        where = layout.fn.assign(keys) if keys else np.zeros(0, dtype=np.int64)
        cost = np.array([costs.get(k, 0.0) for k in keys], dtype=np.float64)
        mem = np.array([size.get(k, mean) for k in keys], dtype=np.float64)
        order = np.argsort(where, kind="stable")   # partition by partition, as a batch's stats
        return self._controller.measure_keys([keys[i] for i in order.tolist()], cost[order],
                                             mem[order], where[order], layout, len(keys),
                                             float(mem.sum()))
