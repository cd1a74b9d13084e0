"""Demo: keyed state over a shifting Zipf stream, rebalanced by moving only the delta.

The stream follows seed 000 §5: Zipf key frequencies whose hot keys swap between
partitions every interval (:func:`sparkbalance.planning.synthetic.fluctuate`); an interval
may span several batches (``batches_per_interval``: the key distribution of a real stream
persists for a while, and a controller that reacts after a batch can only help the
batches that follow in the same interval). The same batches run through
:class:`~sparkbalance.state.operator.KeyedStateOperator` under "none" (plain hash),
"mixed", "mintable" (routing tables, seed 000) and "ssm" (key groups, seed 003), and
optionally through "plain" (:class:`PlainStateStream`: what plain Spark does, the whole
state cogrouped with every batch, as ``DStream.updateStateByKey``), with a sliding window
of ``w`` batches so S(k) grows with the key's frequency (the paper's memory model).

Workload. Per record the update waits ``io_us`` µs (an I/O-bound update, e.g. a lookup in
an external store) and spins ``work`` loop steps; the session runs ``local[n]`` with
n = partitions, so the n merge tasks of a batch wait side by side even on a 2-core machine
and the batch time is set by the slowest partition, as on n cores. (With CPU-bound work and
n > cores the skew never sets the batch time: the cores are busy either way.)

Runs are interleaved: batch t of every planner runs before batch t+1 of any, in a rotating
order, so background load on a shared machine hits every planner alike.

``python -m sparkbalance demo --part stream [--quick]``
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

__all__ = ["main", "run_streams", "summarise", "format_table", "make_batches",
           "shifting_batches", "batch_loads", "PlainStateStream", "PlainRecord",
           "BatchProfiler", "profile_summary", "format_profile", "merge_after_migration",
           "stream_session", "warm_up",
           "parse_spec",
           "DEMO_PLANNERS", "PLAIN", "busy_count"]

DEMO_PLANNERS: tuple[str, ...] = ("none", "mixed", "mintable", "ssm")

#: Name of the plain-Spark baseline in run_streams / the tables.
PLAIN = "plain"

#: Batches excluded from the batch-time figures (Python workers start, caches fill).
WARMUP_BATCHES = 1


#: Simulated I/O is slept in chunks of at least this many seconds: one ``time.sleep`` per
#: key would add the OS's wake-up latency (~0.06-0.5 ms, more under load) per call, a cost
#: per *key* rather than per record that flattens the skew the benchmark is about.
SLEEP_QUANTUM_S = 0.002


def busy_count(work: int = 200, io_us: float = 0.0) -> Any:
    """``update_values`` of the demo: count records, with ``work`` loop steps of CPU per
    record (200 ≈ 10 µs) and ``io_us`` µs of waiting per record (an I/O-bound update, e.g.
    a lookup in an external store), so that a partition's task time follows its record
    count. Waiting, unlike CPU work, lets n tasks run side by side on a 2-core machine, so
    the batch time shows the slowest partition as it would on n cores. The wait is owed
    per record and slept in chunks (:data:`SLEEP_QUANTUM_S`), oversleeping credited, so a
    task waits ``io_us`` × its records give or take one chunk.

    Example
    -------
    >>> busy_count(work=1)(5, [1, 1])
    (7, [7])
    """
    wait = io_us * 1e-6
    debt = [0.0]          # seconds owed by this deserialised copy (one per task)

    def update_values(state: int, values: list) -> tuple[int, list]:
        acc = 0
        for v in values:
            for i in range(work):
                acc ^= (v * 31 + i) & 0xFF
        if wait:
            debt[0] += wait * len(values)
            if debt[0] >= SLEEP_QUANTUM_S:
                t0 = time.perf_counter()
                time.sleep(debt[0])
                debt[0] -= time.perf_counter() - t0
        new = state + len(values)
        return new, [new]
    return update_values


def _progress(it: Any, total: int, desc: str) -> Any:
    try:
        from tqdm.auto import tqdm
    except ImportError:  # optional
        return it
    return tqdm(it, total=total, desc=desc, leave=False, file=sys.stderr)


# --------------------------------------------------------------------------- workload
def shifting_batches(num_keys: int, num_partitions: int, num_batches: int, records: int, *,
                     z: float = 1.0, f: float = 1.0, seed: int = 0,
                     batches_per_interval: int = 1) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(keys, counts)`` per batch of a shifting Zipf stream (seed 000 §5).

    Interval 0 draws frequencies ∝ rank^-z; each later interval swaps frequencies of
    random key pairs homed on different partitions until a load share ``f``·θ_ref moved
    (:func:`~sparkbalance.planning.synthetic.fluctuate`). Every batch of an interval is a
    fresh multinomial sample of ``records`` records from that interval's frequencies.
    The demo's name for :func:`sparkbalance.state.shifting.shifting_zipf_counts`.

    Example
    -------
    >>> it = shifting_batches(50, 4, 4, 500, seed=1, batches_per_interval=2)
    >>> [int(c.sum()) for _, c in it]
    [500, 500, 500, 500]
    """
    from ..state.shifting import shifting_zipf_counts
    return shifting_zipf_counts(num_keys, num_partitions, num_batches, z=z,
                                records_per_batch=records, f=f, seed=seed,
                                batches_per_interval=batches_per_interval)


def make_batches(num_keys: int, num_partitions: int, num_batches: int, records: int,
                 z: float, f: float, seed: int, batches_per_interval: int = 1) -> list[list]:
    """The batches of :func:`shifting_batches` as lists of ``(key, 1)`` records."""
    from ..state.shifting import batch_records
    return [batch_records(k, c, seed=seed + t) for t, (k, c) in enumerate(
        shifting_batches(num_keys, num_partitions, num_batches, records, z=z, f=f, seed=seed,
                         batches_per_interval=batches_per_interval))]


def batch_loads(batch: Sequence[tuple], num_partitions: int) -> np.ndarray:
    """Records per partition of ``batch`` under plain hashing (``stable_hash(k) % n``).

    Example
    -------
    >>> int(batch_loads([(1, 1), (1, 1), (2, 1)], 4).sum())
    3
    """
    from ..routing.hash import home_partitions
    if not batch:
        return np.zeros(num_partitions)
    keys, counts = np.unique(np.array([k for k, _ in batch]), return_counts=True)
    return np.bincount(home_partitions(keys, num_partitions), weights=counts,
                       minlength=num_partitions)


# --------------------------------------------------------------------------- plain Spark
@dataclass(frozen=True)
class PlainRecord:
    """One batch of :class:`PlainStateStream` (the fields ``summarise`` reads)."""

    seq: int
    batch_seconds: float
    imbalance_before: float
    imbalance_after: float
    keys_moved: int            # keys of the state re-shuffled by the cogroup
    bytes_moved: float         # Σ S(k) of the state re-shuffled by the cogroup
    state_bytes: float
    num_keys: int
    plan_seconds: float = 0.0
    migration_seconds: float = 0.0
    rebalanced: bool = False
    table_size: int = 0


class PlainStateStream:
    """Keyed window state the plain-Spark way: ``state.cogroup(batch)`` every batch.

    What ``DStream.updateStateByKey`` does in PySpark (``prev.cogroup(batch, n)``, then a
    per-key update; the new state is persisted): PySpark's ``cogroup`` is a union plus a
    shuffle, so the *whole* state is shuffled with every batch, and keys stay where
    ``portable_hash(k) % n`` puts them. Same per-key work as the operator (the same
    :class:`~sparkbalance.state.window.StateFold`, window replay included), so the
    difference in batch time is the data flow only. Lineage is truncated every
    ``truncate_every`` batches with ``localCheckpoint`` (as the operator does by default).

    Example
    -------
    >>> ps = PlainStateStream(spark, 4, busy_count(0), initial=0, window=3)  # doctest: +SKIP
    >>> ps.process(sc.parallelize([(1, 1), (1, 1)])).collect()           # doctest: +SKIP
    [(1, 2)]
    """

    def __init__(self, spark: Any, num_partitions: int, update_values: Any, initial: Any = 0,
                 window: int | None = None, truncate_every: int = 10) -> None:
        from ..state.window import StateFold
        self.sc = getattr(spark, "sparkContext", spark)
        if num_partitions < 1:
            raise ValueError(f"num_partitions={num_partitions}; expected >= 1")
        self.num_partitions = num_partitions
        self._fold = StateFold(update_values=update_values, initial=initial, window=window)
        self.truncate_every = truncate_every
        self._state: Any = None
        self._seq = 0
        self._state_bytes, self._num_keys = 0.0, 0
        self.history: list[PlainRecord] = []

    def process(self, batch: Any, batch_id: int | None = None) -> Any:
        """Apply one RDD of ``(key, value)``; return ``(key, state)`` of the new state."""
        from pyspark import StorageLevel

        from ..stats.workload import imbalance
        t0 = time.perf_counter()
        fold, seq, n = self._fold, self._seq, self.num_partitions
        prev = self._state if self._state is not None else self.sc.emptyRDD()

        def _update(it: Any) -> Any:
            for k, (entries, values) in it:
                entry = next(iter(entries), None)
                values = list(values)
                if values:
                    entry, _ = fold.apply(entry, values, seq)
                elif entry is not None:
                    entry = fold.expire(entry, seq)
                if entry is not None:
                    yield k, entry

        new = prev.cogroup(batch, n).mapPartitions(_update, preservesPartitioning=True)
        new.persist(StorageLevel.MEMORY_AND_DISK)
        if (seq + 1) % self.truncate_every == 0:
            new.localCheckpoint()
        stats = new.mapPartitions(
            lambda it: [_plain_stats(it, seq)]).collect()      # the batch's one job
        loads = np.array([s[2] for s in stats], dtype=float)
        if self._state is not None:
            self._state.unpersist()
        moved_keys, moved_bytes = self._num_keys, self._state_bytes
        self._state = new
        self._num_keys = int(sum(s[0] for s in stats))
        self._state_bytes = float(sum(s[1] for s in stats))
        self._seq += 1
        # λ = max L / L̄ (stats); nan rather than its idle 1.0 for a batch without records
        imb = imbalance(loads) if loads.sum() > 0 else float("nan")
        self.history.append(PlainRecord(seq, time.perf_counter() - t0, imb, imb, moved_keys,
                                        moved_bytes, self._state_bytes, self._num_keys))
        return new.mapValues(lambda e: e[0])

    def collect_state(self) -> dict:
        """``{key: state}`` on the driver (tests and small states)."""
        return {} if self._state is None else {k: e[0] for k, e in self._state.collect()}

    def close(self) -> None:
        if self._state is not None:
            self._state.unpersist()
        self._state = None


def _plain_stats(it: Any, seq: int) -> tuple[int, float, int]:
    """(keys, Σ S(k), records of batch ``seq``) of one partition of the plain state (the
    records are read from the window's last segment; 0 for an unbounded window)."""
    keys, nbytes, recs = 0, 0.0, 0
    for _, e in it:
        keys += 1
        nbytes += e[1]
        segs = e[2]
        if segs and segs[-1][0] == seq:
            recs += len(segs[-1][1])
    return keys, nbytes, recs


# --------------------------------------------------------------------------- profiling
class BatchProfiler:
    """Which Spark jobs and stages each batch ran, and where its wall time went.

    Records stages (submission/completion) and tasks through
    :func:`sparkbalance.spark.listener.open_listener` (the JVM recorder when the bridge
    jar is on the classpath, else the py4j listener; a few dozen events per batch either
    way) and jobs through ``sc.statusTracker()``. Each batch is a time window on the
    driver: ``with prof.batch(name, t): op.process(...)``; :meth:`rows` attributes the
    stages submitted inside the window to it (batches run one at a time on the driver).

    Example
    -------
    >>> prof = BatchProfiler(spark)                           # doctest: +SKIP
    >>> with prof.batch("mixed", 0):                          # doctest: +SKIP
    ...     op.process(rdd)
    >>> prof.rows()[0]["jobs"]                                # doctest: +SKIP
    1
    """

    def __init__(self, spark: Any) -> None:
        from ..spark.listener import open_listener
        self.sc = getattr(spark, "sparkContext", spark)
        self._lst = open_listener(spark)
        self._lst.attach()
        self.kind = self._lst.kind
        self._windows: list[tuple[str, int, float, float]] = []

    @contextlib.contextmanager
    def batch(self, name: str, seq: int) -> Iterator[None]:
        from ..spark.listener import sparkbalance_job_group
        with sparkbalance_job_group(self.sc, f"sbprof-{name}-{seq}"):
            t0 = time.time()
            try:
                yield
            finally:
                self._windows.append((name, seq, t0 * 1e3, time.time() * 1e3))

    def rows(self) -> list[dict]:
        """One dict per profiled batch: jobs, stages and seconds by kind.

        Keys: ``name, seq, wall_s, jobs, stages, first_job_s`` (the batch's first job:
        routing of the batch + merge), ``map_s``/``merge_s`` (its shuffle-map and result
        stage walls), ``extra_jobs``/``extra_s`` (later jobs: migration, recount),
        ``in_stages_s`` (union of stage walls), ``outside_s`` (wall minus that: driver
        work, planning, job submission, py4j), ``critical_s`` (Σ over stages of the
        slowest task: the straggler-bound time), ``stage_list``.
        """
        stages = [s for s in self._lst.stages() if s.submission_time_ms is not None]
        tasks = self._lst.tasks(successful_only=True)
        slowest: dict[int, float] = {}
        for t in tasks:
            slowest[t.stage_id] = max(slowest.get(t.stage_id, 0.0), t.duration_ms / 1e3)
        tracker = self.sc.statusTracker()
        job_of: dict[int, int] = {}
        for g in {s.job_group for s in stages if s.job_group}:
            for j in tracker.getJobIdsForGroup(g):
                info = tracker.getJobInfo(j)
                if info is not None:
                    for sid in list(info.stageIds):
                        job_of[int(sid)] = int(j)
        out = []
        for name, seq, a, b in self._windows:
            mine = sorted((s for s in stages if a <= s.submission_time_ms <= b),
                          key=lambda s: s.submission_time_ms)
            jobs: dict[int, list] = {}
            for s in mine:
                jobs.setdefault(job_of.get(s.stage_id, -s.stage_id), []).append(s)
            order = sorted(jobs, key=lambda j: jobs[j][0].submission_time_ms)
            walls = {s.stage_id: _stage_wall(s, b) for s in mine}
            first = jobs[order[0]] if order else []
            extra = [s for j in order[1:] for s in jobs[j]]
            in_stages = _union(mine, b)
            out.append({
                "name": name, "seq": seq, "wall_s": (b - a) / 1e3, "jobs": len(order),
                "stages": len(mine),
                "first_job_s": _span(first, b), "map_s": sum(walls[s.stage_id]
                                                             for s in first[:-1]),
                "merge_s": walls[first[-1].stage_id] if first else 0.0,
                "extra_jobs": max(0, len(order) - 1), "extra_s": _span(extra, b),
                "in_stages_s": in_stages, "outside_s": (b - a) / 1e3 - in_stages,
                "critical_s": sum(slowest.get(s.stage_id, 0.0) for s in mine),
                "stage_list": [(s.stage_id, s.name.split(" at ")[0], s.num_tasks,
                                round(walls[s.stage_id], 3),
                                round(slowest.get(s.stage_id, 0.0), 3)) for s in mine],
            })
        return out

    def close(self) -> None:
        self._lst.detach()


def _done_ms(s: Any, end_ms: float) -> float:
    """Completion time of stage ``s``, or ``end_ms`` (the batch's end) while it runs."""
    return s.completion_time_ms if s.completion_time_ms is not None else end_ms


def _stage_wall(s: Any, end_ms: float) -> float:
    return max(0.0, (_done_ms(s, end_ms) - s.submission_time_ms) / 1e3)


def _span(stages: list, end_ms: float) -> float:
    """Wall seconds from the first submission to the last completion of ``stages``."""
    if not stages:
        return 0.0
    a = min(s.submission_time_ms for s in stages)
    b = max(_done_ms(s, end_ms) for s in stages)
    return max(0.0, (b - a) / 1e3)


def _union(stages: list, end_ms: float) -> float:
    """Wall seconds covered by at least one of ``stages`` (they may overlap)."""
    iv = sorted((s.submission_time_ms, _done_ms(s, end_ms)) for s in stages)
    total, cur_a, cur_b = 0.0, None, None
    for a, b in iv:
        if cur_b is None or a > cur_b:
            if cur_b is not None:
                total += cur_b - cur_a
            cur_a, cur_b = a, b
        else:
            cur_b = max(cur_b, b)
    if cur_b is not None:
        total += cur_b - cur_a
    return total / 1e3


def profile_summary(rows: list[dict], history: dict[str, list], skip: int = WARMUP_BATCHES
                    ) -> list[dict]:
    """Per planner and batch kind ("steady": no migration; "migrating"): means of the
    profiled seconds, jobs and stages per batch."""
    migrated = {(name, r.seq): bool(r.rebalanced) for name, h in history.items() for r in h}
    out = []
    for name in history:
        mine = [r for r in rows if r["name"] == name and r["seq"] >= skip]
        for kind in ("steady", "migrating"):
            sel = [r for r in mine if migrated.get((name, r["seq"]), False) == (kind != "steady")]
            if not sel:
                continue
            row = {"planner": name, "kind": kind, "batches": len(sel)}
            for f in ("wall_s", "jobs", "stages", "map_s", "merge_s", "extra_jobs", "extra_s",
                      "outside_s", "critical_s"):
                row[f] = float(np.mean([r[f] for r in sel]))
            out.append(row)
    return out


def merge_after_migration(rows: list[dict], history: dict[str, list],
                          skip: int = WARMUP_BATCHES) -> dict[str, tuple[float, float, int]]:
    """Per planner: mean merge-stage seconds of batches right after a migration, of the
    other batches, and the number of the former (the merge after a migration also drops
    the keys that left and reads the arrivals: its extra cost shows here)."""
    migrated = {(name, r.seq) for name, h in history.items() for r in h if r.rebalanced}
    out = {}
    for name in history:
        mine = [r for r in rows if r["name"] == name and r["seq"] >= skip]
        after = [r["merge_s"] for r in mine if (name, r["seq"] - 1) in migrated]
        other = [r["merge_s"] for r in mine if (name, r["seq"] - 1) not in migrated]
        out[name] = (float(np.mean(after)) if after else float("nan"),
                     float(np.mean(other)) if other else float("nan"), len(after))
    return out


def format_profile(rows: list[dict]) -> str:
    head = (f"{'planner':>9} {'batches':>12} {'wall s':>7} {'jobs':>5} {'stages':>6} "
            f"{'route s':>7} {'merge s':>7} {'+jobs s':>7} {'driver s':>8} {'critical':>8}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['planner']:>9} {r['kind']:>9} {r['batches']:2d} {r['wall_s']:7.2f} "
                     f"{r['jobs']:5.1f} {r['stages']:6.1f} {r['map_s']:7.2f} "
                     f"{r['merge_s']:7.2f} {r['extra_s']:7.2f} {r['outside_s']:8.2f} "
                     f"{r['critical_s']:8.2f}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- runs
def stream_session(num_partitions: int, app: str = "sparkbalance-stream") -> Any:
    """A ``local[n]`` session with n = ``num_partitions`` task slots (see module doc),
    with the JVM bridge jar when it is built."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from ..spark.jvm import session_builder_with_bridge
    # the bridge jar (when built) gives the operator its JVM frame selection and the
    # profiler its JVM task recorder; it only takes effect on the process's first JVM
    spark = session_builder_with_bridge(
        SparkSession.builder.master(f"local[{num_partitions}]").appName(app)
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.ui.enabled", "false")).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _warm_worker(it: Any) -> list:
    """Import what the state tasks use (in a Python worker; see :func:`warm_up`)."""
    import importlib
    for mod in ("numpy", "sparkbalance.hashing", "sparkbalance.routing.table",
                "sparkbalance.routing.keygroups", "sparkbalance.state.window",
                "sparkbalance.state.blocks", "sparkbalance.state.operator"):
        try:
            importlib.import_module(mod)
        except ImportError:  # a module the state no longer has: nothing to warm
            pass
    return [sum(1 for _ in it)]


def warm_up(spark: Any, num_partitions: int) -> None:
    """Start the ``num_partitions`` Python workers and import the state code in them, so
    the first measured batches do not pay for it (one tiny job per call)."""
    sc = spark.sparkContext
    sc.parallelize(range(4 * num_partitions), num_partitions).mapPartitions(
        _warm_worker).collect()


def parse_spec(spec: str, theta: float) -> tuple[str, float]:
    """``"mixed"`` -> ("mixed", theta); ``"mixed@0.2"`` -> ("mixed", 0.2): a planner with
    its own θ_max, so one run can compare trigger thresholds side by side.

    Example
    -------
    >>> parse_spec("ssm@0.2", 0.08), parse_spec("none", 0.08)
    (('ssm', 0.2), ('none', 0.08))
    """
    name, sep, th = spec.partition("@")
    if not sep:
        return name, theta
    try:
        return name, float(th)
    except ValueError:
        raise ValueError(f"planner spec {spec!r}; expected NAME or NAME@THETA "
                         "(e.g. mixed@0.2)") from None


def _runner(spark: Any, spec: str, num_partitions: int, theta: float, window: int | None,
            work: int, io_us: float, **kw: Any) -> Any:
    planner, theta = parse_spec(spec, theta)
    if planner == PLAIN:
        return PlainStateStream(spark, num_partitions, busy_count(work, io_us), initial=0,
                                window=window)
    from ..state.operator import KeyedStateOperator
    return KeyedStateOperator(spark, num_partitions, update_values=busy_count(work, io_us),
                              initial=0, planner=planner, theta=theta, window=window, **kw)


def run_streams(spark: Any, planners: Sequence[str], batches: Sequence[list], *,
                num_partitions: int, theta: float = 0.08, window: int | None = 3,
                progress: bool = True, work: int = 200, io_us: float = 0.0,
                profiler: BatchProfiler | None = None, **kw: Any) -> dict[str, list]:
    """Run the batches through one fresh operator per planner, interleaved batch by batch
    (rotating the order), and return ``{planner: history}``. ``"plain"`` is the
    plain-Spark baseline :class:`PlainStateStream`; ``"name@θ"`` a planner with its own
    θ_max (:func:`parse_spec`)."""
    sc = spark.sparkContext
    ops = {p: _runner(spark, p, num_partitions, theta, window, work, io_us, **kw)
           for p in planners}
    it: Any = enumerate(batches)
    if progress:
        it = _progress(it, len(batches), "batches")
    try:
        for t, b in it:
            k = t % len(planners)
            for p in list(planners[k:]) + list(planners[:k]):
                rdd = sc.parallelize(b, num_partitions)
                ctx = profiler.batch(p, t) if profiler is not None else contextlib.nullcontext()
                with ctx:
                    ops[p].process(rdd, batch_id=t)
        return {p: list(ops[p].history) for p in planners}
    finally:
        for op in ops.values():
            op.close()


# --------------------------------------------------------------------------- report
def summarise(histories: dict[str, list], skip: int = WARMUP_BATCHES) -> list[dict]:
    """One row per planner: batch seconds (mean/p95/median over batches after ``skip``),
    ratio of the mean to "none"'s, mean max/avg load, migrations, moved state, and
    migration/plan seconds per batch.

    Example
    -------
    >>> r = PlainRecord(0, 1.0, 1.5, 1.5, 0, 0.0, 10.0, 3)
    >>> summarise({"plain": [r, r]})[0]["mean_s"]
    1.0
    """
    rows = []
    for name, hist in histories.items():
        h = hist[skip:] if len(hist) > skip else hist
        secs = np.array([r.batch_seconds for r in h])
        migr = int(sum(r.rebalanced for r in hist))
        mig_s = float(sum(r.migration_seconds for r in h))
        rows.append({
            "planner": name,
            "mean_s": float(secs.mean()), "p95_s": float(np.percentile(secs, 95)),
            "median_s": float(np.median(secs)),
            "imb_routed": float(np.mean([r.imbalance_before for r in h])),
            "imb_next": float(np.mean([r.imbalance_after for r in h])),
            "migrations": migr,
            "keys_moved": int(sum(r.keys_moved for r in hist)),
            "bytes_moved": float(sum(r.bytes_moved for r in hist)),
            "state_bytes": float(hist[-1].state_bytes) if hist else 0.0,
            "table": int(hist[-1].table_size) if hist else 0,
            "mig_s_batch": mig_s / max(1, len(h)),
            "mig_s_each": mig_s / max(1, sum(r.rebalanced for r in h)),
            "plan_s_batch": float(np.mean([r.plan_seconds for r in h])) if h else 0.0,
        })
    base = next((r["mean_s"] for r in rows if r["planner"] == "none"), float("nan"))
    for r in rows:
        r["vs_none"] = r["mean_s"] / base if base == base and base > 0 else float("nan")
    return rows


def format_table(rows: list[dict]) -> str:
    """The summary rows as a text table (bytes ratio relative to "mintable")."""
    head = (f"{'planner':>9} {'mean s':>7} {'p95 s':>7} {'vs none':>7} {'max/avg':>8} "
            f"{'next':>6} {'migr':>5} {'mig s/b':>7} {'plan s/b':>8} {'keys mv':>8} "
            f"{'MB moved':>9} {'/mintab':>7} {'|R|':>5}")
    base = next((r["bytes_moved"] for r in rows if r["planner"] == "mintable"), 0.0)
    lines = [head, "-" * len(head)]
    for r in rows:
        ratio = r["bytes_moved"] / base if base else float("nan")
        lines.append(f"{r['planner']:>9} {r['mean_s']:7.2f} {r['p95_s']:7.2f} "
                     f"{r.get('vs_none', float('nan')):7.2f} "
                     f"{r['imb_routed']:8.3f} {r['imb_next']:6.3f} {r['migrations']:5d} "
                     f"{r['mig_s_batch']:7.3f} {r['plan_s_batch']:8.4f} "
                     f"{r['keys_moved']:8d} {r['bytes_moved'] / 1e6:9.3f} {ratio:7.2f} "
                     f"{r['table']:5d}")
    return "\n".join(lines)


def plot(histories: dict[str, list], path: Path) -> Path | None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # optional
        return None
    fig, axes = plt.subplots(3, 1, figsize=(8, 9), sharex=True)
    for name, hist in histories.items():
        x = [r.seq for r in hist]
        axes[0].plot(x, [r.imbalance_before for r in hist], marker=".", label=name)
        if name != PLAIN:  # plain re-shuffles the whole state each batch: own scale
            axes[1].plot(x, np.cumsum([r.bytes_moved for r in hist]) / 1e6, label=name)
        axes[2].plot(x, [r.batch_seconds for r in hist], label=name)
    axes[0].set_ylabel("max / avg load")
    axes[0].axhline(1.0, color="grey", lw=0.5)
    axes[1].set_ylabel("state moved (MB, cumulative)")
    axes[2].set_ylabel("batch time (s)")
    axes[2].set_xlabel("batch")
    axes[0].legend()
    axes[0].set_title("Keyed state over a shifting Zipf stream (seed 000 §5)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(quick: bool = False, out: str = "demo-out", argv: list[str] | None = None) -> int:
    """Entry point of ``python -m sparkbalance demo`` (stream part)."""
    p = argparse.ArgumentParser(prog="sparkbalance demo stream")
    # 30 batches of 20000 records: six shift intervals, enough for the straggler to
    # outweigh the migrations (at 20 x 16000 the ratios swung 0.98-1.17x between runs).
    p.add_argument("--batches", type=int, default=6 if quick else 30)
    p.add_argument("--keys", type=int, default=1000 if quick else 5000)
    p.add_argument("--records", type=int, default=4000 if quick else 20000)
    p.add_argument("--work", type=int, default=20, help="CPU loop steps per record")
    p.add_argument("--io-us", type=float, default=100.0,
                   help="simulated I/O wait per record, microseconds")
    p.add_argument("--fluctuation", type=float, default=1.0,
                   help="share of the paper's per-interval load shift (seed 000 §5 f)")
    p.add_argument("--interval", type=int, default=5,
                   help="batches per interval of the stream (hot keys move between intervals)")
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument("--zipf", type=float, default=1.0)
    p.add_argument("--theta", type=float, default=0.08)
    p.add_argument("--window", type=int, default=3)
    p.add_argument("--planners", default=",".join(DEMO_PLANNERS))
    args, _ = p.parse_known_args(argv or [])
    spark = stream_session(args.partitions, "sparkbalance-demo-stream")
    try:
        batches = make_batches(args.keys, args.partitions, args.batches, args.records,
                               args.zipf, args.fluctuation, seed=7,
                               batches_per_interval=args.interval)
        warm_up(spark, args.partitions)
        t0 = time.perf_counter()
        histories = run_streams(spark, args.planners.split(","), batches,
                                num_partitions=args.partitions, theta=args.theta,
                                window=args.window, work=args.work, io_us=args.io_us)
        print(f"\nKeyed state, shifting Zipf z={args.zipf} (fluctuation f={args.fluctuation} "
              f"every {args.interval} batches): {args.batches} batches x {args.records} "
              f"records, {args.keys} keys, n={args.partitions} (local[{args.partitions}]), "
              f"θ={args.theta}, window={args.window}, {args.io_us:g} µs I/O per record "
              f"({time.perf_counter() - t0:.0f} s, planners interleaved batch by batch)")
        print("max/avg = load of each batch under the layout it was routed with; next = "
              "under the layout planned after it; times exclude batch 0")
        print(format_table(summarise(histories)))
        png = plot(histories, Path(out) / "stream.png")
        if png is not None:
            print(f"plot: {png}")
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(quick="--quick" in sys.argv, argv=sys.argv[1:]))
