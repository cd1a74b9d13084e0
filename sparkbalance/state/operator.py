"""KeyedStateOperator: keyed state across batches, rebalanced by moving only the delta.

State lives in a persisted RDD of *frames* — the entries (``key -> entry``) of one key group
on one partition, as raw bytes (:mod:`~sparkbalance.state.frames`) — placed by the current
layout ``F`` (routing table of Fang et al., or key-group intervals of Ding et al.). Per batch
(Fang et al. §4, Fig. 5):

1. the batch is routed with ``F`` and grouped into one block per partition (its shuffle);
2. ``concat(state, batch)`` (partition ``i`` of both, in the JVM) then a Python merge
   updates the state — narrow on the state (a ``ZippedPartitionsRDD2``; ``union``/
   ``cogroup`` would re-shuffle it in PySpark). Only the groups the batch touches are
   unpickled; the other frames pass through as bytes;
3. the per-key (or per-key-group) costs and sizes of the batch are collected (one small
   job that also materialises the cache) and the controller checks λ > 1 + θ;
4. if so, the planner gives ``F'`` and :func:`~sparkbalance.state.migration.migrate`
   moves only the keys with ``F'(k) != F(k)``: the frames that can hold them are selected
   in the JVM, Δ is shuffled, and the new state is untouched frames + stays + arrivals,
   concatenated per partition (``migration_seconds``); ``F'`` is used from the next batch;
5. optionally a durable checkpoint (state + layout + version + last batch id) is committed.

Lineage is truncated every ``truncate_every`` batches: when the SparkContext has a
checkpoint directory (``sc.setCheckpointDir``, the user's choice: we do not change global
settings) by ``RDD.checkpoint()`` — reliable, survives the loss of an executor; otherwise by
``RDD.localCheckpoint()`` — fast, but a lost executor then loses cached blocks that cannot be
recomputed and the job fails with Spark's "checkpoint block not found" error (no silent
loss); an operator with a ``checkpoint_dir`` is then restarted from its last durable
checkpoint. On clusters where executors come and go, set ``sc.setCheckpointDir``.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from ..routing.base import check_num_partitions
from ..routing.table import RoutingTable
from . import checkpoint as ck
from . import frames as fr
from .blocks import check_pairs, group_block
from .frame_rdds import as_frames, frame_ops
from ..spark import conf
from ..spark.listener import sparkbalance_job_group
from .controller import Controller, Measurement, initial_layout
from .layout import GroupLayout, TableLayout
from .migration import MigrationResult, migrate, summaries
from .store import store_for
from .streaming import already_applied, check_batch_id
from .window import StateFold

__all__ = ["KeyedStateOperator", "BatchRecord", "MigrationRecord", "DEFAULT_TRUNCATE_EVERY"]

#: Batches between lineage truncations: long lineages make task serialisation and
#: recovery slow; 10 keeps them short at one extra job per 10 batches.
DEFAULT_TRUNCATE_EVERY: int = 10


@dataclass(frozen=True)
class BatchRecord:
    """One processed batch (``history`` row)."""

    seq: int
    batch_id: int | None
    imbalance_before: float      # λ of this batch under the layout it was routed with
    imbalance_after: float       # λ of this batch's costs under the layout used next
    keys_moved: int
    bytes_moved: float           # Σ S(k) of the keys whose state moved
    table_size: int              # |R| after the batch (0 for key groups)
    plan_seconds: float
    migration_seconds: float
    batch_seconds: float         # whole process() call, migration included
    rebalanced: bool
    layout_version: int
    num_keys: int
    state_bytes: float
    records: float
    max_load: float
    mean_load: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class MigrationRecord:
    """One migration (rebalancing after a batch, or a ``scale()``)."""

    seq: int
    reason: str                  # "imbalance" or "scale"
    num_partitions_before: int
    num_partitions_after: int
    keys_moved: int
    bytes_moved: float
    planned_bytes: float
    seconds: float
    layout_version: int
    frames_touched: int = -1     # state frames a Python worker read (the rest stayed in the JVM)


def _spark_context(spark: Any) -> Any:
    sc = getattr(spark, "sparkContext", spark)
    if not hasattr(sc, "parallelize"):
        raise TypeError(f"spark={spark!r}; expected a SparkSession or SparkContext")
    return sc


def _check_positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name}={value!r}; expected an int >= 1")
    return int(value)


class KeyedStateOperator:
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
    planner : default ``spark.sparkbalance.planner``, else "mixed". "none" (plain hash,
        never rebalances), "mixed", "mintable", "minmig",
        "mixedbf", "readj" (routing table, Fang et al.) or "ssm", "mtm" (key groups, Ding et al.).
    theta : θ_max, the tolerated imbalance: rebalance when max L / L̄ > 1 + θ (τ for SSM);
        default ``spark.sparkbalance.theta``, else 0.08.
    max_table : A_max, bound on the routing table (routing-table planners; None:
        unbounded); default ``spark.sparkbalance.maxTable``, else 3000.
    window : default ``spark.sparkbalance.window``, else None.
        None = state over all batches; w >= 1 = state of each key over its
        last w batches (Fang et al. §2.1; older contributions expire, see ``state.window``).
        The issue sketch defaulted to 1, which under these semantics makes the state
        per-batch only; we default to the unbounded running state instead.
    checkpoint_dir : directory for durable checkpoints: a local path, or a Hadoop URI
        (``hdfs://...``, ``s3a://...``; a shared file system on a cluster). An existing
        checkpoint there is resumed (and validated) when the operator is created.
    state_size : ``state_size(state) -> bytes`` for S(k); default pickled size.

    Keyword-only: ``beta`` (MinMig/Mixed β), ``num_groups`` (key groups, default 16 per
    partition; for routing tables, G, the frame groups the state is cut into, default
    :data:`~sparkbalance.state.frames.DEFAULT_TABLE_GROUPS`), ``checkpoint_every``
    (batches), ``truncate_every`` (lineage truncation), ``listener`` (a :class:`~sparkbalance.spark.listener.TaskMetricsListener`: costs become
    measured task seconds), ``key_col``/``value_col`` (DataFrame input), ``planner_params``.

    Example
    -------
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
                 planner_params: Mapping[str, Any] | None = None) -> None:
        from pyspark import StorageLevel

        self.sc = _spark_context(spark)
        # Settings not given come from spark.sparkbalance.* like the adapters' (spark.conf);
        # "default" marks max_table/window unset, since None means "unbounded" for both.
        planner = conf.resolve(self.sc, "planner", planner)
        theta = conf.resolve(self.sc, "theta", theta)
        if max_table == "default":
            max_table = conf.resolve(self.sc, "max_table")
        if window == "default":
            window = conf.resolve(self.sc, "window")
        n = check_num_partitions(num_partitions)
        self._fold = StateFold(update, initial, update_values, window, state_size)
        self._controller = Controller(planner, theta, max_table, beta, planner_params)
        self.planner = self._controller.name
        self.theta = self._controller.theta
        self.window = self._fold.window
        self.checkpoint_every = _check_positive_int(checkpoint_every, "checkpoint_every")
        self.truncate_every = _check_positive_int(truncate_every, "truncate_every")
        self.listener = listener
        self.key_col, self.value_col = key_col, value_col
        self._level = StorageLevel.MEMORY_AND_DISK
        self._layout: TableLayout | GroupLayout = initial_layout(self.planner, n, num_groups)
        if isinstance(self._layout, GroupLayout):
            self._groups = self._layout.num_groups
        else:
            self._groups = (fr.DEFAULT_TABLE_GROUPS if num_groups is None
                            else _check_positive_int(num_groups, "num_groups"))
        self._ops = frame_ops(self.sc)
        self._seq = 0
        self.last_batch_id: int | None = None
        self.history: list[BatchRecord] = []
        self.migrations: list[MigrationRecord] = []
        self._num_keys = 0
        self._state_bytes = 0.0
        self._last: Measurement | None = None
        self._to_release: list[Any] = []     # cached RDDs of the previous batch
        self._pinned: Any = None             # last lineage-truncated RDD (kept cached)
        self.checkpoint_dir = checkpoint_dir
        self._store = None if checkpoint_dir is None else store_for(self.sc, checkpoint_dir)
        if self._store is not None:
            self._store.mkdirs()
        self._state = self._empty_state(self._layout.num_physical)
        self._to_release.append(self._state)
        if self._store is not None:
            self._resume(n)

    # ------------------------------------------------------------------ properties
    @property
    def num_partitions(self) -> int:
        """n: partitions the layout routes to."""
        return self._layout.num_partitions

    @property
    def layout(self) -> TableLayout | GroupLayout:
        return self._layout

    @property
    def partition_function(self) -> Any:
        """The current (versioned) partition function F."""
        return self._layout.fn

    @property
    def table(self) -> RoutingTable | None:
        """The routing table (routing-table planners) or None (key groups)."""
        return self._layout.table if isinstance(self._layout, TableLayout) else None

    @property
    def version(self) -> int:
        return self._layout.version

    @property
    def state_rdd(self) -> Any:
        """``(key, state)`` pairs of the current state (lazy; for big states)."""
        return self._state.mapPartitions(
            lambda it: ((k, e[0]) for k, e in fr.entries_of(it)))

    @property
    def blocks_rdd(self) -> Any:
        """One ``{key: entry}`` block per physical partition (entry = ``[state, S(k),
        window segments]``; lazy, decodes every frame)."""
        return self._state.mapPartitions(lambda it: [fr.frames_to_block(it)])

    @property
    def frames_rdd(self) -> Any:
        """The raw state RDD: frames (``bytes``, :mod:`~sparkbalance.state.frames`)."""
        return self._state

    def collect_state(self) -> dict:
        """``{key: state}`` on the driver (tests and small states). A key stored twice is
        a ``RuntimeError`` (a broken layout), never silently merged."""
        out: dict = {}
        for k, e in self._state.mapPartitions(fr.entries_of).collect():
            if k in out:
                raise RuntimeError(f"key {k!r} is stored twice in the state; the state layout "
                                   "is inconsistent")
            out[k] = e[0]
        return out

    # ------------------------------------------------------------------ input
    def _pairs(self, batch: Any) -> Any:
        from pyspark import RDD
        if isinstance(batch, RDD):
            rdd = batch
        elif hasattr(batch, "columns") and hasattr(batch, "select"):
            cols = list(batch.columns)
            if self.key_col in cols and self.value_col in cols:
                sel = batch.select(self.key_col, self.value_col)
            elif len(cols) == 2:
                sel = batch
            else:
                raise ValueError(f"DataFrame has columns {cols}; expected columns "
                                 f"{self.key_col!r} and {self.value_col!r} (key_col=, "
                                 "value_col=) or exactly two columns (key, value)")
            rdd = sel.rdd.map(lambda r: (r[0], r[1]))
        else:
            raise TypeError(f"batch is a {type(batch).__name__}; expected an RDD of (key, "
                            "value) pairs or a DataFrame with key/value columns")
        return rdd.mapPartitions(check_pairs)

    def _empty_state(self, num_physical: int) -> Any:
        return self._ops.empty(num_physical).persist(self._level)

    # ------------------------------------------------------------------ one batch
    def process(self, batch: Any, batch_id: int | None = None) -> Any:
        """Apply one batch; return its outputs as an RDD of ``(key, output)``.

        The outputs RDD is cached until the next batch; consume it before the next call
        for best performance (later it is recomputed from lineage, with the same result).
        """
        t0 = time.perf_counter()
        if batch_id is not None:
            batch_id = check_batch_id(batch_id)
        layout, seq = self._layout, self._seq
        P = layout.num_physical
        merged = self.merge_rdd(batch)
        merged.persist(self._level)
        truncated = (seq + 1) % self.truncate_every == 0
        if truncated:
            self._truncate(merged)
        group = f"sparkbalance-state-{id(self)}-{seq}"
        ops = self._ops
        with sparkbalance_job_group(self.sc, group, f"sparkbalance keyed state batch {seq}"):
            stats = ops.select(merged, fr.TAG_STATS).map(fr.frame_payload).collect()
        if len(stats) != P:
            raise RuntimeError(f"merge produced statistics of {len(stats)} partitions; "
                               f"expected {P}")
        release, self._to_release = self._to_release, []
        if truncated:
            release.append(self._pinned)
            self._pinned = merged
        else:
            self._to_release.append(merged)
        self._state = ops.select(merged, fr.TAG_STATE)
        m = self._controller.measure(stats, layout, self._partition_seconds(group, P))
        self._last = m
        self._num_keys, self._state_bytes = m.num_keys, m.state_bytes
        plan_s = mig_s = 0.0
        keys_moved, bytes_moved, after, rebalanced = 0, 0.0, m.imbalance, False
        if self._controller.should_rebalance(m):
            decision = self._controller.plan(m, layout)
            plan_s = decision.seconds
            if decision.layout != layout and decision.imbalance_after < m.imbalance - 1e-12:
                t1 = time.perf_counter()
                res = self._migrate(decision.layout, "imbalance", decision.planned_bytes,
                                   decision.candidates)
                mig_s = time.perf_counter() - t1
                keys_moved, bytes_moved = res.keys_moved, res.bytes_moved
                after, rebalanced = decision.imbalance_after, True
        for rdd in release:
            if rdd is not None and rdd is not self._pinned:
                rdd.unpersist()
        self._seq += 1
        if batch_id is not None:
            self.last_batch_id = batch_id
        if self._store is not None and self._seq % self.checkpoint_every == 0:
            self.save_checkpoint()
        active = m.loads[m.active]
        self.history.append(BatchRecord(
            seq=seq, batch_id=batch_id, imbalance_before=m.imbalance, imbalance_after=after,
            keys_moved=keys_moved, bytes_moved=bytes_moved,
            table_size=self._layout.table_size, plan_seconds=plan_s,
            migration_seconds=mig_s, batch_seconds=time.perf_counter() - t0,
            rebalanced=rebalanced, layout_version=self._layout.version,
            num_keys=self._num_keys, state_bytes=self._state_bytes,
            records=float(m.cost.sum()) if self.listener is None else float("nan"),
            max_load=float(active.max()) if active.size else 0.0,
            mean_load=float(active.mean()) if active.size else 0.0))
        return ops.select(merged, fr.TAG_OUTPUTS).flatMap(fr.frame_payload)

    def merge_rdd(self, batch: Any) -> Any:
        """The lazy merge of ``batch`` into the state (no job runs): per partition the new
        state frames, one outputs frame and one statistics frame. ``process`` persists and
        runs it; exposed to inspect the lineage (``merge_rdd(b)._jrdd.rdd().toDebugString()``:
        a ``ZippedPartitionsRDD2`` whose state side is narrow down to the cached frames).
        """
        layout = self._layout
        fn, P = layout.fn, layout.num_physical
        pairs = self._pairs(batch)
        batch_frames = as_frames(pairs.partitionBy(P, fn).mapPartitions(
            lambda it: [fr.data_frame(fr.TAG_BATCH, group_block(it)[0])],
            preservesPartitioning=True))
        fold, seq, G = self._fold, self._seq, self._groups
        per_group = isinstance(layout, GroupLayout)
        # Per-key statistics of the batch's keys and the table's: a key with no records in
        # the batch adds no load, and only a table key can move without adding load, so the
        # planner needs no other key (and a big state costs no per-key driver work).
        watch = None if per_group else frozenset(layout.table.routes)
        return self._ops.map_frames(
            self._ops.concat(self._state, batch_frames),
            lambda pid, it: fr.merge_partition(pid, it, fold, seq, G, per_group, watch))

    def foreach_batch(self, df: Any, batch_id: int) -> Any:
        """``writeStream.foreachBatch`` entry point: exactly-once over restarts.

        A batch id at or below the last applied one (recorded atomically in the
        checkpoint) is a replay and is skipped (returns None); otherwise the outputs RDD.
        """
        batch_id = check_batch_id(batch_id)
        if already_applied(batch_id, self.last_batch_id):
            return None
        return self.process(df, batch_id=batch_id)

    # ------------------------------------------------------------------ rebalancing
    def _migrate(self, new_layout: TableLayout | GroupLayout, reason: str,
                 planned_bytes: float, candidates: frozenset | None = None
                 ) -> MigrationResult:
        t0 = time.perf_counter()
        old = self._layout
        res = migrate(self._ops, self._state, old, new_layout, self._groups, self._level,
                      candidates=candidates)
        self._to_release.extend(res.cached)
        self._state = res.rdd                      # lazy narrow view: stays ∪ arrivals
        self._layout = new_layout                  # switch only after the move
        self.migrations.append(MigrationRecord(
            self._seq, reason, old.num_partitions, new_layout.num_partitions, res.keys_moved,
            res.bytes_moved, planned_bytes, time.perf_counter() - t0, new_layout.version,
            res.frames_touched))
        return res

    def scale(self, num_partitions: int) -> MigrationRecord:
        """Change the number of partitions to ``num_partitions``, moving only what must move.

        Key groups (SSM/MTM): the optimal interval migration of Ding et al. (new nodes take
        over sub-intervals; removed nodes hand theirs over). Routing tables: h(k) = hash
        mod n changes with n, so most keys move (that is what key groups avoid). Shrinking
        keeps the emptied physical partitions as empty blocks (see ``state.layout``).
        """
        n_new = check_num_partitions(num_partitions)
        m = self._last if self._last is not None else self._measure_state()
        if isinstance(self._layout, GroupLayout):
            m = self._measure_state(cost=m.cost)
        decision = self._controller.plan(m, self._layout, n_new)
        if decision.layout == self._layout:
            rec = MigrationRecord(self._seq, "scale", self.num_partitions, n_new, 0, 0.0, 0.0,
                                  decision.seconds, self._layout.version)
            self.migrations.append(rec)
            return rec
        self._migrate(decision.layout, "scale", decision.planned_bytes)
        self._last = None
        if self._store is not None:
            self.save_checkpoint()
        return self.migrations[-1]

    def _measure_state(self, cost: np.ndarray | None = None) -> Measurement:
        """Sizes of the current state (cost: the given per-group cost, else zero)."""
        layout = self._layout
        G, per_group = self._groups, isinstance(layout, GroupLayout)
        stats = self._state.mapPartitionsWithIndex(
            lambda pid, it: [fr.frames_stats(pid, it, G, per_group)]).collect()
        m = self._controller.measure(stats, layout)
        if cost is not None and isinstance(layout, GroupLayout):
            m = Measurement(m.loads, m.active, m.imbalance, None, np.asarray(cost), m.memory,
                            None, m.num_keys, m.state_bytes)
        return m

    def _partition_seconds(self, group: str, P: int) -> np.ndarray | None:
        """Task seconds per partition of the merge stage, from the attached listener."""
        lst = self.listener
        if lst is None:
            return None
        try:
            tasks = [t for t in lst.tasks(successful_only=True) if t.job_group == group]
        except Exception:  # noqa: BLE001 - a broken listener must not break the batch
            return None
        if not tasks:
            return None
        last_stage = max(t.stage_id for t in tasks)
        secs = np.zeros(P)
        for t in tasks:
            if t.stage_id == last_stage and 0 <= t.partition_id < P:
                secs[t.partition_id] = t.run_time_ms / 1000.0
        return secs if secs.sum() > 0 else None

    def _truncate(self, rdd: Any) -> None:
        if self.sc.getCheckpointDir() is not None:
            rdd.checkpoint()          # reliable: survives executor loss
        else:
            rdd.localCheckpoint()     # fast; cached blocks are the only copy

    # ------------------------------------------------------------------ durability
    def save_checkpoint(self) -> None:
        """Commit state + layout + version + last batch id atomically to checkpoint_dir."""
        d = self._store
        if d is None:
            raise ValueError("checkpoint_dir=None; give the operator a checkpoint_dir")
        seq = self._seq
        state_dir = f"state-{seq:08d}"
        if d.exists(state_dir):
            d.remove(state_dir)
        (self._state.mapPartitionsWithIndex(lambda pid, it: [(pid, b) for b in it])
         .saveAsPickleFile(d.uri(state_dir)))
        layout_file, sha = ck.write_layout(d, seq, self._layout)
        man = ck.Manifest(seq=seq, last_batch_id=self.last_batch_id,
                          num_partitions=self.num_partitions,
                          num_physical=self._layout.num_physical, planner=self.planner,
                          window=self.window, layout_kind=self._layout.kind,
                          layout_version=self._layout.version, layout_file=layout_file,
                          layout_sha256=sha, state_dir=state_dir, num_keys=self._num_keys,
                          state_bytes=self._state_bytes, num_groups=self._groups)
        ck.write_manifest(d, man)
        ck.clean_stale(d, man)

    def _resume(self, num_partitions: int) -> None:
        d = self._store
        man = ck.read_manifest(d)
        if man is None:
            return
        ck.check_compatible(d, man, {"planner": self.planner, "window": self.window,
                                     "num_partitions": num_partitions})
        layout = ck.read_layout(d, man)
        if (layout.num_physical != man.num_physical
                or layout.num_partitions != man.num_partitions):
            raise ck.CheckpointError(f"{d.display(man.layout_file)}: layout has "
                                     f"{layout.num_partitions}"
                                     f"/{layout.num_physical} partitions; the manifest says "
                                     f"{man.num_partitions}/{man.num_physical}")
        P, G = man.num_physical, man.num_groups
        if isinstance(layout, GroupLayout) and layout.num_groups != G:
            raise ck.CheckpointError(f"{d.display(ck.MANIFEST)}: frames of {G} groups; the "
                                     f"layout {d.display(man.layout_file)} has "
                                     f"{layout.num_groups}")
        path = d.display(man.state_dir)
        fn = layout.fn

        def _check(pid: int, it: Iterable) -> Iterable:
            for p, f in it:
                if p != pid:
                    raise ValueError(f"a frame of partition {p} read as partition {pid}")
                fr.check_state_frame(f, pid, G, fn)
                yield f

        try:
            rdd = as_frames(self.sc.pickleFile(d.uri(man.state_dir)).partitionBy(P, lambda pid: pid)
                            .mapPartitionsWithIndex(_check, preservesPartitioning=True))
            rdd.persist(self._level)
            rows = summaries(rdd)
        except Exception as e:  # noqa: BLE001 - Py4J/Python errors: report the file
            raise ck.CheckpointError(f"{path}: cannot load the checkpointed state "
                                     f"({str(e).strip().splitlines()[-1][:300]})") from e
        num_keys = sum(r[1] for r in rows)
        if num_keys != man.num_keys:
            rdd.unpersist()
            raise ck.CheckpointError(f"{path}: holds {num_keys} keys; the manifest "
                                     f"{d.display(ck.MANIFEST)} records {man.num_keys}")
        self._state.unpersist()
        self._state = rdd
        self._to_release = [rdd]
        self._layout = layout
        self._groups = G
        self._seq = man.seq
        self.last_batch_id = man.last_batch_id
        self._num_keys = num_keys
        self._state_bytes = float(sum(r[2] for r in rows))

    # ------------------------------------------------------------------ cleanup
    def close(self) -> None:
        """Release every cached RDD of the operator."""
        for rdd in self._to_release + [self._pinned, self._state]:
            if rdd is not None:
                try:
                    rdd.unpersist()
                except Exception:  # noqa: BLE001
                    pass
        self._to_release, self._pinned = [], None

    def __repr__(self) -> str:
        return (f"KeyedStateOperator(num_partitions={self.num_partitions}, planner="
                f"{self.planner!r}, theta={self.theta}, window={self.window}, "
                f"batches={self._seq}, version={self.version})")
