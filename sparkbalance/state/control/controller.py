"""The rebalancing controller of Fang et al. §4 (Fig. 5), without the data movement.

Per batch: measure the loads from the per-block statistics (c(k) = records of the key in
the batch, or records × seconds-per-record of its partition when a task-metrics listener
is attached) → if λ = max L(d) / L̄ > 1 + θ (or the partition count changes) plan with the
configured planner → a new :mod:`layout <sparkbalance.state.control.layout>`. The operator then
migrates only the keys whose partition changed, and switches to the new layout (version)
after the move: the stage boundary is Fig. 5's pause.

Planner names come from the strategy registry through :mod:`.planners` (the strategies the
keyed state runs, their defaults and the initial layout).

Pure (no pyspark): a planner runs on numpy arrays gathered from the executors.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from sparkbalance import strategies
from sparkbalance.routing.base import check_num_partitions
from sparkbalance.routing.hash import home_partitions
from sparkbalance.routing.table import RoutingTable
from sparkbalance.stats.keystats import as_key_array
from sparkbalance.stats.timeweights import cost_from_partition_seconds
from sparkbalance.stats.workload import Workload, imbalance
from sparkbalance.planning.correlation import LoadWindow, series_imbalance
from sparkbalance.state.control.layout import GroupLayout, TableLayout
from sparkbalance.state.control.payoff import DEFAULT_HORIZON, DEFAULT_HYSTERESIS, Judgement, PayoffModel
from sparkbalance.planning.base import DEFAULT_MAX_TABLE, DEFAULT_THETA
from sparkbalance.state.control.planners import check_theta, check_trigger, state_strategy
from sparkbalance.state.control.realized import RealizedGain

__all__ = ["Measurement", "Decision", "Controller", "layout_group_moves"]

@dataclass(frozen=True)
class Measurement:
    """Loads of one batch under the current layout (physical partition index)."""

    loads: np.ndarray              # L(d) per physical partition
    active: np.ndarray             # physical partitions the layout routes to
    imbalance: float               # λ over the active partitions
    keys: np.ndarray | None        # per-key stats (table layouts)
    cost: np.ndarray
    memory: np.ndarray
    where: np.ndarray | None       # physical partition of each key (table layouts)
    num_keys: int
    state_bytes: float


@dataclass(frozen=True)
class Decision:
    """A planned new layout, before any state moved."""

    layout: TableLayout | GroupLayout
    imbalance_after: float         # predicted λ on this batch's costs
    planned_moves: int             # keys (table) or groups (key groups) the plan moves
    planned_bytes: float           # Σ S over them (the planner's migration cost M)
    seconds: float
    feasible: bool
    table_size: int
    candidates: frozenset | None = None   # keys whose partition may change (None: any)
    #: λ the plan is judged against when it is not this batch's (a correlation plan: the
    #: mean per-batch λ over the load window, before and after).
    imbalance_before: float | None = None


class Controller:
    """Decides and plans; never touches data.

    Parameters
    ----------
    planner : a registry name the keyed state runs (:func:`state_planners`; aliases
        ``"none"``, ``"ssm"``; case-insensitive). ``name`` keeps it as spelt (lower
        case), ``strategy`` is the registry record (canonical ``strategy.name``).
    theta : θ_max of Fang et al. (τ of Ding et al. for key-group planners).
    max_table : A_max for routing-table planners (None: unbounded).
    beta : β of MinMig/Mixed (None: the planner's default, 1.5).
    planner_params : extra constructor arguments of the planner (e.g. MTM ``matrix``,
        ``gamma``; ``compact=True`` for the routing-table planners). An unknown name is a
        ``TypeError`` (:func:`sparkbalance.strategies.check_params`), never dropped.
    trigger : ``"payoff"`` (default): trigger above 1 + θ, plan to 1 + θ·``hysteresis``, and
        migrate only when the predicted saving over ``horizon`` batches exceeds the predicted
        cost (:mod:`~sparkbalance.state.control.payoff`); ``"paper"``: Fang et al. §4 exactly —
        plan to 1 + θ and migrate whenever λ > 1 + θ and the plan lowers λ.
    hysteresis : the planning target as a fraction of θ (payoff trigger only), in (0, 1].
    horizon : batches a migration must pay back over (payoff trigger only).

    Examples
    --------
    >>> c = Controller("none", 0.08)
    >>> c.planner is None, c.strategy.name
    (True, 'hash')
    """

    def __init__(self, planner: str, theta: float = DEFAULT_THETA,
                 max_table: int | None = DEFAULT_MAX_TABLE, beta: float | None = None,
                 planner_params: Mapping[str, Any] | None = None, *,
                 trigger: str = "payoff", hysteresis: float = DEFAULT_HYSTERESIS,
                 horizon: int = DEFAULT_HORIZON) -> None:
        self.strategy = state_strategy(planner)
        self.name = planner.lower()
        self.theta = check_theta(theta)
        self.trigger = check_trigger(trigger)
        if isinstance(hysteresis, bool) or not isinstance(hysteresis, (int, float)) \
                or not 0 < hysteresis <= 1:
            raise ValueError(f"hysteresis={hysteresis!r}; expected a number in (0, 1]")
        self.hysteresis = float(hysteresis)
        self.payoff = PayoffModel(horizon)
        #: θ the planner aims at: below the trigger, so noise does not re-trigger it
        self.theta_plan = self.theta * (self.hysteresis if self.trigger == "payoff" else 1.0)
        self.max_table = max_table
        self.beta = beta
        # The registry resolves the planner once: its parameters checked, its class named.
        self.resolved = strategies.resolve(self.strategy.name, planner_params, state=True)
        self.params = dict(self.resolved.params)
        self.planner: Any = None
        kind = self.strategy.kind
        if kind == "table":
            kw: dict[str, Any] = {"theta": self.theta_plan, "max_table": max_table}
            if beta is not None:
                kw["beta"] = beta
            self.planner = self.resolved.planner(**kw)   # planner_params win over kw
        elif self.correlation:
            self.planner = self.resolved.planner()
        elif kind == "keygroups" and self.strategy.name != "mtm":
            self.planner = self.resolved.planner(tau=self.theta_plan)
        # MTM: built per plan, its matrix needs the new n
        self._planner_class = self.resolved.planner_class()
        #: Last k per-batch costs of every key group (correlation planners only).
        self.window: LoadWindow | None = None
        #: The last batch :meth:`observe_batch` saw: (L_max, its work Σ c(k), carried a move)
        self.last_batch: tuple[float, float, bool] | None = None
        #: the share of a move's planned gain the next batch kept (:mod:`.realized`)
        self.realized = RealizedGain()
        self._planned: tuple[Any, Decision] | None = None   # (layout planned from, plan)

    @property
    def correlation(self) -> bool:
        """Whether the planner places key groups on their load series (Xing et al.)."""
        return self.strategy.name.startswith("correlation")

    # ------------------------------------------------------------------ measuring
    def measure(self, stats: Sequence[tuple], layout: TableLayout | GroupLayout,
                partition_seconds: np.ndarray | None = None) -> Measurement:
        """Loads of the batch from per-block stats ``(pid, keys|None, cost, memory, n[,
        total_bytes])``: ``n`` keys and ``total_bytes`` (Σ S over all of them) per block,
        per-key arrays for the keys that matter to the plan (table layouts: the keys of
        the batch and of the routing table), per-group arrays for key groups.

        With ``partition_seconds`` (task time per physical partition, from the listener) the
        cost of a key becomes its records × the seconds per record of its partition (time-
        aware weights, ARCHITECTURE.md "Statistics").
        """
        P = layout.num_physical
        stats = sorted(stats, key=lambda s: s[0])
        if layout.kind == "groups":
            m = layout.num_groups
            cost = np.zeros(m)
            mem = np.zeros(m)
            nkeys = 0
            for st in stats:
                cost += st[2]
                mem += st[3]
                nkeys += st[4]
            g2p = layout.group_to_partition()
            loads = np.bincount(g2p, weights=cost, minlength=P).astype(np.float64)
            if partition_seconds is not None:
                cost = cost_from_partition_seconds(cost, g2p, loads, partition_seconds)
                loads = np.bincount(g2p, weights=cost, minlength=P).astype(np.float64)
            active = np.sort(layout.phys)
            return Measurement(loads, active, imbalance(loads[active]), None, cost, mem, None,
                               nkeys, float(mem.sum()))
        keys: list = []
        costs, mems, where = [], [], []
        nkeys, total = 0, 0.0
        for st in stats:
            pid, ks, c, s, nk = st[:5]
            nkeys += nk
            total += float(st[5]) if len(st) > 5 else float(np.sum(s))
            keys.extend(ks)
            costs.append(c)
            mems.append(s)
            where.append(np.full(len(ks), pid, dtype=np.int64))
        cost = np.concatenate(costs) if costs else np.zeros(0)
        mem = np.concatenate(mems) if mems else np.zeros(0)
        wh = np.concatenate(where) if where else np.zeros(0, dtype=np.int64)
        return self.measure_keys(keys, cost, mem, wh, layout, nkeys, total, partition_seconds)

    def measure_keys(self, keys: list, cost: np.ndarray, memory: np.ndarray,
                     where: np.ndarray, layout: TableLayout, num_keys: int,
                     state_bytes: float, partition_seconds: np.ndarray | None = None
                     ) -> Measurement:
        """The loads of per-key ``cost`` on a routing-table layout, each key in physical
        partition ``where`` (:meth:`measure` with the blocks' stats laid end to end)."""
        P = layout.num_physical
        loads = np.bincount(where, weights=cost, minlength=P).astype(np.float64)
        if partition_seconds is not None:
            cost = cost_from_partition_seconds(cost, where, loads, partition_seconds)
            loads = np.bincount(where, weights=cost, minlength=P).astype(np.float64)
        active = np.arange(layout.num_partitions)
        return Measurement(loads, active, imbalance(loads[active]), as_key_array(keys), cost,
                           memory, where, num_keys, state_bytes)

    def should_rebalance(self, m: Measurement) -> bool:
        """Fang et al. §4 step 2: rebalance when λ exceeds 1 + θ_max (a correlation planner
        also needs two batches in its window: a correlation needs two samples)."""
        if self.correlation and (self.window is None or self.window.samples < 2):
            return False
        return self.strategy.kind != "hash" and m.imbalance > 1.0 + self.theta + 1e-12

    # ------------------------------------------------------------------ deciding
    def observe_batch(self, seconds: float, m: Measurement, carried_bytes: float = 0.0
                      ) -> float:
        """Feed the payoff model: the batch's merge took ``seconds`` (``carried_bytes``: it
        also carried a migration of that many bytes). Returns the seconds the carried move
        added to the batch (:meth:`PayoffModel.observe_batch`; its predicted cost while
        the model cannot predict a batch yet), 0.0 without one."""
        active = m.loads[m.active]
        added = None
        if m.keys is not None:
            self.realized.observe(m.keys, m.cost)
        self.last_batch = (float(active.max()) if active.size else 0.0, float(m.cost.sum()),
                           carried_bytes > 0)
        if active.size:
            added = self.payoff.observe_batch(seconds, float(active.max()), carried_bytes)
        if self.correlation:
            if self.window is None or self.window.num_units != m.cost.shape[0]:
                self.window = LoadWindow(m.cost.shape[0], self.planner.k)
            self.window.push(np.maximum(m.cost, 0.0))
        if carried_bytes <= 0:
            return 0.0
        return self.payoff.cost(carried_bytes) if added is None else added

    def observe_migration(self, seconds: float, bytes_moved: float) -> None:
        """Feed the payoff model: a migration (its own job) took ``seconds``."""
        self.payoff.observe_migration(seconds, bytes_moved)

    def judge(self, m: Measurement, decision: Decision | None, ahead: bool = False
              ) -> Judgement:
        """Whether to carry out ``decision`` (None: nothing was planned), with the numbers.
        The saving counts the share of a plan's gain the next batch kept
        (:class:`~sparkbalance.state.control.realized.RealizedGain`), which a move judged
        to pay is measured for: on the next batch merged, or (``ahead``: planned on the
        batch it rides in) the one after.

        Examples
        --------
        >>> c = Controller("mixed", 0.1, trigger="paper")
        >>> m = Measurement(np.array([3.0, 1.0]), np.array([0, 1]), 1.5, None, np.ones(2),
        ...                 np.ones(2), None, 2, 2.0)
        >>> c.judge(m, None).reason    # λ = 1.5 > 1 + θ, but nothing better was planned
        'no better plan'
        """
        lam = m.imbalance
        if not self.should_rebalance(m):
            return Judgement(False, "balanced", lam, lam, 0.0, 0.0)
        if decision is None:   # above the trigger, but the plan keeps the layout as it is
            return Judgement(False, "no better plan", lam, lam, 0.0, 0.0)
        active = m.loads[m.active]
        mean = float(active.mean()) if active.size else 0.0
        now = float(active.max()) if active.size else 0.0
        if decision.imbalance_before is not None:   # judged on the window, not this batch
            lam = decision.imbalance_before
            now = lam * mean
        if decision.imbalance_after >= lam - 1e-12:
            return Judgement(False, "no better plan", lam, lam, 0.0, 0.0)
        if self.trigger == "paper":
            return Judgement(True, "paper", lam, decision.imbalance_after, 0.0, 0.0)
        j = self.payoff.judge(lam, decision.imbalance_after, now,
                              decision.imbalance_after * mean, decision.planned_bytes,
                              self.realized.share)
        if j.migrate and self._planned is not None and self._planned[1] is decision:
            self.realized.planned(self._planned[0], decision.layout,
                                  lam - decision.imbalance_after, int(ahead))
        return j

    # ------------------------------------------------------------------ planning
    def plan(self, m: Measurement, layout: TableLayout | GroupLayout,
             num_partitions: int | None = None, *, forecast: bool = False) -> Decision:
        """Plan the next layout (``num_partitions`` changes the partition count).

        ``forecast``: ``m`` is a forecast of the coming batch, so a correlation planner
        plans on it alone rather than on its window of past batches."""
        t0 = time.perf_counter()
        n_new = layout.num_partitions if num_partitions is None else \
            check_num_partitions(num_partitions)
        if layout.kind == "groups":
            return self._plan_groups(m, layout, n_new, t0, forecast)
        d = self._plan_table(m, layout, n_new, t0)
        self._planned = (layout, d)
        return d

    def _plan_table(self, m: Measurement, layout: TableLayout, n_new: int, t0: float
                    ) -> Decision:
        P = max(layout.num_physical, n_new)
        # Table entries that point beyond the new count route home again.
        routes = {k: p for k, p in layout.table.items() if p < n_new}
        table = RoutingTable(routes, layout.table.version)
        keys = m.keys if m.keys is not None else np.zeros(0, dtype=np.int64)
        home = home_partitions(keys, n_new) if len(keys) else np.zeros(0, dtype=np.int64)
        if n_new == layout.num_partitions:
            current = m.where.copy()
        else:  # scaling: where the keys would be under the old table and the new hash
            current = home.copy()
            for i, k in enumerate(keys.tolist()):
                p = routes.get(k)
                if p is not None:
                    current[i] = p
        if self.planner is None:  # "none": plain hash over the new count
            new = TableLayout(n_new, P, RoutingTable({}, layout.table.version +
                                                     (n_new != layout.num_partitions)))
            after = _table_imbalance(m.cost, home, n_new)
            moved = m.where != home
            return Decision(new, after, int(moved.sum()), float(m.memory[moved].sum()),
                            time.perf_counter() - t0, True, 0)
        w = Workload(keys, m.cost, m.memory, home, current, n_new)
        plan = self.planner.plan(w, table)
        if n_new == layout.num_partitions and dict(plan.table.routes) == dict(layout.table.routes):
            return Decision(layout, m.imbalance, 0, 0.0, time.perf_counter() - t0,
                            bool(plan.feasible), len(layout.table))  # nothing to change
        version = layout.table.version + 1
        new_table = RoutingTable(plan.table.routes, version)
        new = TableLayout(n_new, P, new_table)
        # Same n: only keys of the table delta can change partition (F(k) = R[k] or h(k)).
        cands = layout.table.diff(new_table).keys if n_new == layout.num_partitions else None
        return Decision(new, float(plan.imbalance_after), len(plan.moves),
                        float(plan.migration_cost), time.perf_counter() - t0,
                        bool(plan.feasible), len(new_table), cands)

    def _plan_groups(self, m: Measurement, layout: GroupLayout, n_new: int, t0: float,
                     forecast: bool = False) -> Decision:
        if self.correlation:
            return self._plan_map(m, layout, n_new, t0, forecast)
        if self.strategy.name == "mtm":
            matrix = self.params.get("matrix") or {n_new: {n_new: 1.0}}
            kw = {"tau": self.theta_plan,
                  **{k: v for k, v in self.params.items() if k != "matrix"}}
            planner = self._planner_class(matrix, **kw)
        elif self.planner is not None:
            planner = self.planner
        else:
            raise RuntimeError("key-group layout without a key-group planner")
        plan = planner.plan(m.cost, m.memory, layout.bounds, n_new)
        new = layout.after_plan(plan.bounds, plan.owners)
        if (new.num_partitions == layout.num_partitions
                and np.array_equal(new.group_to_partition(), layout.group_to_partition())):
            return Decision(layout, m.imbalance, 0, 0.0, time.perf_counter() - t0,
                            bool(plan.feasible), 0)  # same placement: nothing to change
        moved = layout_group_moves(layout, new)
        loads = np.asarray(plan.loads, dtype=np.float64)
        return Decision(new, imbalance(loads), int(moved.sum()),
                        float(m.memory[moved].sum()), time.perf_counter() - t0,
                        bool(plan.feasible), 0)


    def _plan_map(self, m: Measurement, layout: GroupLayout, n_new: int, t0: float,
                  forecast: bool = False) -> Decision:
        """A group map planned on the window of per-batch group loads (Xing et al.), or
        on ``m`` alone when it is a forecast."""
        series = m.cost[:, None] if forecast or self.window is None else self.window.series
        if series.shape[0] != layout.num_groups:
            series = m.cost[:, None]
        # Logical partition of every group now; when shrinking it names partitions >= n_new,
        # whose groups must move (the planner then plans globally).
        now = layout.interval_of_group()
        before = series_imbalance(series, now, n_new) if n_new == layout.num_partitions \
            else float("inf")
        placement = self.planner.plan(series, now, n_new, sizes=m.memory)
        after = series_imbalance(series, placement.assignment, n_new)
        new = layout.after_map(placement.assignment, n_new)
        if (new.num_partitions == layout.num_partitions
                and np.array_equal(new.group_to_partition(), layout.group_to_partition())):
            return Decision(layout, m.imbalance, 0, 0.0, time.perf_counter() - t0, True, 0,
                            imbalance_before=before)
        moved = layout_group_moves(layout, new)
        return Decision(new, after, int(moved.sum()), float(m.memory[moved].sum()),
                        time.perf_counter() - t0, True, 0, imbalance_before=before)


def layout_group_moves(old: GroupLayout, new: GroupLayout) -> np.ndarray:
    """Boolean mask of key groups whose physical partition changes."""
    return old.group_to_partition() != new.group_to_partition()


def _table_imbalance(cost: np.ndarray, assignment: np.ndarray, n: int) -> float:
    return imbalance(np.bincount(assignment, weights=cost, minlength=n)[:n])

