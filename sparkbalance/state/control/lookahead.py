"""Planning on the batch being merged: its own key counts, tallied before its merge.

A reactive controller (Fang et al. §4, Fig. 5) plans on the batch it measured and moves the
state with the next one, so after every shift of the hot keys one batch runs the old
layout: with a shift every ``p`` batches that lag alone caps it near ``1 − 1/p`` of what a
clairvoyant rebalancer gains (``oracle:mixed`` of the stream benchmark). A batch's keys are
known before its merge runs, as adaptive query execution knows a shuffle's map-output sizes
before its reduce stage: counting them (the *tally*, one small job over the batch's pairs)
lets the controller plan the layout for batch ``b`` on batch ``b``'s own counts and move the
state in batch ``b``'s own shuffle — no lag, and no plan fitted to a previous batch's noise.

The tally costs a job per batch, which a slowly shifting stream never earns back. So by
default (``lookahead="auto"``) the controller looks ahead only where it pays: on a batch
whose chance of needing a move, at its age since the last batch that needed one
(:mod:`~sparkbalance.state.control.hazard`), times what such a batch lost to lag (the
saving per batch of the last moves decided) exceeds the price — the job boundary every
looked-ahead batch pays, plus that chance times what a batch whose plan moves pays more
(its merges read the written shuffle again where the moving keys were written,
``StateReread``; an older jar routes the batch, or its misplaced records, again). A
stream whose hot keys move every ``p`` batches is looked ahead on its shift batches, not
on all ``p`` (on all of them, or on none, when lag and price were set against each other
as means over all batches). The price is what the user pays: the difference between whole
batches with the look-ahead and without it, per unit of work, the balance taken off
(:mod:`~sparkbalance.state.control.lookprice`); until both kinds were seen, the boundary
measured from its parts (:func:`boundary_seconds`), which on the flights stream read about
half of what a batch paid. ``"always"`` and ``"never"`` (the reactive controller) force
one way.

What a shift's batch of lag costs is kept as the load a move took off the slowest partition
per batch, and valued when the look-ahead is weighed, at the payoff model's ``b⁻`` of now
(:attr:`~sparkbalance.state.control.payoff.PayoffModel.fitted_seconds_per_load`: ``b``
less one standard error, 0 before a fit), the ``b`` the price's samples take the balance
off with. Kept as the decision's seconds it carried the optimism the migration decision
wants and a price paid on every looked-ahead batch does not: the first batches' ``b``,
which puts all of a batch's time on its slowest partition (on the flights stream at 0 µs
a record the first plan's lag was valued at 0.7 s, more than a whole batch), and ``b⁺``,
the fit's upper bound, so that a fit noise swamps does not veto a large move. A gain
only noise supports now buys no look-ahead; the lag it forgoes is one batch per shift,
where a look-ahead bought on noise paid its price on most batches.

The work a merge folds for a key is its records plus, in a windowed state, the replay of
its kept segments when its oldest one expires (:mod:`sparkbalance.state.frames.window`):
:func:`batch_work` computes it from the tallies of the last ``w`` batches kept here. A
tally lost to a restart only makes the next ``w`` plans less exact, never the state.

Pure (no pyspark).
"""
from __future__ import annotations

import math
import statistics
from collections import Counter, deque
from typing import Callable, Mapping, Sequence

from sparkbalance.state.control.hazard import ShiftHazard
from sparkbalance.state.control.lookprice import LookPrice

__all__ = ["LOOKAHEAD_MODES", "Lookahead", "batch_work", "boundary_seconds", "PRIOR_TALLY_S",
           "MAP_STAGE_S", "MISPLACED_SHARE", "MISPLACED_COST", "REREAD_S",
           "PRIOR_REROUTE_S", "PRIOR_REREAD_S", "EXPLORE_MARGIN"]

#: "auto" (default): tally while the lag it removes costs more than the tally; "always";
#: "never" (the reactive controller of Fang et al. §4).
LOOKAHEAD_MODES: tuple[str, ...] = ("auto", "always", "never")
#: Prior seconds of one tally job before one was measured (a small Spark job on a quiet
#: 2-core machine takes 0.03-0.1 s; 0.05 s, so a stream must show lag to earn it).
PRIOR_TALLY_S: float = 0.05
#: Prior seconds of the job boundary a look-ahead through the routing shuffle's own map
#: stage adds (one more job; its map stage is work the batch does anyway), until one is
#: measured (:func:`boundary_seconds`, every looked-ahead batch).
MAP_STAGE_S: float = 0.01
#: Largest share of a batch's records a moving look-ahead plan may misplace for only
#: those to be routed again (:class:`~sparkbalance.state.frames.route_chunks.Misplaced`); above it the whole batch is routed again.
#: Selecting them is a Python pass over the batch and the merge decodes the first
#: shuffle's chunks that list their groups, so the partial route pays only when few move:
#: measured on local[8] (``bench_stream_matrix.py --spark-costs``, CPU seconds of the
#: process tree, 20000 records), 2 % misplaced cost 0.15 s against 0.60 s for the whole
#: batch, 29 % (the 8 hottest keys) 0.62 s against 0.42 s.
MISPLACED_SHARE: float = 0.1
#: What routing only the misplaced records costs, as a share of routing the whole batch
#: again (the same measurement: 0.15 s against 0.60 s of CPU).
MISPLACED_COST: float = 0.25

#: Seconds a moving look-ahead batch pays per record its merges read twice when they read
#: the written routing shuffle again (``StateReread``;
#: :meth:`~sparkbalance.state.frames.route_chunks.Misplaced.read_again` counts them):
#: unpickling a chunk and keeping the merge's own keys, measured as one process's CPU
#: over the chunks of a 20,000-record batch: 0.05-0.06 µs a record to unpickle (Zipf
#: 1.0, flights), 0.14-0.20 µs with the keys kept. Before, a share (0.3) of the map-stage
#: job's wall per record, which under load carried the job boundary and the load with it
#: (0.75 µs a record at the stream matrix's 0.05 s map stage) and counted the boundary
#: twice.
REREAD_S: float = 0.2e-6

#: Prior seconds of routing a moving look-ahead batch again before one was measured (the map
#: stage of a batch of 20000 records on local[8]: ~0.05 s).
PRIOR_REROUTE_S: float = 0.05
#: Prior seconds of a moving look-ahead batch whose merges read the written shuffle again
#: (``StateReread``), before one was measured: a batch of 20,000 records read twice at
#: :data:`REREAD_S`.
PRIOR_REREAD_S: float = 20000 * REREAD_S

#: The price is explored (batches of the kind it lacks) only while a shift batch's lag is
#: this many times the boundary measured from its parts: a lag nearer the price gains
#: too little from looking ahead to pay for the look-aheads that measure it (on the stream
#: matrix's Zipf 0.8 cells, 3 exploring look-aheads at 0.05 s cost 8 % of the gain).
EXPLORE_MARGIN: float = 2.0
#: Weight of one measurement in the tally's cost estimate.
FORGET_TALLY: float = 0.3


def batch_work(counts: Mapping, past: Sequence[Mapping], window: int | None) -> dict:
    """Values the merge of a batch folds per key: its records (``counts``), plus in a
    windowed state the replay of a key's kept segments when its oldest one leaves.

    ``past`` holds the tallies of the previous batches, oldest first (at least ``window``
    of them for an exact answer).

    Examples
    --------
    >>> past = [Counter(a=2, b=1), Counter(a=1), Counter(b=1)]
    >>> batch_work(Counter(a=1), past, 3)     # "a" replays 1 as batch 0 leaves; "b" too
    {'a': 2, 'b': 1}
    >>> batch_work(Counter(a=1), past, None)
    {'a': 1}
    """
    work = dict(counts)
    if window is None or len(past) < window:
        return work
    leaving = past[-window]
    kept = list(past[len(past) - window + 1:])
    for k in leaving:
        replay = sum(c.get(k, 0) for c in kept)
        if replay:
            work[k] = work.get(k, 0) + replay
    return work


def boundary_seconds(job_s: float, span: tuple | None, driver_s: float) -> float:
    """The job boundary a look-ahead through the map stage added to a batch, measured:
    the map-stage job's wall time ``job_s`` beyond its tasks' wall-clock ``span`` (first
    start, last end: submitting the job, its job group, waiting for its end), plus the
    driver's ``driver_s`` from the job's end until the batch's merge was built (reading
    the tally, planning). Without a span (no task reported one) the job's own part is the
    prior :data:`MAP_STAGE_S`.

    Examples
    --------
    >>> round(boundary_seconds(0.50, (10.0, 10.46), 0.01), 3)
    0.05
    >>> boundary_seconds(0.5, None, 0.01) == MAP_STAGE_S + 0.01
    True
    """
    job = MAP_STAGE_S
    if span is not None and all(map(math.isfinite, span)) and span[1] >= span[0]:
        job = max(job_s - (span[1] - span[0]), 0.0)
    return job + max(driver_s, 0.0)


def _learned(estimate: float, seen: int, seconds: float) -> float:
    """A cost ``estimate`` after ``seen`` measurements and one more of ``seconds``: the
    first replaces the prior, later ones weigh :data:`FORGET_TALLY`."""
    w = 1.0 if seen == 0 else FORGET_TALLY
    return (1 - w) * estimate + w * seconds


class Lookahead:
    """Whether to tally the coming batch, and the tallies a windowed state's work needs.

    Parameters
    ----------
    mode : one of :data:`LOOKAHEAD_MODES`.
    window : the state's window in batches (None: unbounded).
    seconds_per_load : the payoff model's ``b⁻`` as fitted now (what a batch's slowest
        partition costs per unit of load, at least; 0 while unfitted), to value a shift's
        lag and to take the balance off the price's samples.

    Examples
    --------
    >>> la = Lookahead("auto")
    >>> la.wanted()                          # no lag seen yet: the tally would not pay
    False
    >>> la.observe(saving_per_batch=1.0)     # a shift: one batch of lag cost 1 s
    >>> la.wanted()
    True
    """

    def __init__(self, mode: str = "auto", window: int | None = None,
                 seconds_per_load: Callable[[], float] = lambda: 0.0) -> None:
        if mode not in LOOKAHEAD_MODES:
            raise ValueError(f"lookahead={mode!r}; expected one of {LOOKAHEAD_MODES}")
        self.mode = mode
        self.window = window
        self.tally_s = PRIOR_TALLY_S   # seconds every looked-ahead batch pays
        self.reroute_s = PRIOR_REROUTE_S   # seconds more a looked-ahead batch that moves pays
        self._tallies_seen = 0
        self._reroutes_seen = 0
        #: the price as batches with and without the look-ahead differ (replaces
        #: ``tally_s`` once both kinds were seen, :mod:`~sparkbalance.state.control.lookprice`)
        self.price = LookPrice()
        #: b of the payoff model's fit, as it is now (set by the operator's planner)
        self.seconds_per_load = seconds_per_load
        #: when the coming batch is likely to need a move (:mod:`~sparkbalance.state.
        #: control.hazard`), and what a batch that needed one lost (the last ones' median)
        self.hazard = ShiftHazard()
        #: per move decided: (seconds a batch saved as decided, load it took off the
        #: slowest partition per batch or None), valued by :meth:`shift_s`
        self.shifts: deque = deque(maxlen=9)
        self.past: deque = deque(maxlen=(window or 0) + 1)

    @property
    def move_rate(self) -> float:
        """Share of the recent batches whose decision moved the state: the hazard's mean
        rate (:attr:`~sparkbalance.state.control.hazard.ShiftHazard.rate`), not kept
        twice."""
        return self.hazard.rate

    @property
    def lag_s(self) -> float:
        """Seconds per batch a reactive controller loses to lag, averaged over batches:
        the share that moved (:attr:`move_rate`) times what a batch that needed a move
        lost (the median of the last ones).

        Examples
        --------
        >>> la = Lookahead("auto")
        >>> la.observe(0.0); la.observe(0.1)     # the first move starts the clock
        >>> la.move_rate, la.lag_s               # another is expected until quiet ones
        (1.0, 0.1)
        >>> for _ in range(3): la.observe(0.0)
        >>> round(la.move_rate, 2), round(la.lag_s, 3)
        (0.16, 0.016)
        """
        return self.move_rate * self.shift_s()

    def shift_s(self) -> float:
        """Seconds a batch that needed a move lost to lag: the median of the last moves',
        each the load it took off the slowest partition times ``b`` as fitted now (the
        seconds it was decided with when its load is unknown); 0 before any move.

        Examples
        --------
        >>> b = [0.001]
        >>> la = Lookahead("auto", seconds_per_load=lambda: b[0])
        >>> la.observe(0.5, load=100.0)      # decided on the first batches' b: 0.005 s
        >>> la.shift_s()
        0.1
        >>> b[0] = 0.0                       # the fit sees nothing scale with the load
        >>> la.shift_s()
        0.0
        """
        if not self.shifts:
            return 0.0
        b = self.seconds_per_load()
        b = b if math.isfinite(b) and b > 0 else 0.0
        return statistics.median(s if load is None else load * b for s, load in self.shifts)

    @property
    def boundary_s(self) -> float:
        """Seconds every looked-ahead batch pays: the difference between batches with and
        without the look-ahead once both were seen (:class:`~sparkbalance.state.control.
        lookprice.LookPrice`), before that the boundary measured from its parts
        (``tally_s``)."""
        measured = self.price.price(self.seconds_per_load())
        return self.tally_s if measured is None else measured

    @property
    def cost_s(self) -> float:
        """Seconds per batch that looking ahead costs: the boundary (:attr:`boundary_s`),
        and routing again weighed by the share of batches that move.

        Examples
        --------
        >>> la = Lookahead("auto")
        >>> la.observe_tally(0.01); la.observe_reroute(0.05)
        >>> la.observe(0.04); la.observe(0.0)
        >>> round(la.cost_s, 4) == round(0.01 + la.move_rate * 0.05, 4)
        True
        """
        return self.boundary_s + self.move_rate * self.reroute_s

    def wanted(self) -> bool:
        """Tally the coming batch? In ``auto``: when the lag it would lose
        (:attr:`expected_lag_s`) costs more than looking ahead. To measure the price
        (:class:`~sparkbalance.state.control.lookprice.LookPrice`) a quiet batch — one no
        likelier than the mean to need a move, so a look-ahead there does not move and a
        batch without it loses no lag — is of the kind :meth:`LookPrice.explore` asks
        for, while a shift's lag would pay for a look-ahead at all."""
        if self.mode != "auto":
            return self.mode == "always"
        if not self.shifts:
            return False                  # no lag seen: nothing to look ahead for
        h, shift, boundary = self.hazard.chance(), self.shift_s(), self.boundary_s
        pays = h * shift > boundary + h * self.reroute_s
        ask = self.price.explore()
        quiet = h <= self.hazard.rate + 1e-12
        if ask is None or not quiet or shift <= EXPLORE_MARGIN * boundary:
            return pays
        return ask

    @property
    def expected_lag_s(self) -> float:
        """Seconds the coming batch would lose to lag without the look-ahead: the chance
        it needs a move at its age (:class:`~sparkbalance.state.control.hazard.
        ShiftHazard`) times what a batch that needed one lost (median of the last ones).
        A stream without rhythm gets about :attr:`lag_s`; one whose keys move every ``p``
        batches gets the lag of a whole shift on its shift batches and none between, so
        the price is paid where the lag is."""
        return self.hazard.chance() * self.shift_s()

    def observe_batch(self, looked: bool, seconds: float, work: float,
                      max_load: float = 0.0, moved: bool = False) -> None:
        """A whole batch's ``seconds`` (:meth:`LookPrice.observe`): what the user paid,
        with (``looked``) or without the look-ahead."""
        self.price.observe(looked, seconds, work, max_load, moved)

    def expect(self, map_stage: bool, rereads: bool = False) -> None:
        """The look-ahead's path: through the routing shuffle's own map stage (the
        bridge's chunks; one more job submitted, :data:`MAP_STAGE_S`) or a tally job
        (:data:`PRIOR_TALLY_S`). Sets the prior tally cost until one is measured — a
        prior of a tally job on the map-stage path kept ``"auto"`` from looking ahead on
        streams whose lag costs less than a job but more than a map stage. Likewise a
        moving batch's prior: ``rereads`` (the bridge's ``StateReread``) reads the
        written shuffle again (:data:`PRIOR_REREAD_S`), else routes again
        (:data:`PRIOR_REROUTE_S`) — a prior of routing again on the reread path asked
        the first look-ahead of every stream to earn a cost it does not pay.

        Examples
        --------
        >>> la = Lookahead("auto")
        >>> la.observe_reroute(0.0)              # routing again measured free
        >>> la.observe(saving_per_batch=0.02)    # lag of 0.02 s a batch
        >>> la.wanted(), la.expect(map_stage=True), la.wanted()
        (False, None, True)
        """
        if self._tallies_seen == 0:
            self.tally_s = MAP_STAGE_S if map_stage else PRIOR_TALLY_S
        if self._reroutes_seen == 0:
            self.reroute_s = PRIOR_REREAD_S if map_stage and rereads else PRIOR_REROUTE_S

    def observe(self, saving_per_batch: float, load: float | None = None) -> None:
        """One batch's decision: a migration decided (reactively or on the batch's own
        tally) saves ``saving_per_batch`` seconds per batch by taking ``load`` off the
        slowest partition per batch (None: unknown, the seconds are kept); 0 when none
        was needed."""
        if not math.isfinite(saving_per_batch):
            return
        saving = max(saving_per_batch, 0.0)
        self.hazard.observe(saving > 0)
        if saving > 0:
            ok = load is not None and math.isfinite(load) and load >= 0
            self.shifts.append((saving, float(load) if ok else None))

    def observe_tally(self, seconds: float) -> None:
        """A tally took ``seconds``: what every looked-ahead batch pays (the first
        replaces the prior)."""
        if not math.isfinite(seconds) or seconds < 0:
            return
        self.tally_s = _learned(self.tally_s, self._tallies_seen, seconds)
        self._tallies_seen += 1

    def observe_reroute(self, seconds: float) -> None:
        """A looked-ahead batch whose plan moves routed (part of) itself again in
        ``seconds`` (the first replaces the prior)."""
        if not math.isfinite(seconds) or seconds < 0:
            return
        self.reroute_s = _learned(self.reroute_s, self._reroutes_seen, seconds)
        self._reroutes_seen += 1

    def work(self, counts: Mapping) -> dict:
        """The coming batch's work per key from its tally (:func:`batch_work`)."""
        return batch_work(counts, list(self.past), self.window)

    def push(self, counts: Mapping | None) -> None:
        """Keep a merged batch's tally (None: not tallied; the window's replays of the next
        ``w`` batches are then estimated without it)."""
        self.past.append(Counter() if counts is None else counts)
