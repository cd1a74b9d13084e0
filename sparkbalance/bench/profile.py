"""Per-batch profile of a stream benchmark: which Spark jobs and stages each batch ran,
and where its wall time went (routing shuffle, merge, migration jobs, driver work).
"""
from __future__ import annotations

import contextlib
import time
from typing import Any, Iterator

import numpy as np

from sparkbalance.bench.report import WARMUP_BATCHES

__all__ = ["BatchProfiler", "stage_span", "stage_union", "carrying_batches",
           "profile_summary", "merge_after_migration", "format_profile", "profile_means"]


class BatchProfiler:
    """Which Spark jobs and stages each batch ran, and where its wall time went.

    Records stages (submission/completion) and tasks through
    :func:`sparkbalance.spark.metrics.listener.open_listener` (the JVM recorder when the bridge
    jar is on the classpath, else the py4j listener; a few dozen events per batch either
    way) and jobs through ``sc.statusTracker()``. Each batch is a time window on the
    driver: ``with prof.batch(name, t): op.process(...)``; :meth:`rows` attributes the
    stages submitted inside the window to it (batches run one at a time on the driver).

    Examples
    --------
    >>> prof = BatchProfiler(spark)                           # doctest: +SKIP
    >>> with prof.batch("mixed", 0):                          # doctest: +SKIP
    ...     op.process(rdd)
    >>> prof.rows()[0]["jobs"]                                # doctest: +SKIP
    1
    """

    def __init__(self, spark: Any) -> None:
        from sparkbalance.spark.metrics.listener import open_listener
        self.sc = getattr(spark, "sparkContext", spark)
        self._lst = open_listener(spark)
        self._lst.attach()
        self.kind = self._lst.kind
        self._windows: list[tuple[str, int, float, float]] = []

    @contextlib.contextmanager
    def batch(self, name: str, seq: int) -> Iterator[None]:
        """Time window of batch ``seq`` of planner ``name`` (its jobs get a job group)."""
        from sparkbalance.spark.metrics.listener import sparkbalance_job_group
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
        slowest task: the straggler-bound time), ``balanced_s`` (the wall minus, per
        stage, its slowest task's excess over its mean task: the batch had its tasks been
        even, the floor of any rebalancing that keeps the work), ``stage_list``.
        """
        stages = [s for s in self._lst.stages() if s.submission_time_ms is not None]
        tasks = self._lst.tasks(successful_only=True)
        durations: dict[int, list[float]] = {}
        for t in tasks:
            durations.setdefault(t.stage_id, []).append(t.duration_ms / 1e3)
        slowest = {sid: max(d) for sid, d in durations.items()}
        # What a stage's slowest task costs beyond its mean task: the batch's wall time
        # minus these is its time had every stage's tasks been even (perfect balance).
        excess = {sid: slowest[sid] - float(np.mean(d)) for sid, d in durations.items()}
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
            in_stages = stage_union(mine, b)
            out.append({
                "name": name, "seq": seq, "wall_s": (b - a) / 1e3, "jobs": len(order),
                "stages": len(mine),
                "first_job_s": stage_span(first, b), "map_s": sum(walls[s.stage_id]
                                                             for s in first[:-1]),
                "merge_s": walls[first[-1].stage_id] if first else 0.0,
                "extra_jobs": max(0, len(order) - 1), "extra_s": stage_span(extra, b),
                "in_stages_s": in_stages, "outside_s": (b - a) / 1e3 - in_stages,
                "critical_s": sum(slowest.get(s.stage_id, 0.0) for s in mine),
                "balanced_s": (b - a) / 1e3 - sum(excess.get(s.stage_id, 0.0)
                                                  for s in mine),
                "stage_list": [(s.stage_id, s.name.split(" at ")[0], s.num_tasks,
                                round(walls[s.stage_id], 3),
                                round(slowest.get(s.stage_id, 0.0), 3)) for s in mine],
            })
        return out

    def close(self) -> None:
        """Detach the listener (the rows recorded so far stay readable)."""
        self._lst.detach()


def _done_ms(s: Any, end_ms: float) -> float:
    """Completion time of stage ``s``, or ``end_ms`` (the batch's end) while it runs."""
    return s.completion_time_ms if s.completion_time_ms is not None else end_ms


def _stage_wall(s: Any, end_ms: float) -> float:
    return max(0.0, (_done_ms(s, end_ms) - s.submission_time_ms) / 1e3)


def stage_span(stages: list, end_ms: float) -> float:
    """Wall seconds from the first submission to the last completion of ``stages``.

    Parameters
    ----------
    stages : list
        Stage records with ``submission_time_ms`` and ``completion_time_ms`` (None while
        the stage runs), e.g. ``open_listener(spark).stages()``.
    end_ms : float
        Completion time of the stages still running (the batch's end), ms.

    Examples
    --------
    >>> from types import SimpleNamespace as S
    >>> stage_span([S(submission_time_ms=0, completion_time_ms=1000),
    ...             S(submission_time_ms=3000, completion_time_ms=None)], 3500)
    3.5
    """
    if not stages:
        return 0.0
    a = min(s.submission_time_ms for s in stages)
    b = max(_done_ms(s, end_ms) for s in stages)
    return max(0.0, (b - a) / 1e3)


def stage_union(stages: list, end_ms: float) -> float:
    """Wall seconds covered by at least one of ``stages`` (they may overlap).

    Parameters as :func:`stage_span`; unlike the span, gaps between stages (driver work)
    do not count.

    Examples
    --------
    >>> from types import SimpleNamespace as S
    >>> stage_union([S(submission_time_ms=0, completion_time_ms=1000),
    ...              S(submission_time_ms=500, completion_time_ms=1500),
    ...              S(submission_time_ms=3000, completion_time_ms=None)], 3500)
    2.0
    """
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


def carrying_batches(history: dict[str, list]) -> set[tuple[str, int]]:
    """``(planner, seq)`` of the batches that carry a migration: the one after each batch
    that decided one (the keys ride in the next batch's shuffle)."""
    return {(name, r.seq + 1) for name, h in history.items() for r in h if r.rebalanced}


def profile_summary(rows: list[dict], history: dict[str, list], skip: int = WARMUP_BATCHES
                    ) -> list[dict]:
    """Per planner and batch kind ("steady": no migration; "migrating": the batch carrying
    the migration its predecessor decided, in its own shuffle): means of the profiled
    seconds, jobs and stages per batch."""
    carries = carrying_batches(history)
    out = []
    for name in history:
        mine = [r for r in rows if r["name"] == name and r["seq"] >= skip]
        for kind in ("steady", "migrating"):
            sel = [r for r in mine if ((name, r["seq"]) in carries) == (kind != "steady")]
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
    carries = carrying_batches(history)
    out = {}
    for name in history:
        mine = [r for r in rows if r["name"] == name and r["seq"] >= skip]
        after = [r["merge_s"] for r in mine if (name, r["seq"]) in carries]
        other = [r["merge_s"] for r in mine if (name, r["seq"]) not in carries]
        out[name] = (float(np.mean(after)) if after else float("nan"),
                     float(np.mean(other)) if other else float("nan"), len(after))
    return out


def format_profile(rows: list[dict]) -> str:
    """The rows of :func:`profile_summary` as a text table (seconds are means per batch).

    Examples
    --------
    >>> row = dict(planner="mixed", kind="steady", batches=2, wall_s=1.0, jobs=1.0,
    ...            stages=2.0, map_s=0.2, merge_s=0.6, extra_s=0.0, outside_s=0.2,
    ...            critical_s=0.7)
    >>> format_profile([row]).splitlines()[2].split()[:3]
    ['mixed', 'steady', '2']
    """
    head = (f"{'planner':>12} {'batches':>12} {'wall s':>7} {'jobs':>5} {'stages':>6} "
            f"{'route s':>7} {'merge s':>7} {'+jobs s':>7} {'driver s':>8} {'critical':>8}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['planner']:>12} {r['kind']:>9} {r['batches']:2d} {r['wall_s']:7.2f} "
                     f"{r['jobs']:5.1f} {r['stages']:6.1f} {r['map_s']:7.2f} "
                     f"{r['merge_s']:7.2f} {r['extra_s']:7.2f} {r['outside_s']:8.2f} "
                     f"{r['critical_s']:8.2f}")
    return "\n".join(lines)


def profile_means(rows: list[dict], skip: int = WARMUP_BATCHES, field: str = "critical_s"
                  ) -> dict[str, float]:
    """Per planner, the mean per batch (batches ``>= skip``) of one field of
    :meth:`BatchProfiler.rows`; by default Σ of the slowest task per stage, the
    straggler-bound time.

    Examples
    --------
    >>> profile_means([{"name": "a", "seq": 0, "critical_s": 9.0},
    ...                {"name": "a", "seq": 1, "critical_s": 1.0},
    ...                {"name": "a", "seq": 2, "critical_s": 2.0}])
    {'a': 1.5}
    """
    by: dict[str, list[float]] = {}
    for r in rows:
        if r["seq"] >= skip:
            by.setdefault(r["name"], []).append(r[field])
    return {k: float(np.mean(v)) for k, v in by.items()}
