"""Rebalancing the keyed state ahead of a batch, on a forecast of its per-key work.

The operator's controller is reactive (Fang et al. §4): it measures a batch, plans, and the
next batch moves the keys. A user who knows the coming load (a scheduled event, a
campaign's keys, the window's replays of the next batch) can move the state first:
:meth:`Forecasting.rebalance` plans with the operator's own planner on the given per-key
costs and moves the state now, delta only (one job, as between batches). The stream
benchmark uses it with the exact work of each coming batch: a clairvoyant rebalancer whose
moves are free, the floor any reactive controller is measured against.

:meth:`Forecasting.ahead` is the same plan made by the operator itself on the batch being
merged: the batch's keys are tallied before its merge (by the routing shuffle's map stage,
run first; without the bridge's chunks by :mod:`sparkbalance.state.frames.tally`), the planner plans on them as the payoff model judges a batch's, and a
layout that pays is moved in that batch's own shuffle — no batch of lag after a shift
(:mod:`sparkbalance.state.control.lookahead` says when the tally pays for itself).

:class:`Forecasting` is the operator's part that plans it: it reads the operator's
:class:`~sparkbalance.state.position.Position` it is given and holds only the controller; the
operator's ``move`` it is given moves the state there.
"""
from __future__ import annotations

import math
import time
from collections.abc import Mapping
from numbers import Real
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from sparkbalance.hashing import validate_key
from sparkbalance.routing.keygroups import key_groups
from sparkbalance.state.control.controller import Controller, Decision, Measurement
from sparkbalance.state.control.layout import GroupLayout
from sparkbalance.state.control.lookahead import (MISPLACED_COST, MISPLACED_SHARE, REREAD_S,
                                                  Lookahead, boundary_seconds)
from sparkbalance.state.control.payoff import Judgement
from sparkbalance.state.control.records import MigrationRecord
from sparkbalance.state.rescaling import Move
from sparkbalance.spark.rdd.maptally import read_tally
from sparkbalance.spark.session.jobs import sparkbalance_job_group
from sparkbalance.state.frames.route_chunks import KeyTally, Misplaced, run_map_stage
from sparkbalance.state.frames.tally import tally_keys
from sparkbalance.state.inputs import nan_in_key, state_key_error

if TYPE_CHECKING:
    from sparkbalance.state.position import Position

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
        if k is None or nan_in_key(k) is not None:    # the keyed state's key rule
            raise state_key_error(k, "costs")
        validate_key(k)
        if isinstance(c, bool) or not isinstance(c, Real) or not math.isfinite(c) or c < 0:
            raise ValueError(f"costs[{k!r}] = {c!r}; expected a finite number >= 0")
        out[k] = float(c)
    return out


class Forecasting:
    """The plan of ``rebalance`` for a keyed-state operator.

    Parameters
    ----------
    controller : the operator's :class:`~sparkbalance.state.control.controller.Controller`.
    lookahead : whether and how the batch being merged is planned on
        (:class:`~sparkbalance.state.control.lookahead.Lookahead`; None: never).

    Examples
    --------
    >>> forecasting = Forecasting(op_controller)                    # doctest: +SKIP
    >>> forecasting.plan(settled_position, {"hot": 10.0}).layout    # doctest: +SKIP
    """

    def __init__(self, controller: Controller, lookahead: Lookahead | None = None,
                 weight: Any = None) -> None:
        self._controller = controller
        self._weight = weight         # the fold's weight hook: what a value counts in a tally
        self.lookahead = (Lookahead("never", None, lambda: controller.payoff.fitted_seconds_per_load)
                          if lookahead is None else lookahead)
        self._tally: Any = None       # the tally of the batch being merged (None: none)
        self._began: tuple[float, bool] | None = None   # the batch's start, looked ahead

    # ------------------------------------------------------------------ the batch being merged
    def ahead(self, at: "Position", pairs: Any, group: str,
              merge: Callable[..., Any]) -> tuple["Position", Any]:
        """The batch ``pairs`` merged from ``at`` (``merge(position, tally)``, lazy), planned
        on its own key counts when the lookahead wants it: ``(position, merged)``, the
        position's pending decision the layout that pays for this batch (it rides in the
        batch's shuffle), none when no move pays. A plan on the batch itself replaces one
        decided after the previous batch (nothing of it moved yet).

        With the bridge's chunks the counts come from the routing shuffle's own map stage,
        run first as adaptive execution runs it: the merge then reads its output, also
        when the plan moves (``merge(position, None, routed)``: each merge reads the
        written shuffle again where its new keys were written, ``StateReread``; only the
        moving state is shuffled). A jar without that class routes the batch again —
        only the records the plan places elsewhere when they are at most
        :data:`~sparkbalance.state.control.lookahead.MISPLACED_SHARE` of the batch.
        Without the chunks one small job tallies. What the look-ahead cost is measured
        each batch for ``auto``: the map stage's job boundary
        (:func:`~sparkbalance.state.control.lookahead.boundary_seconds`) and, when the
        plan moves, what the move's merges read twice."""
        la, c = self.lookahead, self._controller
        self._tally = None
        la.expect(map_stage=at.state.ops.chunks, rereads=at.state.ops.rereads)
        looked = c.planner is not None and la.wanted()
        self._began = (time.perf_counter(), looked)     # the price as the batch pays it
        if not looked:
            return at, merge(at, None)
        now = at.replace(pending=None, pending_seq=-1)
        acc = pairs.context.accumulator({}, KeyTally())
        merged = merge(now, acc)
        t0 = time.perf_counter()
        span = None
        if merged.routed is not None:
            with sparkbalance_job_group(pairs.context, f"{group}-map",
                                        f"sparkbalance: map stage of batch {at.seq}"):
                run_map_stage(merged.routed, at.state.ops)
            t1 = time.perf_counter()
            counts = read_tally(acc)
            if merged.span is not None:
                span = read_tally(merged.span)
        else:
            read_tally(acc)
            counts = tally_keys(pairs, f"{group}-tally", f"sparkbalance: tally of batch {at.seq}",
                                self._weight)
            t1 = time.perf_counter()
        seconds = t1 - t0
        self._tally = counts
        decision, judgement = self.judged(now, la.work(counts))
        self.observe(judgement, tallied=True)
        routed, mis = merged.routed, None
        rereads = routed is not None and at.state.ops.rereads
        if decision is not None and routed is not None:
            mis = Misplaced(at.state.layout, decision.layout, at.state.num_groups,
                            decision.candidates)
            # A jar without StateReread routes the batch again: only the records the
            # plan places elsewhere when few (route_chunks.Misplaced), else all.
            if not rereads and mis.records(counts) > MISPLACED_SHARE * sum(counts.values()):
                routed = None
        out = merged if decision is None else merge(
            now.replace(pending=decision, pending_seq=at.seq), None, routed)
        if merged.routed is None:
            la.observe_tally(seconds)           # a tally job: all of it is the price
        else:
            la.observe_tally(boundary_seconds(seconds, span, time.perf_counter() - t1))
        if mis is not None:
            # A moving batch's price beyond the boundary: with StateReread the records its
            # merges read twice (REREAD_S each: a count, not the loaded map job's wall),
            # else the batch (or its misplaced records) routed again.
            if rereads:
                la.observe_reroute(REREAD_S * mis.read_again(counts))
            else:
                la.observe_reroute(seconds if routed is None else MISPLACED_COST * seconds)
        if decision is None:
            return now, out
        return now.replace(pending=decision, pending_seq=at.seq), out

    def judged(self, at: "Position", costs: dict) -> tuple[Decision | None, Judgement]:
        """The operator's decision for ``costs`` from ``at``'s state: a plan when λ > 1 + θ,
        kept when it changes the layout and the payoff model judges it pays."""
        c = self._controller
        m = self._forecast(costs, at)
        decision = None
        if c.should_rebalance(m):
            decision = c.plan(m, at.state.layout)
            if decision.layout == at.state.layout:
                decision = None
        judgement = c.judge(m, decision, ahead=True)   # the plan rides in this batch
        return (decision if judgement.migrate else None), judgement

    def observe(self, judgement: Judgement | None, tallied: bool = False) -> None:
        """Teach the lookahead what a batch of lag costs: the per-batch saving of a move
        decided on the batch's own tally, or (no tally) after it — not both for one batch."""
        if judgement is None or (self._tally is not None and not tallied):
            return
        pm = self._controller.payoff
        per_batch = judgement.saving_s / pm.horizon if judgement.migrate else 0.0
        # the load the move takes off the slowest partition: the saving was decided with
        # b⁺ (the payoff model unchanged since), the look-ahead values it with b of now
        upper = pm.seconds_per_load_upper
        load = per_batch / upper if per_batch > 0 and upper > 0 else None
        self.lookahead.observe(per_batch, load)

    def advance(self) -> None:
        """The batch was applied: keep its tally for the window's replays, and its
        seconds, with or without the look-ahead, for the look-ahead's price
        (:meth:`~sparkbalance.state.control.lookahead.Lookahead.observe_batch`)."""
        last = self._controller.last_batch
        if self._began is not None and last is not None:
            began, looked = self._began
            self.lookahead.observe_batch(looked, time.perf_counter() - began, last[1],
                                         last[0], last[2])
        self._began = None
        self.lookahead.push(self._tally)
        self._tally = None

    def rebalance(self, costs: Mapping[Any, float], settled: Callable[[], "Position"],
                  move: Move) -> MigrationRecord | None:
        """Plan for ``costs`` from ``settled()`` (the operator's position with a pending
        migration moved) and ``move`` there; None when the plan changes nothing. Bad
        ``costs`` raise before any job runs."""
        costs = check_costs(costs)
        at = settled()
        decision = self.plan(at, costs)
        if decision.layout == at.state.layout:
            return None
        return move(decision, "forecast", True)

    def plan(self, at: "Position", costs: dict) -> Decision:
        """The layout the planner makes for ``costs`` (checked, :func:`check_costs`) from
        the state of ``at`` (settled: no pending migration), as after a batch: only the
        keys (or key groups) whose placement changes would move."""
        m = self._forecast(costs, at)
        return self._controller.plan(m, at.state.layout, forecast=True)

    def _forecast(self, costs: dict, at: "Position") -> Measurement:
        """The loads ``costs`` put on the current layout, as the planner reads a batch's.

        State sizes (the planners' migration cost) come from the last batch's measurement
        where it has the key (or group); a key it lacks gets the mean size of a key.
        """
        layout = at.state.layout
        last = at.last
        if isinstance(layout, GroupLayout):
            G = layout.num_groups
            keys = list(costs)
            cost = np.bincount(key_groups(keys, G), weights=[costs[k] for k in keys],
                               minlength=G).astype(np.float64) if keys else np.zeros(G)
            mem = (np.asarray(last.memory, dtype=np.float64)
                   if last is not None and last.memory.size == G else np.zeros(G))
            stats = [(0, None, cost, mem, at.num_keys, float(mem.sum()))]
            return self._controller.measure(stats, layout)
        keys = list(dict.fromkeys([*costs, *layout.table.routes]))
        size: dict = {}
        if last is not None and last.keys is not None:
            size = dict(zip(last.keys.tolist(), np.asarray(last.memory).tolist()))
        mean = at.state_bytes / at.num_keys if at.num_keys else 0.0
        where = layout.fn.assign(keys) if keys else np.zeros(0, dtype=np.int64)
        cost = np.array([costs.get(k, 0.0) for k in keys], dtype=np.float64)
        mem = np.array([size.get(k, mean) for k in keys], dtype=np.float64)
        order = np.argsort(where, kind="stable")   # partition by partition, as a batch's stats
        return self._controller.measure_keys([keys[i] for i in order.tolist()], cost[order],
                                             mem[order], where[order], layout, len(keys),
                                             float(mem.sum()))
