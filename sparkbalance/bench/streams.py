"""One keyed-state stream through several planners, interleaved batch by batch.

Batch t of every planner runs before batch t+1 of any, in a rotating order, so background
load on a shared machine hits every planner alike. Each planner gets a fresh
:class:`~sparkbalance.state.operator.KeyedStateOperator` (or, for :data:`PLAIN`, the
plain-Spark baseline :class:`~sparkbalance.bench.plain.PlainStateStream`) with the same
costly per-record update (:func:`~sparkbalance.bench.workloads.busy_count`). A spec
``oracle:<planner>`` is that planner made clairvoyant (:mod:`.clairvoyant`): before each
batch, untimed, its state moves to the plan for the batch's exact work.
"""
from __future__ import annotations

import contextlib
import sys
from collections import Counter
from typing import Any, Sequence

from sparkbalance.bench.clairvoyant import split_oracle, window_work
from sparkbalance.bench.cpu import BatchCPU
from sparkbalance.bench.plain import PLAIN, PlainStateStream
from sparkbalance.bench.profile import BatchProfiler
from sparkbalance.bench.workloads import busy_count

__all__ = ["parse_spec", "run_streams"]


def parse_spec(spec: str, theta: float) -> tuple[str, float]:
    """A planner spec as ``(name, θ_max)``: ``"mixed"`` or ``"mixed@0.2"``.

    ``NAME@THETA`` gives a planner its own θ_max, so one run can compare trigger
    thresholds side by side; ``NAME:MODE`` gives it a lookahead mode (``mixed:never``: the
    reactive controller, :mod:`sparkbalance.state.control.lookahead`). NAME is :data:`PLAIN` or a strategy of the registry
    (:func:`sparkbalance.strategies.available` with ``state=True``, aliases accepted).

    Examples
    --------
    >>> parse_spec("ssm@0.2", 0.08), parse_spec("none", 0.08)
    (('ssm', 0.2), ('none', 0.08))
    """
    from sparkbalance import strategies
    oracle, rest = split_oracle(spec)
    name, sep, th = rest.partition("@")
    name = name.partition(":")[0]       # NAME:MODE: the operator's lookahead mode
    if oracle and name == PLAIN:
        raise ValueError(f"planner spec {spec!r}: plain Spark has no layout to foresee; "
                         "expected oracle:NAME with a planner NAME")
    if name != PLAIN:
        try:
            strategies.get(name)
        except ValueError:
            valid = ", ".join([PLAIN, *strategies.available(state=True)])
            raise ValueError(f"planner spec {spec!r}: planner {name!r} is not registered; "
                             f"expected one of {valid} (or an alias)") from None
    if not sep:
        return name, theta
    try:
        return name, float(th)
    except ValueError:
        raise ValueError(f"planner spec {spec!r}; expected NAME or NAME@THETA "
                         "(e.g. mixed@0.2)") from None


def _progress(it: Any, total: int, desc: str) -> Any:
    try:
        from tqdm.auto import tqdm
    except ImportError:  # optional
        return it
    return tqdm(it, total=total, desc=desc, leave=False, file=sys.stderr)


def _runner(spark: Any, spec: str, num_partitions: int, theta: float, window: int | None,
            work: int, io_us: float, **kw: Any) -> Any:
    planner, theta = parse_spec(spec, theta)
    mode = split_oracle(spec)[1].partition("@")[0].partition(":")[2]
    if mode:
        kw = {**kw, "lookahead": mode}
    if planner == PLAIN:
        return PlainStateStream(spark, num_partitions, busy_count(work, io_us), initial=0,
                                window=window)
    from sparkbalance.state.operator import KeyedStateOperator
    return KeyedStateOperator(spark, num_partitions, update_values=busy_count(work, io_us),
                              initial=0, planner=planner, theta=theta, window=window, **kw)


def run_streams(spark: Any, planners: Sequence[str], batches: Sequence[list], *,
                num_partitions: int, theta: float = 0.08, window: int | None = 3,
                progress: bool = True, work: int = 200, io_us: float = 0.0,
                profiler: BatchProfiler | None = None, cpu: BatchCPU | None = None,
                states: dict | None = None, **kw: Any) -> dict[str, list]:
    """Run ``batches`` through one fresh operator per planner, interleaved batch by batch.

    Parameters
    ----------
    spark : SparkSession
        Ideally ``local[num_partitions]`` (:func:`sparkbalance.bench.session.local_session`).
    planners : sequence of str
        Planner specs (:func:`parse_spec`); :data:`PLAIN` is the plain-Spark baseline.
    batches : sequence of list
        ``(key, value)`` records per batch (:func:`~sparkbalance.bench.workloads.make_batches`).
    num_partitions : int
        Partitions of the state.
    theta : float
        θ_max of the controller for specs without their own.
    window : int or None
        Sliding window of the state, in batches (None: unbounded).
    progress : bool
        Show a tqdm progress bar when tqdm is installed.
    work, io_us
        Per-record cost of :func:`~sparkbalance.bench.workloads.busy_count`.
    profiler : BatchProfiler, optional
        Records each batch's jobs and stages.
    cpu : BatchCPU, optional
        Records each batch's CPU seconds (driver and executors).
    states : dict, optional
        Filled with each sparkbalance planner's final state (``collect_state``).
    **kw
        More :class:`~sparkbalance.state.operator.KeyedStateOperator` arguments.

    Returns
    -------
    dict
        ``{planner spec: history}`` (one record per batch).

    Examples
    --------
    >>> batches = make_batches(40, 2, 3, 200, 1.0, 1.0, seed=2)       # doctest: +SKIP
    >>> h = run_streams(spark, ["none", "plain"], batches, num_partitions=2)  # doctest: +SKIP
    >>> [r.seq for r in h["plain"]]                                  # doctest: +SKIP
    [0, 1, 2]
    """
    for p in planners:
        parse_spec(p, theta)   # a bad name fails before any session work
    sc = spark.sparkContext
    ops = {p: _runner(spark, p, num_partitions, theta, window, work, io_us, **kw)
           for p in planners}
    oracles = [p for p in planners if split_oracle(p)[0]]
    counts = [Counter(k for k, _ in b) for b in batches] if oracles else []
    it: Any = enumerate(batches)
    if progress:
        it = _progress(it, len(batches), "batches")
    try:
        for t, b in it:
            k = t % len(planners)
            for p in list(planners[k:]) + list(planners[:k]):
                rdd = sc.parallelize(b, num_partitions)
                if p in oracles:      # untimed: the move the clairvoyant gets for free
                    ops[p].rebalance(window_work(batches, t, window, counts))
                prof = profiler.batch(p, t) if profiler is not None else contextlib.nullcontext()
                used = cpu.batch(p, t) if cpu is not None else contextlib.nullcontext()
                with prof, used:
                    ops[p].process(rdd, batch_id=t)
        if states is not None:      # each planner's final state, to check it exact
            states.update({p: ops[p].collect_state() for p in planners if p != PLAIN})
        return {p: list(ops[p].history) for p in planners}
    finally:
        for op in ops.values():
            op.close()
