"""KeyedStateOperator: keyed state across batches, rebalanced by moving only the delta.

State lives in a persisted RDD of *frames* (:class:`~sparkbalance.state.frames.framed_state.FramedState`)
placed by the current layout ``F`` (routing table of Fang et al., or key-group intervals of
Ding et al.). Per batch (Fang et al. §4, Fig. 5), :meth:`KeyedStateOperator.process` is
four calls:

1. **merge** — the batch is routed with the layout ``F`` and merged into the state,
   narrow on the state (:meth:`FramedState.merge
   <sparkbalance.state.frames.framed_state.FramedState.merge>`). When the previous batch decided on a
   new layout ``F'``, this batch is routed with ``F'`` and only the keys with
   ``F'(k) != F(k)`` ride in the same shuffle (**migrate**): a migration runs no job
   of its own (Fang et al. §4, Fig. 5: the pause between the plan and the resume is the
   stage boundary of the next batch);
2. **measure** — one job runs the merge, caches it and collects the per-key (or
   per-key-group) costs and sizes (with a listener: measured task seconds,
   :mod:`~sparkbalance.state.control.timing`), and the keys that left and arrived, which must
   agree; the controller turns the costs into loads;
3. **decide** — λ > 1 + θ? then the planner gives ``F'``, used from the next batch
   (:class:`~sparkbalance.state.control.controller.Controller`);
4. **record** — a :class:`~sparkbalance.state.control.records.BatchRecord`, and optionally a
   durable checkpoint (:func:`~sparkbalance.state.durability.checkpoint.save_checkpoint`).

Reading the state between batches (``collect_state``, ``state_rdd``, ``blocks_rdd``,
``frames_rdd``), :meth:`~KeyedStateOperator.scale` and
:meth:`~KeyedStateOperator.rebalance` (a move planned on a forecast,
:mod:`.forecast`) first move a pending migration on
their own (one job, :func:`~sparkbalance.state.frames.migration.migrate_state`); a checkpoint
saves it unmoved with the state, and a resume moves it in its first batch's shuffle.

With a ``checkpoint_dir`` (committed every batch) and the bridge jar, each commit bases the
state on its files (:func:`~sparkbalance.state.durability.checkpoint.rebased`): its lineage is one
read, and a lost executor costs one batch of recomputation. Otherwise lineage is a chain
truncated every ``truncate_every`` batches (:mod:`~sparkbalance.state.frames.caching`); on
clusters where executors come and go, set ``sc.setCheckpointDir`` then, or cache the state
replicated (``storage_level=StorageLevel.MEMORY_AND_DISK_2``: a lost executor loses no state
block). An operator with a ``checkpoint_dir`` is restarted from its last durable checkpoint.

Long because: one batch's merge, measure, decide, record and the pending riding migration
stay together; the read-only views (:mod:`.views`), ``scale`` (:mod:`.rescaling`),
``rebalance`` (:mod:`.forecast`) and the
checkpoint entry points (:mod:`.durable`) live in their own modules.
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from sparkbalance.routing.base import check_num_partitions
from sparkbalance.spark.session import conf
from sparkbalance.spark.session.jobs import sparkbalance_job_group
from sparkbalance.state.frames.caching import BatchCache, FileLoans, check_storage_level, held_outputs
from sparkbalance.state.durability.checkpoint import BatchOutputs, outputs_frames
from sparkbalance.state.durability.durable import Durable
from sparkbalance.state.forecast import Forecasting
from sparkbalance.state.rescaling import Rescaling
from sparkbalance.state.views import StateViews
from sparkbalance.state.control.controller import Controller, Decision, Measurement
from sparkbalance.state.control.planners import initial_layout
from sparkbalance.state.frames.rdds import frame_ops
from sparkbalance.state.frames.format import DEFAULT_TABLE_GROUPS
from sparkbalance.state.frames.framed_state import FramedState, Merged
from sparkbalance.spark.session.bridge import spark_context
from sparkbalance.state.inputs import as_pairs
from sparkbalance.state.control.layout import GroupLayout
from sparkbalance.state.frames.migration import migrate_state
from sparkbalance.state.control.payoff import DEFAULT_HORIZON, DEFAULT_HYSTERESIS, Judgement
from sparkbalance.state.control.records import BatchRecord, MigrationRecord, batch_record
from sparkbalance.state.control import report
from sparkbalance.state.durability.lease import DEFAULT_LEASE_TIMEOUT, Lease
from sparkbalance.state.durability.rollback import Snapshot
from sparkbalance.state.durability.store import store_for
from sparkbalance.state.streaming import already_applied, check_batch_id, check_on_replay, replayed
from sparkbalance.state.control.timing import merge_seconds
from sparkbalance.state.frames.window import StateFold

__all__ = ["KeyedStateOperator", "DEFAULT_TRUNCATE_EVERY"]

#: Batches between lineage truncations: long lineages make task serialisation and
#: recovery slow; 10 keeps them short at one extra job per 10 batches.
DEFAULT_TRUNCATE_EVERY: int = 10


def _check_positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name}={value!r}; expected an int >= 1")
    return int(value)


class KeyedStateOperator(StateViews, Rescaling, Forecasting, Durable):
    """Stateful keyed processing over batches with skew-aware, delta-only rebalancing.

    Parameters
    ----------
    spark : SparkSession or SparkContext.
    num_partitions : n, partitions of the state.
    update : ``update(state, value) -> state``; the key's output per batch is its state.
    initial : state of a new key (a zero-argument callable is called per key; other values
        are deep-copied).
    update_values : ``update_values(state, values) -> (new_state, outputs)``, general form
        over one key's values of a batch (give this or ``update``). A state of ``None``
        deletes the key.
    planner : a strategy name of the registry (:mod:`sparkbalance.strategies`) of kind
        hash, table or keygroups: "none"/"hash" (plain hash, never rebalances), "mixed",
        "mintable", "minmig", "mixedbf", "readj" (routing table, Fang et al.) or
        "ssm"/"keygroups", "mtm" (key-group intervals, Ding et al.), "correlation",
        "correlation-pairwise" (key groups placed on their load over the last ``k``
        batches, Xing et al.; ``planner_params`` of
        :class:`~sparkbalance.planning.correlation.CorrelationPlanner`); case-insensitive. A split
        strategy ("pkg", ...) is refused. ``planner`` keeps the name as spelt (lower
        case; also in checkpoints); ``strategy`` is the registry record. Default
        ``spark.sparkbalance.planner``, else "mixed".
    theta : θ_max, the tolerated imbalance: rebalance when max L / L̄ > 1 + θ (τ for SSM);
        default ``spark.sparkbalance.theta``, else 0.08.
    max_table : A_max, bound on the routing table (routing-table planners; None: unbounded);
        default ``spark.sparkbalance.maxTable``, else 3000.
    window : default ``spark.sparkbalance.window``, else None.
        None = state over all batches; w >= 1 = state of each key over its
        last w batches (Fang et al. §2.1; older contributions expire, see
        ``state.window``). w = 1 would make the state per-batch only, hence the unbounded
        running state as the default.
    checkpoint_dir : directory for durable checkpoints: a local path, or a Hadoop URI
        (``hdfs://...``, ``s3a://...``; a shared file system on a cluster). An existing
        checkpoint there is resumed (and validated) when the operator is created; the
        operator owns the directory (a lease, released by :meth:`close`) until closed.
        The state is then based on each commit's files (a lost executor costs one batch);
        the previous commit's state files stay while an outputs RDD that may recompute
        from them is referenced, so about twice the state is on disk.
    state_size : ``state_size(state) -> bytes`` for S(k); default pickled size.

    Keyword-only: ``beta`` (MinMig/Mixed β), ``num_groups`` (key groups, default 16 per
    partition; for routing tables, G, the frame groups the state is cut into, default
    :data:`~sparkbalance.state.frames.format.DEFAULT_TABLE_GROUPS`), ``checkpoint_every``
    (batches), ``truncate_every`` (lineage truncation; none with a ``checkpoint_dir``
    committed every batch), ``listener`` (a
    :class:`~sparkbalance.spark.metrics.listener.TaskMetricsListener`: costs become measured task
    seconds), ``key_col``/``value_col`` (DataFrame input), ``planner_params`` (planner
    constructor arguments; an unknown one is a ``TypeError``), ``trigger`` (``"payoff"``,
    the default: migrate only when the predicted saving over ``horizon`` batches exceeds the
    predicted cost, planning to 1 + θ·``hysteresis`` after triggering above 1 + θ;
    ``"paper"``: Fang et al. §4's exact trigger, λ > 1 + θ). Every decision, taken or not,
    is in ``history`` (``decision``, ``predicted_saving_s``, ``predicted_cost_s``),
    ``inverse`` (with ``update`` and a ``window``: ``inverse(state, value)`` undoes one
    value, so values leaving the window are subtracted instead of the window replayed),
    ``on_replay`` ("skip" or "error": a ``batch_id`` at or below the last applied one is
    never applied twice, see :mod:`~sparkbalance.state.streaming`), ``lease_timeout``
    (seconds without a heartbeat before another operator may take ``checkpoint_dir`` over,
    see :mod:`~sparkbalance.state.durability.lease`), ``storage_level`` (where the state's frames are
    cached, default ``MEMORY_AND_DISK``; a replicated level such as
    ``StorageLevel.MEMORY_AND_DISK_2`` makes a lost executor cost no recomputation without a
    ``checkpoint_dir``, at twice the cache: :func:`~sparkbalance.state.frames.caching.check_storage_level`).

    Examples
    --------
    >>> op = KeyedStateOperator(spark, 4, update=lambda s, v: s + v, initial=0,
    ...                         planner="mixed")                        # doctest: +SKIP
    >>> op.process(sc.parallelize([("a", 1), ("b", 2), ("a", 3)])).collect()  # doctest: +SKIP
    [('a', 4), ('b', 2)]
    >>> op.collect_state()                                              # doctest: +SKIP
    {'a': 4, 'b': 2}
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
                 storage_level: Any = None) -> None:
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
        self.trigger = self._controller.trigger
        self._judgement: Judgement | None = None
        self._plan_seconds = 0.0
        self.planner = self._controller.name
        self.theta = self._controller.theta
        self.window = self._fold.window
        self.checkpoint_every = _check_positive_int(checkpoint_every, "checkpoint_every")
        self.truncate_every = _check_positive_int(truncate_every, "truncate_every")
        self.listener = listener
        self.key_col, self.value_col = key_col, value_col
        self.on_replay = check_on_replay(on_replay)
        self._level = check_storage_level(storage_level)
        layout = initial_layout(self.planner, n, num_groups)
        if isinstance(layout, GroupLayout):
            groups = layout.num_groups
        else:
            groups = (DEFAULT_TABLE_GROUPS if num_groups is None
                      else _check_positive_int(num_groups, "num_groups"))
        self._seq = 0
        self.last_batch_id: int | None = None
        self.history: list[BatchRecord] = []
        self.migrations: list[MigrationRecord] = []
        self._num_keys = 0
        self._state_bytes = 0.0
        self._last: Measurement | None = None
        self._pending: Decision | None = None     # F' decided, moved by the next batch
        self._pending_seq = -1
        self._cache = BatchCache(self.sc, self._level)
        self._state = FramedState.empty(frame_ops(self.sc), layout, groups)
        self._state.rdd.persist(self._level)
        self._cache.hold(self._state.rdd)
        self._outputs: BatchOutputs | None = None     # the last applied batch's outputs
        self._manifest = None                           # the last commit
        self._resumed: tuple[str, Any] | None = None    # (state dir, RDD) a resume reads
        self._base_dir: str | None = None     # the state files the state falls back to
        self._files = FileLoans()             # state files outputs handed out may read
        self.checkpoint_dir = checkpoint_dir
        self._store = None if checkpoint_dir is None else store_for(self.sc, checkpoint_dir)
        self._lease: Lease | None = None
        if self._store is not None:
            self._open_store(n, lease_timeout)

    # ------------------------------------------------------------------ one batch
    @report.labelled("batch")
    def process(self, batch: Any, batch_id: int | None = None) -> Any:
        """Apply one batch; return its outputs as an RDD of ``(key, output)``.

        The outputs are cached from their first read for as long as the returned RDD,
        or one derived from it by ``map``-like calls, is referenced; read them before the
        next call for best performance (an outputs RDD first read later is recomputed from
        lineage, with the same result: the locally checkpointed RDDs it recomputes from
        stay cached while it is referenced).
        A ``batch_id`` at or below the last applied one is never applied again (see
        ``on_replay``): the replay of the last applied batch returns its kept outputs
        (:meth:`last_outputs`), an older one None. When the batch or its checkpoint fails
        (e.g. a read-only ``checkpoint_dir``: a ``CheckpointError`` naming it) the operator
        is left as before the call.
        """
        t0 = time.perf_counter()
        if batch_id is not None:
            batch_id = check_batch_id(batch_id)
            if already_applied(batch_id, self.last_batch_id):
                return replayed(batch_id, self.last_batch_id, self.on_replay,
                                self.last_outputs)
        snap = self._snapshot()
        try:
            seq = self._seq
            merged = self._merged(batch)
            m = self._measure(merged)
            decision = self._decide(m)
            frames = outputs_frames(merged)
            self._outputs = BatchOutputs(seq, batch_id, frames)
            outputs = held_outputs(frames, self._level)   # a late read reads its cache
            # before the commit, whose cleanup would remove the files the merge read
            self._files.lend(outputs, self._base_dir)
            self._record(seq, batch_id, m, decision, t0)
        except BaseException:
            snap.restore(self)      # not advanced: a retry applies the batch exactly once
            raise
        return self._cache.lend(outputs)   # readable late, also past truncations

    def merge_rdd(self, batch: Any) -> Any:
        """The lazy merge of ``batch`` into the state (no job runs), as :meth:`process`
        would run it (a pending migration rides in it): per partition the new state
        frames, one outputs frame and one statistics frame. Exposed to inspect the lineage
        (``merge_rdd(b)._jrdd.rdd().toDebugString()``: a ``ZippedPartitionsRDD2`` whose
        state side is narrow down to the cached frames).
        """
        return self._merged(batch, persist_carried=False).rdd

    def _merged(self, batch: Any, persist_carried: bool = True) -> Merged:
        p = self._pending
        pairs = as_pairs(batch, self.key_col, self.value_col)
        if p is None:
            return self._state.merge(pairs, self._fold, self._seq)
        return self._state.merge(pairs, self._fold, self._seq, to=p.layout,
                                 candidates=p.candidates,
                                 carried_level=self._level if persist_carried else None)

    def _measure(self, merged: Merged) -> Measurement:
        """Run the merge (one job, cached; the state becomes the merged one, placed by
        the layout the batch was routed with) and measure the batch's loads under it. A
        riding migration is checked (keys out = keys in) and recorded."""
        seq = self._seq
        rebasing = self._rebasing
        truncated = not rebasing and (seq + 1) % self.truncate_every == 0
        self._cache.persist(merged.rdd, truncated)
        if merged.moves and not rebasing:
            self._cache.cut(merged.carried)
        group = f"sparkbalance-state-{id(self)}-{seq}"
        t0 = time.perf_counter()
        try:
            with sparkbalance_job_group(self.sc, group, report.batch_description(self, seq)):
                stats = merged.stats()
            if merged.moves:
                out, got, nbytes = Merged.moved(stats)
                if out != got:
                    raise RuntimeError(f"migration moved {out} keys out but {got} arrived; "
                                       "refusing the new layout (state kept as before)")
        except BaseException:
            merged.rdd.unpersist()
            if merged.moves:
                merged.carried.unpersist()
            raise
        merge_s = time.perf_counter() - t0
        self._cache.begin(merged.rdd, truncated)
        if merged.moves:
            # A truncated merge no longer reads the carried state; else keep it until the
            # next truncation (a recomputation of this batch reads it, not the old state).
            if truncated or rebasing:
                self._cache.hold(merged.carried)
            else:
                self._cache.keep_until_truncation(merged.carried)
            self._complete(got, nbytes, merged.frames_read, time.perf_counter() - t0)
        self._state = merged.state()
        layout = self._state.layout
        m = self._controller.measure(stats, layout,
                                     merge_seconds(self.listener, group, layout.num_physical))
        # A batch that carried a migration teaches the cost model (its excess time), not
        # the time fit (Controller.observe_batch).
        self._controller.observe_batch(merge_s, m, nbytes if merged.moves else 0.0)
        self._last = m
        self._num_keys, self._state_bytes = m.num_keys, m.state_bytes
        return m

    @property
    def _rebasing(self) -> bool:
        """Every batch commits and the bridge can base the state on the commit's files:
        lineage then never reaches past the previous batch, so no truncation is needed
        and a migration's carried state need not be cut (both stay recomputable)."""
        return (self._store is not None and self.checkpoint_every == 1
                and self._state.ops.jvm)

    def _decide(self, m: Measurement) -> Decision | None:
        """The planned layout when λ > 1 + θ, the plan improves λ and (payoff trigger) the
        predicted saving exceeds the cost; else None. The judgement is kept for history."""
        self._judgement = self._controller.judge(m, None)
        self._plan_seconds = 0.0
        if not self._controller.should_rebalance(m):
            return None
        decision = self._controller.plan(m, self._state.layout)
        self._plan_seconds = decision.seconds
        if decision.layout == self._state.layout:
            decision = None
        self._judgement = self._controller.judge(m, decision)
        return decision if self._judgement.migrate else None

    def _complete(self, keys_moved: int, bytes_moved: float, frames: int,
                  seconds: float) -> MigrationRecord:
        """Record the pending migration as done: its :class:`MigrationRecord`, and the
        moved keys and bytes in the history row of the batch that decided it."""
        p, seq = self._pending, self._pending_seq
        old = self._state.layout
        rec = MigrationRecord(seq, "imbalance", old.num_partitions,
                              p.layout.num_partitions, keys_moved, bytes_moved,
                              p.planned_bytes, seconds, p.layout.version, frames)
        self.migrations.append(rec)
        for i in range(len(self.history) - 1, -1, -1):
            if self.history[i].seq == seq:
                self.history[i] = dataclasses.replace(
                    self.history[i], keys_moved=keys_moved, bytes_moved=bytes_moved,
                    migration_seconds=seconds)
                break
        report.post_migration(self, rec)
        self._pending, self._pending_seq = None, -1
        return rec

    @report.labelled("settle")
    def _settle(self) -> None:
        """Move a pending migration now, on its own (one job plus one that materialises
        the moved state with its lineage cut): for reads of the state between batches,
        checkpoints and ``scale``."""
        p = self._pending
        if p is None:
            return
        self._state, rec = migrate_state(self._state, p.layout, seq=self._pending_seq,
                                         reason="imbalance", planned_bytes=p.planned_bytes,
                                         candidates=p.candidates, storage_level=self._level,
                                         cut=self._cache.cut)
        self._cache.pin(self._state.rdd)
        self._controller.observe_migration(rec.seconds, rec.bytes_moved)   # its own jobs
        self._complete(rec.keys_moved, rec.bytes_moved, rec.frames_touched, rec.seconds)

    def _record(self, seq: int, batch_id: int | None, m: Measurement,
                decision: Decision | None, t0: float) -> None:
        moving = decision is not None and decision.layout != self._state.layout
        # Provisional until the next batch moves the keys: the plan's moves and bytes.
        planned = None if not moving else MigrationRecord(
            seq, "imbalance", m.loads.size, decision.layout.num_partitions,
            decision.planned_moves, decision.planned_bytes, decision.planned_bytes, 0.0,
            decision.layout.version)
        if moving:
            self._pending, self._pending_seq = decision, seq
        self._seq += 1
        if batch_id is not None:
            self.last_batch_id = batch_id
        after = m.imbalance if not moving else decision.imbalance_after
        self.history.append(batch_record(
            seq, batch_id, m, self.layout, planned, after, self._plan_seconds,
            time.perf_counter() - t0, timed=self.listener is not None,
            judgement=self._judgement))
        report.post_batch(self, m, decision if moving else None)
        if self._store is not None and self._seq % self.checkpoint_every == 0:
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

    # ------------------------------------------------------------------ scaling
    # ------------------------------------------------------------------ durability
    def _snapshot(self) -> Snapshot:
        return Snapshot(self, ("_state", "_seq", "last_batch_id", "_num_keys",
                               "_state_bytes", "_last", "_outputs", "_manifest", "_resumed", "_base_dir",
                               "history", "migrations", "_pending", "_pending_seq",
                               "_judgement", "_plan_seconds"), cache="_cache")

    # ------------------------------------------------------------------ cleanup
    def close(self) -> None:
        """Release every cached RDD of the operator and the lease on checkpoint_dir."""
        if self._lease is not None:
            self._lease.release()
        self._cache.close(self._state.rdd)

    def __repr__(self) -> str:
        return (f"KeyedStateOperator(num_partitions={self.num_partitions}, planner="
                f"{self.planner!r}, theta={self.theta}, window={self.window}, "
                f"batches={self._seq}, version={self.version})")
