"""KeyedStateOperator: keyed state across batches, rebalanced by moving only the delta.

Per batch (Fang et al. §4, Fig. 5) :meth:`KeyedStateOperator.process` merges the batch into
the state frames (a decided layout rides in the same shuffle), measures the loads, decides
(λ > 1 + θ and the payoff model) and records, committing to a ``checkpoint_dir``. Its parts
(Position, cache, controller, Ledger, CheckpointKeeper, views, rescaling, forecasting) are
objects none holding it; a failed batch is undone from a Snapshot (docs/architecture.md).

Long because: the public class docstring documents every parameter; the batch's
steps, the moves between batches and the rollback touch the same parts.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Mapping

from sparkbalance.routing.base import check_num_partitions
from sparkbalance.spark.session import conf
from sparkbalance.spark.session.bridge import spark_context
from sparkbalance.state.control import report
from sparkbalance.state.control.controller import Controller, Decision, Measurement
from sparkbalance.state.control.lookahead import Lookahead
from sparkbalance.state.control.layout import GroupLayout
from sparkbalance.state.control.payoff import DEFAULT_HORIZON, DEFAULT_HYSTERESIS
from sparkbalance.state.control.planners import initial_layout
from sparkbalance.state.control.records import MigrationRecord
from sparkbalance.state.control.timing import merge_seconds
from sparkbalance.state.durability.checkpoint import BatchOutputs, outputs_frames
from sparkbalance.state.durability.keeper import CheckpointKeeper
from sparkbalance.state.durability.lease import DEFAULT_LEASE_TIMEOUT
from sparkbalance.state.durability.rollback import Snapshot
from sparkbalance.state.forecast import Forecasting
from sparkbalance.state.frames.caching import BatchCache, check_storage_level, held_outputs
from sparkbalance.state.frames.format import DEFAULT_TABLE_GROUPS
from sparkbalance.state.frames.framed_state import FramedState, Merged
from sparkbalance.state.frames.migration import migrate_state
from sparkbalance.state.frames.rdds import frame_ops
from sparkbalance.state.frames.window import StateFold
from sparkbalance.state.inputs import as_pairs
from sparkbalance.state.ledger import Ledger
from sparkbalance.state.merge_job import run_merge
from sparkbalance.state.position import Position
from sparkbalance.state.rescaling import Rescaling
from sparkbalance.state.streaming import already_applied, check_batch_id, check_on_replay, replayed
from sparkbalance.state.views import StateViews, forward

__all__ = ["KeyedStateOperator", "DEFAULT_TRUNCATE_EVERY"]

#: Batches between lineage truncations (long lineages slow task serialisation and recovery).
DEFAULT_TRUNCATE_EVERY: int = 10


class KeyedStateOperator:
    """Stateful keyed processing over batches with skew-aware, delta-only rebalancing.

    Parameters
    ----------
    spark : SparkSession or SparkContext.
    num_partitions : n, partitions of the state.
    update : ``update(state, value) -> state``; the key's output per batch is its state.
    initial : state of a new key (a zero-argument callable is called per key, else copied).
    update_values : ``update_values(state, values) -> (new_state, outputs)`` over one key's
        values of a batch (give this or ``update``); a state of ``None`` deletes the key.
    planner : a registry strategy of kind hash, table or keygroups (case-insensitive):
        "none"/"hash", "mixed", "mintable", "minmig", "mixedbf", "readj" (Fang et al.),
        "ssm"/"keygroups", "mtm" (Ding et al.), "correlation", "correlation-pairwise" (Xing
        et al.); split strategies are refused. Default ``spark.sparkbalance.planner``, else
        "mixed"; ``planner`` keeps the name, ``strategy`` the registry record.
    theta : θ_max: rebalance when max L / L̄ > 1 + θ (τ for SSM); default
        ``spark.sparkbalance.theta``, else 0.08.
    max_table : A_max, bound on the routing table (None: unbounded); default
        ``spark.sparkbalance.maxTable``, else 3000.
    window : None = state over all batches; w >= 1 = each key's last w batches (Fang et al.
        §2.1, ``state.window``); default ``spark.sparkbalance.window``, else None.
    checkpoint_dir : durable checkpoints (a local path or a Hadoop URI), resumed and
        validated at creation and leased until :meth:`close`; each commit also keeps the
        state files the outputs still held may recompute from (two, at times three, copies).
    state_size : ``state_size(state) -> bytes`` for S(k); default pickled size.

    Keyword-only: ``beta`` (MinMig/Mixed β), ``num_groups`` (key groups, or the routing
    table's frame groups G, default :data:`~sparkbalance.state.frames.format.DEFAULT_TABLE_GROUPS`),
    ``checkpoint_every``, ``truncate_every`` (lineage truncation), ``listener`` (measured
    task seconds as costs), ``key_col``/``value_col`` (DataFrame input), ``planner_params``,
    ``trigger`` (``"payoff"``: migrate when the predicted saving over ``horizon`` batches
    exceeds the predicted cost, planning to 1 + θ·``hysteresis``; ``"paper"``: λ > 1 + θ;
    every decision is in ``history``), ``inverse`` (undoes one value leaving a ``window``),
    ``on_replay`` ("skip" or "error", :mod:`~sparkbalance.state.streaming`),
    ``lease_timeout`` (:mod:`~sparkbalance.state.durability.lease`), ``storage_level`` (of
    the cached frames, default ``MEMORY_AND_DISK``:
    :func:`~sparkbalance.state.frames.caching.check_storage_level`), ``lookahead``
    (``"auto"``, ``"always"``, ``"never"``: :mod:`~sparkbalance.state.control.lookahead`).

    Examples
    --------
    >>> op = KeyedStateOperator(spark, 4, update=lambda s, v: s + v, initial=0)  # doctest: +SKIP
    >>> op.process(sc.parallelize([("a", 1), ("a", 3)])).collect()  # doctest: +SKIP
    [('a', 4)]
    """

    def __init__(self, spark: Any, num_partitions: int, update: Callable | None = None,
                 initial: Any = None, update_values: Callable | None = None,
                 planner: str | None = None, theta: float | None = None,
                 max_table: int | None | str = "default", window: int | None | str = "default",
                 checkpoint_dir: str | Path | None = None,
                 state_size: Callable[[Any], float] | None = None, *,
                 beta: float | None = None, num_groups: int | None = None,
                 checkpoint_every: int = 1, truncate_every: int = DEFAULT_TRUNCATE_EVERY,
                 listener: Any = None, key_col: str = "key", value_col: str = "value",
                 planner_params: Mapping[str, Any] | None = None, trigger: str = "payoff",
                 hysteresis: float = DEFAULT_HYSTERESIS, horizon: int = DEFAULT_HORIZON,
                 inverse: Callable | None = None, on_replay: str = "skip",
                 lease_timeout: float = DEFAULT_LEASE_TIMEOUT,
                 storage_level: Any = None, lookahead: str = "auto") -> None:
        self.sc = spark_context(spark)
        # Settings not given come from spark.sparkbalance.* like the adapters' (spark.conf);
        # "default" marks max_table/window unset, since None means "unbounded" for both.
        planner = conf.resolve(self.sc, "planner", planner)
        theta = conf.resolve(self.sc, "theta", theta)
        if max_table == "default":
            max_table = conf.resolve(self.sc, "max_table")
        if window == "default":
            window = conf.resolve(self.sc, "window")
        n = check_num_partitions(num_partitions)
        self._fold = StateFold(update, initial, update_values, window, state_size,
                               inverse=inverse)
        self._controller = Controller(planner, theta, max_table, beta, planner_params,
                                      trigger=trigger, hysteresis=hysteresis, horizon=horizon)
        c = self._controller
        self.trigger, self.planner, self.theta = c.trigger, c.name, c.theta
        self.window = self._fold.window
        self.checkpoint_every = check_num_partitions(checkpoint_every, "checkpoint_every")
        self.truncate_every = check_num_partitions(truncate_every, "truncate_every")
        self.listener = listener
        #: Outputs brought to the driver by the merge job: ``collected`` (key, output) list
        self.collect_outputs, self.collected, self._out_frames = False, None, None
        self.key_col, self.value_col = key_col, value_col
        self.on_replay = check_on_replay(on_replay)
        self._level = check_storage_level(storage_level)
        layout = initial_layout(self.planner, n, num_groups)
        if isinstance(layout, GroupLayout):
            groups = layout.num_groups
        else:
            groups = (DEFAULT_TABLE_GROUPS if num_groups is None
                      else check_num_partitions(num_groups, "num_groups"))
        self._ledger = Ledger()
        self.history, self.migrations = self._ledger.history, self._ledger.migrations
        self._cache = BatchCache(self.sc, self._level)
        self._at = Position(FramedState.empty(frame_ops(self.sc), layout, groups))
        self._at.state.rdd.persist(self._level)
        self._cache.hold(self._at.state.rdd)
        self._rescaling = Rescaling(self._controller, self._ledger)
        self._forecasting = Forecasting(
            self._controller,
            Lookahead(lookahead, self.window, lambda: self._controller.payoff.fitted_seconds_per_load),
            self._fold.weight)
        self.checkpoint_dir = checkpoint_dir
        self._keeper = CheckpointKeeper(self.sc, checkpoint_dir)
        if self._keeper.active:
            self._open(n, lease_timeout)

    # ------------------------------------------------------------------ one batch
    @report.labelled("batch")
    def process(self, batch: Any, batch_id: int | None = None) -> Any:
        """Apply one batch; return its outputs as an RDD of ``(key, output)``.

        The outputs are cached from their first read while the returned RDD (or one mapped
        from it) is referenced: read them before the next call (a later first read
        recomputes them from lineage, with the same result).
        A ``batch_id`` at or below the last applied one is never applied again (see
        ``on_replay``): the last applied id's replay returns its kept outputs, an older one
        None. A failed batch or checkpoint (e.g. a read-only ``checkpoint_dir``:
        ``CheckpointError``) leaves the operator as before the call; a NaN key fails the
        batch (:mod:`~sparkbalance.state.inputs`).
        """
        t0, self.collected, self._out_frames = time.perf_counter(), None, None
        if batch_id is not None:
            batch_id = check_batch_id(batch_id)
            if already_applied(batch_id, self.last_batch_id):
                return replayed(batch_id, self.last_batch_id, self.on_replay,
                                lambda: self._keeper.replay_outputs(batch_id))
        snap = self._snapshot()
        try:
            seq = self._at.seq
            pairs = as_pairs(batch, self.key_col, self.value_col)
            self._at, merged = self._forecasting.ahead(
                self._at, pairs, f"sparkbalance-state-{id(self)}-{seq}",
                lambda at, tally, routed=None: self._merged(pairs, True, at, tally, routed))
            m = self._measure(merged)
            decision = self._decide(m)
            frames = outputs_frames(merged)
            outputs = held_outputs(frames, self._level)   # a late read reads its cache
            # kept before the commit, whose cleanup would remove the files the merge read
            self._keeper.keep_outputs(BatchOutputs(seq, batch_id, frames, outputs, self._out_frames))
            self._record(batch_id, m, decision, t0)
        except BaseException:
            self._restore(snap)     # not advanced: a retry applies the batch exactly once
            raise
        return self._cache.lend(outputs)   # readable late, also past truncations

    def merge_rdd(self, batch: Any) -> Any:
        """The lazy merge of ``batch`` into the state (no job runs), as :meth:`process`
        would run it (a pending migration rides in it): per partition the new state
        frames, one outputs frame and one statistics frame. Exposed to inspect the lineage
        (``merge_rdd(b)._jrdd.rdd().toDebugString()``: a ``ZippedPartitionsRDD2`` whose
        state side is narrow down to the cached frames).
        """
        return self._merged(as_pairs(batch, self.key_col, self.value_col), False).rdd

    def _merged(self, pairs: Any, carry: bool = True, at: Any = None, tally: Any = None,
                routed: Any = None) -> Merged:
        level = self._level if carry else None
        return (at or self._at).merged(pairs, self._fold, level, tally, routed)

    def _measure(self, merged: Merged) -> Measurement:
        """Run the merge (one job, cached; the state becomes the merged one, placed by
        the layout the batch was routed with) and measure the batch's loads under it. A
        riding migration is recorded."""
        seq = self._at.seq
        group = f"sparkbalance-state-{id(self)}-{seq}"
        truncated, rebasing, target = self._keeper.merge_terms(
            seq, self.checkpoint_every, self.truncate_every, self._at.state.ops.jvm)
        run = run_merge(merged, self._cache, group, report.batch_description(self, seq),
                        truncated=truncated, rebasing=rebasing,
                        with_outputs=self.collect_outputs, write_state=target)
        self.collected, self._out_frames = run.outputs, run.out_frames  # both on the driver
        state = merged.state()
        if run.state_files is not None:     # the commit writes no state files of its own
            self._keeper.state_written(state, run.state_files)
        layout = state.layout
        m = self._controller.measure(run.stats, layout,
                                     merge_seconds(self.listener, group, layout.num_physical))
        # A batch that carried a migration teaches the cost model what the move added (its
        # excess time; predicted while the model cannot yet predict), not the time fit.
        added = self._controller.observe_batch(run.merge_seconds, m, run.bytes_moved)
        if merged.moves:
            self._complete(run.keys_moved, run.bytes_moved, merged.frames_read, added)
        self._at = self._at.replace(state=state, last=m, num_keys=m.num_keys,
                                    state_bytes=m.state_bytes)
        return m

    def _decide(self, m: Measurement) -> Decision | None:
        """The planned layout when λ > 1 + θ, the plan improves λ and (payoff trigger) the
        predicted saving exceeds the cost; else None. The judgement is kept for history."""
        judgement, plan_seconds, decision = self._controller.judge(m, None), 0.0, None
        if self._controller.should_rebalance(m):
            decision = self._controller.plan(m, self._at.state.layout)
            plan_seconds = decision.seconds
            if decision.layout == self._at.state.layout:
                decision = None
            judgement = self._controller.judge(m, decision)
        self._forecasting.observe(judgement)
        self._at = self._at.replace(judgement=judgement, plan_seconds=plan_seconds)
        return decision if judgement.migrate else None

    def _complete(self, keys_moved: int, bytes_moved: float, frames: int,
                  seconds: float) -> None:
        """The pending migration moved: recorded, and no longer pending."""
        rec = self._ledger.moved(self._at, keys_moved, bytes_moved, frames, seconds)
        report.post_migration(self, rec)
        self._at = self._at.replace(pending=None, pending_seq=-1)

    def _record(self, batch_id: int | None, m: Measurement, decision: Decision | None,
                t0: float) -> None:
        at = self._at
        moving = decision is not None and decision.layout != at.state.layout
        decision = decision if moving else None
        self._at = at.advanced(batch_id, decision)
        self._forecasting.advance()
        self._ledger.batch(at, batch_id, m, self.layout, decision, time.perf_counter() - t0,
                           timed=self.listener is not None)
        report.post_batch(self, m, decision)
        if self._keeper.active and self._at.seq % self.checkpoint_every == 0:
            self.save_checkpoint()
        self._cache.end()       # after the commit: a failed one rolls back to cached RDDs

    def foreach_batch(self, df: Any, batch_id: int) -> Any:
        """``writeStream.foreachBatch`` entry point: exactly-once over restarts.

        A batch id at or below the last applied one (recorded atomically in the
        checkpoint) is a replay and is never applied again: the replay of the last applied
        batch returns its kept outputs (also after a restart), an older one None (or a
        ``ReplayError`` with ``on_replay="error"``); otherwise the outputs RDD.
        """
        return self.process(df, batch_id=check_batch_id(batch_id))

    # ------------------------------------------------------------------ moves between batches
    @report.labelled("scale")
    def scale(self, num_partitions: int) -> MigrationRecord:
        """Change the number of partitions to ``num_partitions``, moving only what must move.

        Key groups (SSM/MTM): the optimal interval migration of Ding et al. (new nodes take
        over sub-intervals; removed nodes hand theirs over). Routing tables: h(k) = hash
        mod n changes with n, so most keys move (that is what key groups avoid). Shrinking
        keeps the emptied physical partitions as empty blocks (see ``state.layout``).
        """
        return self._rescaling.scale(num_partitions, self._settled, self._move_now)

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
        return self._forecasting.rebalance(costs, self._settled, self._move_now)

    @report.labelled("settle")
    def _settle(self) -> None:
        """Move a pending migration now, on its own (one job plus one that materialises
        the moved state with its lineage cut): for reads of the state between batches,
        checkpoints and ``scale``."""
        at = self._at
        if at.pending is None:
            return
        state, rec = self._migrate(at.pending, at.pending_seq, "imbalance")
        self._controller.observe_migration(rec.seconds, rec.bytes_moved)   # its own jobs
        self._complete(rec.keys_moved, rec.bytes_moved, rec.frames_touched, rec.seconds)
        self._at = self._at.settled(state)

    def _settled(self) -> Position:
        """The position once a pending migration is moved."""
        self._settle()
        return self._at

    def _move_now(self, decision: Decision, reason: str, observe: bool = False
                  ) -> MigrationRecord:
        """Move the state to ``decision``'s layout now, in a job of its own, and commit it
        (with a ``checkpoint_dir``); on failure the operator and its commit stay as before.
        ``observe``: the move's seconds per byte teach the payoff model (a move at the
        same partition count, like a settled migration)."""
        snap = self._snapshot()
        try:
            state, rec = self._migrate(decision, self._at.seq, reason)
            # its placement is the old layout's: no last measurement
            self._at = self._at.replace(state=state, last=None)
            self.migrations.append(rec)
            if observe:
                self._controller.observe_migration(rec.seconds, rec.bytes_moved)
            report.post_migration(self, rec)
            if self._keeper.active:
                self.save_checkpoint()
        except BaseException:
            self._restore(snap)
            raise
        return rec

    def _migrate(self, decision: Decision, seq: int, reason: str
                 ) -> tuple[FramedState, MigrationRecord]:
        """The state moved to ``decision.layout`` (cached, lineage cut, pinned)."""
        state, rec = migrate_state(self._at.state, decision.layout, seq=seq, reason=reason,
                                   planned_bytes=decision.planned_bytes,
                                   candidates=decision.candidates, storage_level=self._level,
                                   cut=self._cache.cut)
        self._cache.pin(state.rdd)
        return state, rec

    # ------------------------------------------------------------------ views
    strategy = property(lambda self: self._controller.strategy, doc="The registry record of "
                        "the planner (:func:`sparkbalance.strategies.get`).")
    num_partitions = forward("num_partitions")
    layout = forward("layout")
    pending_migration = forward("pending_migration")
    partition_function = forward("partition_function")
    table = forward("table")
    version = forward("version")
    state_rdd = forward("state_rdd")
    blocks_rdd = forward("blocks_rdd")
    frames_rdd = forward("frames_rdd")

    def collect_state(self) -> dict:
        """``{key: state}`` on the driver (tests and small states). A key stored twice is
        a ``RuntimeError`` (a broken layout), never silently merged."""
        return self._views().collect_state()

    def _views(self) -> StateViews:
        return StateViews(self._at, lambda: self._settled().state)

    last_batch_id = property(lambda self: self._at.last_batch_id,
                             doc="The last applied batch id (None: no batch with an id yet).")
    # Read by the job descriptions and batch reports (control.report) and by tests.
    _state = property(lambda self: self._at.state)
    _seq = property(lambda self: self._at.seq)
    _pending = property(lambda self: self._at.pending)
    _judgement = property(lambda self: self._at.judgement)
    _plan_seconds = property(lambda self: self._at.plan_seconds)
    _base_dir = property(lambda self: self._keeper.base_dir)
    _files = property(lambda self: self._keeper.files)
    _lease = property(lambda self: self._keeper.lease)
    _resumed = property(lambda self: self._keeper.resumed)

    # ------------------------------------------------------------------ durability
    @report.labelled("checkpoint")
    def save_checkpoint(self) -> None:
        """Commit state + layout + version + last batch id + the last batch's outputs
        (+ a decided migration, unmoved: the resume moves it) atomically to checkpoint_dir,
        under new names (the previous commit stays valid until this one has committed);
        ``CheckpointError`` names the directory on failure."""
        # No _settle(): the state is saved unmoved with the pending layout (no extra job),
        # and the resumed operator's first batch moves it, as this one's would.
        state = self._keeper.commit(self._at, planner=self.planner, window=self.window)
        self._at = self._at.replace(state=state)

    def last_outputs(self) -> Any:
        """The outputs, an RDD of ``(key, output)``, of the last applied batch — also after
        a restart, read from the checkpoint, until the next batch commits; None when there
        is none (no batch yet, the checkpoint predates the outputs, or it keeps those of
        an earlier batch with an id for its replay: the last batch had none)."""
        return self._keeper.last_outputs(self._at.seq)

    def _open(self, num_partitions: int, lease_timeout: float) -> None:
        """Own the directory, then resume its commit or commit the empty state (so that
        files without a manifest later always mean a lost manifest)."""
        got = self._keeper.open(lease_timeout, self._at.state.ops, self.save_checkpoint,
                                planner=self.planner, window=self.window,
                                num_partitions=num_partitions, storage_level=self._level)
        if got is not None:
            self._at.state.rdd.unpersist()
            self._cache.reset(*got.state.cached)
            self._at = Position(got.state, got.seq, got.last_batch_id, got.num_keys,
                                got.state_bytes, pending=got.pending, pending_seq=got.pending_seq)

    def _snapshot(self) -> Snapshot:
        return Snapshot.take(self._at, self._ledger.mark(), self._keeper.mark(), self._cache)

    def _restore(self, snap: Snapshot) -> None:
        self._at = snap.position
        self._ledger.restore(snap.records)
        self._keeper.restore(snap.commits)
        self._cache = snap.restore_cache(self._cache)

    # ------------------------------------------------------------------ cleanup
    def close(self) -> None:
        """Release every cached RDD of the operator and the lease on checkpoint_dir."""
        self._keeper.release()
        self._cache.close(self._at.state.rdd)

    def __repr__(self) -> str:
        return (f"KeyedStateOperator(num_partitions={self.num_partitions}, planner="
                f"{self.planner!r}, theta={self.theta}, window={self.window}, "
                f"batches={self._at.seq}, version={self.version})")
