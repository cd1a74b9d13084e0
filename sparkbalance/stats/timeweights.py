"""Time-aware weights: turn measured task times into seconds per record and key costs.

Record counts are not load: a partition whose records are costly, or whose task ran
on a slow or busy executor, takes longer per record. From the task records of one
finished stage (``sparkbalance.spark.metrics.records.TaskRecord``, or anything with the same
attributes: this module is pure and never imports pyspark) we compute

* seconds per record of each partition (its successful attempt) and of each
  executor (median over its successful tasks, robust to a straggler),
* the per-key cost c(k) = records(k) x seconds-per-record where k ran (Fang et al.'s
  c(k); ARCHITECTURE "Statistics"),
* the completion times t_i that ``TimeAwarePartitioner`` (TAG, Yang et al.,
  ALGORITHMS.md section 5) takes: t_i = seconds per record on partition i.

Which attempt counts: per (stage, partition) the successful attempt of the latest
stage attempt; among several successful attempts (speculation) the one that
finished first, i.e. the one whose output Spark kept. Failed and killed attempts
never count, so retries do not inflate the estimate.

Long because: one concept (task times to weights) whose attempt-selection rules every
function shares; split, the rules would live in two places.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Protocol, Sequence

import numpy as np

from .keystats import KeyStats

__all__ = ["TIME_FIELDS", "MIN_RELATIVE_RATE", "measured_stage", "successful_attempts",
           "partition_seconds", "partition_records", "seconds_per_record_by_partition",
           "seconds_per_record_by_executor", "key_costs", "cost_from_partition_seconds",
           "completion_times", "time_weighted_stats"]

#: Which task time is "the time": executor run time (default; for PySpark it includes
#: the Python worker), wall duration (adds scheduler delay and result fetch), or JVM
#: CPU time (excludes the Python worker and any sleep/IO).
TIME_FIELDS = {"run": ("run_time_ms", 1e-3), "duration": ("duration_ms", 1e-3),
               "cpu": ("cpu_time_ns", 1e-9)}

#: Floor on a partition's seconds per record, relative to the median partition: a
#: task whose run time rounds to 0 ms must not give t_i = 0 (TAG divides by t_i).
MIN_RELATIVE_RATE = 1e-3


class TaskLike(Protocol):
    """The attributes of ``TaskRecord`` this module reads."""

    stage_id: int
    stage_attempt: int
    partition_id: int
    executor_id: str
    finish_time_ms: int
    run_time_ms: int
    duration_ms: int
    cpu_time_ns: int
    records_read: int
    shuffle_records_read: int
    successful: bool


def _time_field(time: str) -> tuple[str, float]:
    if time not in TIME_FIELDS:
        raise ValueError(f"time={time!r}; expected one of {sorted(TIME_FIELDS)}")
    return TIME_FIELDS[time]


def _last_stage(tasks: Sequence[TaskLike]) -> int:
    if not tasks:
        raise ValueError("tasks is empty; expected the task records of a finished stage")
    return max(t.stage_id for t in tasks)


def measured_stage(tasks: Iterable[TaskLike], num_partitions: int | None = None) -> int:
    """The stage to read times from when none is named.

    The latest stage whose successful tasks cover exactly ``num_partitions`` distinct
    partitions (the keyed stage, not e.g. a later statistics job over the input with
    another partition count); without ``num_partitions``, or if no stage matches, the
    latest stage. Name the stage (``stage_id=``) or record under a job group when
    several jobs with equal partition counts ran.

    Examples
    --------
    >>> from types import SimpleNamespace as T
    >>> ts = [T(stage_id=s, partition_id=p, successful=True) for s, p in
    ...       [(2, 0), (2, 1), (5, 0), (5, 1), (5, 2)]]
    >>> measured_stage(ts, 2), measured_stage(ts)
    (2, 5)
    """
    tasks = list(tasks)
    last = _last_stage(tasks)
    if num_partitions is None:
        return last
    parts: dict[int, set[int]] = {}
    for t in tasks:
        if t.successful:
            parts.setdefault(t.stage_id, set()).add(t.partition_id)
    fits = [sid for sid, ps in parts.items() if len(ps) == int(num_partitions)
            and max(ps) < int(num_partitions)]
    return max(fits) if fits else last


def successful_attempts(tasks: Iterable[TaskLike], stage_id: int | None = None
                        ) -> dict[int, TaskLike]:
    """The attempt that counts for each partition of one stage: ``{partition_id: task}``.

    Parameters
    ----------
    tasks : task records (any stages, any attempts).
    stage_id : the stage; default the highest stage id present (the last stage of a job,
        e.g. the reduce side of a shuffle).

    Examples
    --------
    >>> from types import SimpleNamespace as T
    >>> ts = [T(stage_id=1, stage_attempt=0, partition_id=0, successful=False, finish_time_ms=5),
    ...       T(stage_id=1, stage_attempt=1, partition_id=0, successful=True, finish_time_ms=9)]
    >>> successful_attempts(ts)[0].stage_attempt
    1
    """
    tasks = list(tasks)
    sid = _last_stage(tasks) if stage_id is None else stage_id
    best: dict[int, Any] = {}
    for t in tasks:
        if t.stage_id != sid or not t.successful:
            continue
        old = best.get(t.partition_id)
        if (old is None or t.stage_attempt > old.stage_attempt
                or (t.stage_attempt == old.stage_attempt
                    and t.finish_time_ms < old.finish_time_ms)):
            best[t.partition_id] = t
    return best


def _num_partitions(best: Mapping[int, Any], num_partitions: int | None) -> int:
    n = (max(best) + 1 if best else 0) if num_partitions is None else int(num_partitions)
    if n < 1:
        raise ValueError(f"num_partitions={n}; expected >= 1 (no successful task found?)")
    if best and max(best) >= n:
        raise ValueError(f"partition id {max(best)} out of range for num_partitions={n}")
    return n


def partition_seconds(tasks: Iterable[TaskLike], num_partitions: int | None = None, *,
                      stage_id: int | None = None, time: str = "run") -> np.ndarray:
    """Seconds spent on each partition (its counting attempt); NaN where none succeeded.

    Examples
    --------
    >>> from types import SimpleNamespace as T
    >>> ts = [T(stage_id=0, stage_attempt=0, partition_id=p, successful=True,
    ...         finish_time_ms=1, run_time_ms=ms) for p, ms in [(0, 100), (1, 400)]]
    >>> partition_seconds(ts, 3).tolist()
    [0.1, 0.4, nan]
    """
    field, scale = _time_field(time)
    best = successful_attempts(tasks, stage_id)
    n = _num_partitions(best, num_partitions)
    out = np.full(n, np.nan)
    for p, t in best.items():
        out[p] = getattr(t, field) * scale
    return out


def _task_records(t: TaskLike) -> int:
    # Shuffle-read records for a reduce stage, input records for a scan stage. For the
    # PySpark RDD API these count pickled batches, not Python records: pass `records`.
    return int(t.shuffle_records_read) or int(t.records_read)


def partition_records(tasks: Iterable[TaskLike], num_partitions: int | None = None, *,
                      stage_id: int | None = None) -> np.ndarray:
    """Records each partition's counting attempt read, from task metrics (float array).

    Exact for DataFrame stages (rows); for the PySpark RDD API the JVM sees pickled
    batches, so prefer the driver's own counts (``records=`` of the functions below).
    """
    best = successful_attempts(tasks, stage_id)
    n = _num_partitions(best, num_partitions)
    out = np.zeros(n)
    for p, t in best.items():
        out[p] = _task_records(t)
    return out


def _fill_and_floor(rate: np.ndarray, fill: float | None) -> np.ndarray:
    known = rate[np.isfinite(rate) & (rate > 0)]
    if known.size == 0:
        if fill is None:
            raise ValueError("no partition has both a successful task and records > 0; "
                             "cannot estimate seconds per record")
        return np.full_like(rate, float(fill))
    med = float(np.median(known))
    out = np.where(np.isfinite(rate), rate, med if fill is None else float(fill))
    return np.maximum(out, MIN_RELATIVE_RATE * med)


def seconds_per_record_by_partition(tasks: Iterable[TaskLike], num_partitions: int | None = None,
                                    *, records: Sequence[float] | np.ndarray | None = None,
                                    stage_id: int | None = None, time: str = "run",
                                    fill: float | None = None) -> np.ndarray:
    """Seconds per record of each partition of one stage.

    Parameters
    ----------
    tasks : task records of the job (the stage is chosen by ``stage_id``, default last).
    num_partitions : length of the result (default: highest partition id + 1).
    records : records per partition (e.g. from the driver's key counts); default from
        task metrics (:func:`partition_records`).
    time : "run" (executor run time), "duration" or "cpu"; see :data:`TIME_FIELDS`.
    fill : value for partitions without a successful task or without records; default
        the median of the others (no evidence that they differ). Results are floored at
        :data:`MIN_RELATIVE_RATE` x median so none is 0.

    Examples
    --------
    >>> from types import SimpleNamespace as T
    >>> ts = [T(stage_id=0, stage_attempt=0, partition_id=p, successful=True, finish_time_ms=1,
    ...         run_time_ms=ms) for p, ms in [(0, 100), (1, 400)]]
    >>> seconds_per_record_by_partition(ts, records=[100, 100]).tolist()
    [0.001, 0.004]
    """
    tasks = list(tasks)
    secs = partition_seconds(tasks, num_partitions, stage_id=stage_id, time=time)
    n = secs.shape[0]
    if records is None:
        recs = partition_records(tasks, n, stage_id=stage_id)
    else:
        recs = np.asarray(records, dtype=np.float64)
        if recs.shape != (n,):
            raise ValueError(f"records has shape {recs.shape}; expected ({n},), one per partition")
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(recs > 0, secs / np.where(recs > 0, recs, 1.0), np.nan)
    return _fill_and_floor(rate, fill)


def seconds_per_record_by_executor(tasks: Iterable[TaskLike], *,
                                   records: Sequence[float] | np.ndarray | None = None,
                                   stage_id: int | None = None, time: str = "run"
                                   ) -> dict[str, float]:
    """Median seconds per record over each executor's counting attempts of one stage.

    The median keeps one straggling task (GC pause, a costly key) from defining the
    executor's speed. ``records`` as in :func:`seconds_per_record_by_partition`.

    Examples
    --------
    >>> from types import SimpleNamespace as T
    >>> ts = [T(stage_id=0, stage_attempt=0, partition_id=p, successful=True, finish_time_ms=1,
    ...         run_time_ms=ms, executor_id=e) for p, ms, e in
    ...       [(0, 100, "0"), (1, 110, "0"), (2, 900, "0"), (3, 400, "1")]]
    >>> seconds_per_record_by_executor(ts, records=[100] * 4)
    {'0': 0.0011, '1': 0.004}
    """
    tasks = list(tasks)
    field, scale = _time_field(time)
    best = successful_attempts(tasks, stage_id)
    if records is not None:
        recs = np.asarray(records, dtype=np.float64)
        if best and recs.shape[0] <= max(best):
            raise ValueError(f"records has {recs.shape[0]} entries; partition {max(best)} "
                             f"needs at least {max(best) + 1}")
    rates: dict[str, list[float]] = {}
    for p, t in best.items():
        r = float(recs[p]) if records is not None else float(_task_records(t))
        if r > 0:
            rates.setdefault(str(t.executor_id), []).append(getattr(t, field) * scale / r)
    return {e: float(np.median(v)) for e, v in sorted(rates.items())}


def key_costs(key_records: Sequence[float] | np.ndarray, key_partition: Sequence[int] | np.ndarray,
              seconds_per_record: Sequence[float] | np.ndarray) -> np.ndarray:
    """c(k) = records(k) x seconds-per-record of the partition where k ran (seconds).

    Examples
    --------
    >>> key_costs([10, 5, 1], [0, 1, 1], [0.001, 0.004]).tolist()
    [0.01, 0.02, 0.004]
    """
    rec = np.asarray(key_records, dtype=np.float64)
    part = np.asarray(key_partition, dtype=np.int64)
    spr = np.asarray(seconds_per_record, dtype=np.float64)
    if rec.shape != part.shape or rec.ndim != 1:
        raise ValueError(f"key_records {rec.shape} and key_partition {part.shape} must be "
                         f"1-D of equal length")
    if part.size and (part.min() < 0 or part.max() >= spr.shape[0]):
        raise ValueError(f"key_partition has ids in [{part.min()}, {part.max()}]; expected "
                         f"[0, {spr.shape[0] - 1}] (one seconds_per_record per partition)")
    return rec * spr[part]


def cost_from_partition_seconds(cost: Sequence[float] | np.ndarray,
                                where: Sequence[int] | np.ndarray,
                                records: Sequence[float] | np.ndarray,
                                seconds: Sequence[float] | np.ndarray) -> np.ndarray:
    """c(k) = cost(k) x seconds-per-record of the partition (or key group's partition)
    ``where[k]`` ran on, from that partition's measured seconds and records.

    The keyed-state controller's time weighting: ``cost`` is records per key (or per key
    group), ``records`` the records per partition, ``seconds`` the task seconds per
    partition. A partition without records, or without a measured time (0 or NaN), gets
    the mean rate Σ seconds / Σ records: no evidence that it differs.

    Examples
    --------
    >>> cost_from_partition_seconds([2.0, 1.0, 1.0], [0, 1, 1], [2.0, 2.0], [4.0, 1.0]).tolist()
    [4.0, 0.5, 0.5]
    """
    cost = np.asarray(cost, dtype=np.float64)
    part = np.asarray(where, dtype=np.int64)
    recs = np.asarray(records, dtype=np.float64)
    secs = np.nan_to_num(np.asarray(seconds, dtype=np.float64)[: recs.shape[0]], nan=0.0)
    if cost.shape != part.shape:
        raise ValueError(f"cost {cost.shape} and where {part.shape} must have equal shapes")
    if part.size and (part.min() < 0 or part.max() >= recs.shape[0]):
        raise ValueError(f"where has ids in [{part.min()}, {part.max()}]; expected "
                         f"[0, {recs.shape[0] - 1}] (one records entry per partition)")
    per_rec = np.divide(secs, recs, out=np.zeros_like(recs), where=recs > 0)
    mean_rate = secs.sum() / max(recs.sum(), 1.0)
    per_rec = np.where(per_rec > 0, per_rec, mean_rate)
    return cost * per_rec[part]


def completion_times(tasks: Iterable[TaskLike], num_partitions: int, *,
                     records: Sequence[float] | np.ndarray | None = None,
                     stage_id: int | None = None, time: str = "run",
                     normalize: bool = False) -> np.ndarray:
    """TAG's t_i: completion time of one record on partition i (ALGORITHMS.md section 5).

    t_i is the measured seconds per record of partition i (see
    :func:`seconds_per_record_by_partition`) in ``stage_id`` (default
    :func:`measured_stage`); partitions without evidence get the median. TAG sends partition i a share p_i = (1/t_i) / sum_j (1/t_j) of the records,
    which is scale-free; ``normalize=True`` rescales to mean 1 so that all-equal t_i
    reproduce count weighting exactly.

    Examples
    --------
    >>> from types import SimpleNamespace as T
    >>> ts = [T(stage_id=0, stage_attempt=0, partition_id=p, successful=True, finish_time_ms=1,
    ...         run_time_ms=ms) for p, ms in [(0, 100), (1, 400), (2, 100), (3, 400)]]
    >>> completion_times(ts, 4, records=[100] * 4, normalize=True).tolist()
    [0.4, 1.6, 0.4, 1.6]
    """
    if int(num_partitions) < 1:
        raise ValueError(f"num_partitions={num_partitions}; expected >= 1")
    tasks = list(tasks)
    sid = measured_stage(tasks, num_partitions) if stage_id is None else stage_id
    t = seconds_per_record_by_partition(tasks, num_partitions, records=records,
                                        stage_id=sid, time=time)
    return t / t.mean() if normalize else t


def time_weighted_stats(stats: KeyStats, tasks: Iterable[TaskLike],
                        key_partition: Sequence[int] | np.ndarray, *,
                        num_partitions: int | None = None, stage_id: int | None = None,
                        time: str = "run", by: str = "partition",
                        records: Sequence[float] | np.ndarray | None = None) -> KeyStats:
    """``stats`` with cost c(k) = counts(k) x seconds-per-record where k ran (seconds).

    Parameters
    ----------
    stats : count statistics of the data the measured stage processed.
    tasks : task records of that job (``listener.tasks()``).
    key_partition : partition each key of ``stats`` was routed to in the measured stage
        (``current.assign(stats.keys)``).
    num_partitions : partitions of the measured stage (default from ids seen).
    stage_id : the measured stage (default :func:`measured_stage`: the latest stage with
        ``num_partitions`` partitions, else the latest).
    time : which task time; see :data:`TIME_FIELDS`.
    by : "partition" (rate of the key's partition) or "executor" (median rate of the
        executor that ran the key's partition: smoother, ignores per-partition key mix).
    records : records per partition; default the sum of ``stats.counts`` per partition plus
        an even share of ``stats.tail_count`` (the unlisted keys of bounded statistics),
        exact when ``stats`` covers every key (pass the true totals when it is a sample).

    Examples
    --------
    >>> from types import SimpleNamespace as T
    >>> ts = [T(stage_id=3, stage_attempt=0, partition_id=p, successful=True, finish_time_ms=1,
    ...         run_time_ms=ms, executor_id="0") for p, ms in [(0, 100), (1, 400)]]
    >>> s = KeyStats.from_counts({"a": 60, "b": 40, "c": 100})
    >>> time_weighted_stats(s, ts, [0, 0, 1]).cost.tolist()
    [0.06, 0.04, 0.4]
    """
    if by not in ("partition", "executor"):
        raise ValueError(f"by={by!r}; expected 'partition' or 'executor'")
    tasks = list(tasks)
    part = np.asarray(key_partition, dtype=np.int64)
    if part.shape != (len(stats),):
        raise ValueError(f"key_partition has shape {part.shape}; expected ({len(stats)},), "
                         f"one partition per key of stats")
    sid = measured_stage(tasks, num_partitions) if stage_id is None else stage_id
    best = successful_attempts(tasks, sid)
    seen = [max(best) + 1 if best else 0, int(part.max()) + 1 if part.size else 0]
    n = int(num_partitions) if num_partitions is not None else max(seen)
    if part.size and (part.min() < 0 or part.max() >= n):
        raise ValueError(f"key_partition ids in [{part.min()}, {part.max()}]; expected "
                         f"[0, {n - 1}]")
    # Bounded statistics list the heavy keys only: the unlisted tail's records also ran,
    # spread evenly over the partitions (many light keys hash evenly).
    recs = (np.bincount(part, weights=stats.counts, minlength=n) + stats.tail_count / n
            if records is None else np.asarray(records, dtype=np.float64))
    if by == "partition":
        spr = seconds_per_record_by_partition(tasks, n, records=recs, stage_id=sid, time=time)
    else:
        per_exec = seconds_per_record_by_executor(tasks, records=recs, stage_id=sid, time=time)
        if not per_exec:
            raise ValueError("no executor has a successful task with records > 0")
        med = float(np.median(list(per_exec.values())))
        spr = np.full(n, med)
        for p, t in best.items():
            spr[p] = per_exec.get(str(t.executor_id), med)
    return stats.with_cost(key_costs(stats.counts, part, spr))
