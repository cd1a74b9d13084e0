"""The "auto" strategy: balance only when the predicted gain pays for itself (do no harm).

Two inputs, one rule. The slowest reduce task bounds a stage's wall time, so the predicted
gain of a plan is ``1 - max(planned loads) / max(hash loads)``, the fraction of the slowest
task it removes. The plan is kept only when that gain is at least ``min_gain``; otherwise
the keys keep plain hash placement, and the decision is logged (INFO, logger
``sparkbalance``) with both numbers.

* :func:`plan_groups` — the zero-pass path of the RDD adapters
  (:mod:`sparkbalance.spark.rdd.mapstats`): the loads are the records of ``m >> n`` fine key
  groups, counted by the map tasks of the user's shuffle (Spark's map-output bytes when no
  count arrives; bytes understate a hot key, whose records compress well), and the plan is
  the best split of the groups into ``n`` contiguous runs (each task then fetches its
  groups as one block per map output), or LPT over groups (largest group first onto the
  least loaded task, Graham 1969) when that is more than ``CONTIGUOUS_SLACK`` (5 %) better.
  Hash placement is ``n`` equal runs of groups (a group is a range of the group hash
  ``h_1``). The map side is already paid for, so the cost of the plan is nil and
  ``min_gain`` only guards against noise.
* :func:`fit_sampled` — the adapters' default where the shuffle cannot count (no JVM
  bridge; the DataFrame path): the same key groups, their sizes estimated from a bounded
  sample (the listed heavy keys in their groups, the unlisted tail spread evenly), planned
  as above; plain hashing when the plan gains too little.
* :func:`fit_auto` — the registry's fitter for paths with full key statistics (CLI,
  ``fit_partitioner``): Mixed (Fang et al. Algorithm 4) against the stable hash, both
  evaluated on the statistics.
"""
from __future__ import annotations

import heapq
import logging
from typing import Any

import numpy as np

from ..planning.base import DEFAULT_BETA, DEFAULT_MAX_TABLE, DEFAULT_THETA
from ..planning.intervals.model import min_max_partition
from ..routing.base import PartitionFunction, check_num_partitions
from ..routing.hash import HashPartitioner, home_partitions
from ..routing.keygroups import GroupMapPartitioner, key_groups
from ..stats.keystats import KeyStats

__all__ = ["fit_auto", "fit_sampled", "plan_groups", "SAMPLED_GROUPS_PER_TASK", "lpt_owner", "contiguous_owner", "plain_owner",
           "predicted_gain", "check_min_gain", "DEFAULT_MIN_GAIN", "CONTIGUOUS_SLACK"]

_LOG = logging.getLogger("sparkbalance")

#: A plan of contiguous runs of key groups is preferred to LPT when its slowest task is at
#: most this much slower (5 %): each task then fetches one block per map output instead of
#: one per group (256 blocks in all against 8,192 at n = 16, m = 512; measured at n = 16 on
#: Zipf z = 0.8 keys: 1.0 CPU s less per job, for runs 0.7-3.5 % slower than LPT).
CONTIGUOUS_SLACK: float = 0.05

#: Smallest predicted cut of the slowest task worth a plan (5 %: below the run-to-run noise
#: of a Spark stage on a shared machine, so a smaller "gain" is not a gain).
DEFAULT_MIN_GAIN: float = 0.05


def lpt_owner(sizes: Any, num_partitions: int) -> np.ndarray:
    """Longest-processing-time assignment of groups to ``num_partitions`` tasks.

    Groups go largest first to the task of least load so far (ties: lowest index), so a
    group heavier than the mean ends alone on its task. Empty groups go round-robin.

    Examples
    --------
    >>> lpt_owner([9, 1, 1, 1, 4, 4], 2).tolist()
    [0, 1, 0, 1, 1, 1]
    """
    n = check_num_partitions(num_partitions)
    w = np.asarray(sizes, dtype=np.float64)
    if w.ndim != 1:
        raise ValueError(f"sizes has shape {w.shape}; expected one size per group (1-D)")
    if np.any(w < 0) or not np.all(np.isfinite(w)):
        raise ValueError("sizes must be finite and >= 0")
    owner = np.arange(w.shape[0], dtype=np.int64) % n
    heap = [(0.0, p) for p in range(n)]
    for g in np.argsort(-w, kind="stable"):
        if w[g] <= 0:
            break
        load, p = heapq.heappop(heap)
        owner[g] = p
        heapq.heappush(heap, (load + float(w[g]), p))
    return owner


def predicted_gain(hash_loads: Any, planned_loads: Any) -> float:
    """``1 - max(planned) / max(hash)``: the share of the slowest task a plan removes.

    Examples
    --------
    >>> predicted_gain([4, 1], [3, 2])
    0.25
    """
    worst = float(np.max(hash_loads)) if np.size(hash_loads) else 0.0
    if worst <= 0:
        return 0.0
    return 1.0 - float(np.max(planned_loads)) / worst


def check_min_gain(min_gain: float) -> float:
    """Validate ``min_gain`` (0 <= min_gain < 1) and return it as float."""
    if not 0.0 <= float(min_gain) < 1.0:
        raise ValueError(f"min_gain={min_gain!r}; expected 0 <= min_gain < 1")
    return float(min_gain)


def plain_owner(num_groups: int, num_partitions: int) -> np.ndarray:
    """Hash placement of ``m`` key groups on ``n`` tasks: ``n`` equal runs of groups.

    A group is a range of the key hash, so equal runs of groups are hash placement by
    ranges of the hash; each task's groups are contiguous, so it reads them as one block
    per map output (:mod:`sparkbalance.spark.rdd.mapstats`).

    Examples
    --------
    >>> plain_owner(8, 4).tolist()
    [0, 0, 1, 1, 2, 2, 3, 3]
    """
    n = check_num_partitions(num_partitions)
    return np.arange(int(num_groups), dtype=np.int64) * n // max(int(num_groups), 1)


def contiguous_owner(sizes: Any, num_partitions: int) -> np.ndarray:
    """Assignment of groups to tasks in ``n`` contiguous runs with the smallest slowest task.

    Two candidates: cuts at the ``n``-quantiles of the cumulative size (every task near
    the mean, but a heavy group can push one over) and the min-max cuts (binary search
    with a greedy cover, :func:`sparkbalance.planning.intervals.model.min_max_partition`:
    the smallest possible slowest task, but the greedy cover fills the first tasks up to
    that bound and may leave the last ones light). The quantile cuts are kept unless the
    min-max cuts make the slowest task at least 1 % lighter.

    Examples
    --------
    >>> contiguous_owner([1, 1, 1, 1, 4], 2).tolist()
    [0, 0, 0, 0, 1]
    >>> contiguous_owner([1] * 8, 4).tolist()
    [0, 0, 1, 1, 2, 2, 3, 3]
    """
    n = check_num_partitions(num_partitions)
    w = np.asarray(sizes, dtype=np.float64)
    wc = np.concatenate([[0.0], np.cumsum(w)])
    m = w.shape[0]
    targets = wc[-1] * np.arange(1, n, dtype=np.float64) / n
    hi = np.clip(np.searchsorted(wc, targets, side="left"), 0, m)
    lo = np.clip(hi - 1, 0, m)
    near = np.where(np.abs(wc[lo] - targets) <= np.abs(wc[hi] - targets), lo, hi)
    quantile = np.concatenate([[0], np.maximum.accumulate(near), [m]]).astype(np.int64)
    minmax = min_max_partition(wc, n)

    def slowest(cuts: np.ndarray) -> float:
        return float(np.diff(wc[cuts]).max(initial=0.0))

    cuts = minmax if slowest(minmax) < 0.99 * slowest(quantile) else quantile
    return np.repeat(np.arange(n, dtype=np.int64), np.diff(cuts))


def plan_groups(sizes: Any, num_partitions: int, *, min_gain: float = DEFAULT_MIN_GAIN,
                balance: bool | None = None) -> tuple[GroupMapPartitioner, dict[str, Any]]:
    """Assign measured key groups to tasks, or keep hash placement when balancing gains too little.

    The balanced plan is the best one of contiguous runs (:func:`contiguous_owner`; each
    task then reads its groups as one block per map output) when its slowest task is within
    ``CONTIGUOUS_SLACK`` of LPT's (:func:`lpt_owner`), else LPT. Hash placement is
    :func:`plain_owner`.

    Parameters
    ----------
    sizes : records (or bytes, or any load) of each of the ``m`` key groups.
    num_partitions : n reduce tasks.
    min_gain : smallest :func:`predicted_gain` for which the balanced plan is kept.
    balance : True/False forces the balanced plan/hash placement; None (default) decides by
        ``min_gain``.

    Returns
    -------
    (GroupMapPartitioner, decision) where ``decision`` holds ``balanced``, ``gain``,
    ``contiguous`` (every task one run of groups), ``hash_max_over_mean`` and
    ``planned_max_over_mean``.

    Examples
    --------
    >>> f, d = plan_groups([6, 6, 1, 1, 1, 1, 1, 1], 4)  # hash placement: both 6s on task 0
    >>> d["balanced"], round(d["gain"], 2), d["contiguous"], f.owner_of_group.tolist()
    (True, 0.5, True, [0, 1, 2, 2, 2, 2, 2, 2])
    >>> plan_groups([5] * 8, 4)[1]["balanced"]
    False
    """
    n = check_num_partitions(num_partitions)
    min_gain = check_min_gain(min_gain)
    w = np.asarray(sizes, dtype=np.float64)
    m = w.shape[0]
    plain = plain_owner(m, n)
    lpt = lpt_owner(w, n)
    run = contiguous_owner(w, n)
    hash_loads = np.bincount(plain, weights=w, minlength=n)
    lpt_loads = np.bincount(lpt, weights=w, minlength=n)
    run_loads = np.bincount(run, weights=w, minlength=n)
    contiguous = bool(run_loads.max(initial=0.0) <= lpt_loads.max(initial=0.0)
                      * (1.0 + CONTIGUOUS_SLACK))
    best, best_loads = (run, run_loads) if contiguous else (lpt, lpt_loads)
    gain = predicted_gain(hash_loads, best_loads)
    balanced = gain >= min_gain if balance is None else bool(balance)
    mean = float(w.sum()) / n if w.sum() > 0 else 1.0
    decision = {"balanced": balanced, "gain": gain, "num_groups": int(m),
                "contiguous": contiguous if balanced else True,
                "hash_max_over_mean": float(hash_loads.max(initial=0.0)) / mean,
                "planned_max_over_mean": float((best_loads if balanced else hash_loads)
                                               .max(initial=0.0)) / mean}
    # DEBUG: the operation's one INFO line (sparkbalance.spark.report.plan_report) reports the plan.
    _LOG.debug("sparkbalance auto: %s (predicted gain %.1f%% of the slowest task, min_gain "
               "%.1f%%; slowest/mean %.2f under hash, %.2f planned; %d key groups -> %d tasks)",
               ("balance by " + ("contiguous runs of" if contiguous else "LPT over")
                + " key groups") if balanced else "keep hash placement",
               100 * gain, 100 * min_gain, decision["hash_max_over_mean"],
               float(best_loads.max(initial=0.0)) / mean, m, n)
    return GroupMapPartitioner(n, best if balanced else plain), decision


#: Key groups per task of a plan fitted on a bounded sample (as many as the zero-pass plan
#: has at n >= 7: a heavy key's group then holds ~1/32 of a task's tail besides the key).
SAMPLED_GROUPS_PER_TASK: int = 32


def fit_sampled(stats: KeyStats | None, num_partitions: int, *,
                min_gain: float = DEFAULT_MIN_GAIN) -> PartitionFunction:
    """Key groups planned on a bounded sample: each listed key's cost in its group, the
    unlisted tail spread evenly over the groups (where a hash puts it), then
    :func:`plan_groups`; a :class:`HashPartitioner` unless the plan cuts the slowest task by
    ``min_gain``.

    Groups, not a routing table: a sample lists the heavy keys only, and to make room
    beside a hot key the light keys hashed with it must move too, which a table of the
    listed keys cannot do but a map of groups does (each group one range of the hash).

    Examples
    --------
    >>> from sparkbalance.stats.keystats import KeyStats
    >>> type(fit_sampled(KeyStats.from_counts({}), 4)).__name__
    'HashPartitioner'
    >>> hot = KeyStats.from_counts({"hot": 3000})
    >>> f = fit_sampled(KeyStats(hot.keys, hot.counts, tail_count=6000.0), 4)
    >>> type(f).__name__, int((f.owner_of_group == f("hot")).sum())   # hot's group alone
    ('GroupMapPartitioner', 1)
    """
    n = check_num_partitions(num_partitions)
    min_gain = check_min_gain(min_gain)
    if stats is None or len(stats) == 0:
        return HashPartitioner(n)
    m = SAMPLED_GROUPS_PER_TASK * n
    cost = np.asarray(stats.cost, dtype=np.float64)
    sizes = np.full(m, _tail_share(stats, m))
    np.add.at(sizes, key_groups(stats.keys, m), cost)
    f, info = plan_groups(sizes, n, min_gain=min_gain)
    return f if info["balanced"] else HashPartitioner(n)


def _tail_share(stats: KeyStats, n: int) -> float:
    """Each partition's share of the unlisted keys' cost (records times the listed keys'
    cost per record), as :meth:`sparkbalance.stats.workload.Workload.from_stats` has it."""
    if stats.tail_count <= 0:
        return 0.0
    per_record = stats.total_cost / stats.total_count if stats.total_count > 0 else 1.0
    return float(stats.tail_count) * per_record / n


def fit_auto(stats: KeyStats | None, num_partitions: int, *,
             current: PartitionFunction | None = None, min_gain: float = DEFAULT_MIN_GAIN,
             theta: float = DEFAULT_THETA, max_table: int | None = DEFAULT_MAX_TABLE,
             beta: float = DEFAULT_BETA) -> PartitionFunction:
    """Fit Mixed on ``stats`` and keep it only if it cuts the slowest partition by ``min_gain``.

    Parameters
    ----------
    stats : KeyStats (``cost`` per key).
    num_partitions : n.
    current : the function in use (Mixed minimises migration from it).
    min_gain : smallest :func:`predicted_gain` worth a routing table.
    theta, max_table, beta : Mixed's parameters (Fang et al. Table 2).

    Examples
    --------
    >>> from sparkbalance.stats.keystats import KeyStats
    >>> type(fit_auto(KeyStats.from_counts({f"k{i}": 1 for i in range(400)}), 4)).__name__
    'HashPartitioner'
    >>> warm = {f"w{i}": 50 for i in range(8)}
    >>> type(fit_auto(KeyStats.from_counts({**warm, **{f"k{i}": 1 for i in range(100)}}),
    ...               4)).__name__
    'RoutingTablePartitioner'
    >>> few = KeyStats.from_counts(warm)   # the same keys before a tail of 10^4 records
    >>> type(fit_auto(KeyStats(few.keys, few.counts, tail_count=1e4), 4)).__name__
    'HashPartitioner'
    """
    n = check_num_partitions(num_partitions)
    min_gain = check_min_gain(min_gain)
    plain = HashPartitioner(n)
    if stats is None or len(stats) == 0:
        _LOG.debug("sparkbalance auto: keep plain hash placement (no key statistics)")
        return plain
    from .tables import fit_mixed
    cost = np.asarray(stats.cost, dtype=np.float64)
    planned = fit_mixed(stats, n, current=current, theta=theta, max_table=max_table, beta=beta)
    # The unlisted tail (bounded statistics) spreads evenly under either function: its
    # share weighs down a gain measured on the listed keys alone.
    share = _tail_share(stats, n)
    hash_loads = np.bincount(home_partitions(stats.keys, n), weights=cost, minlength=n) + share
    plan_loads = np.bincount(planned.assign(stats.keys), weights=cost, minlength=n) + share
    gain = predicted_gain(hash_loads, plan_loads)
    keep = gain >= min_gain
    mean = float(cost.sum()) / n if cost.sum() > 0 else 1.0
    _LOG.debug("sparkbalance auto: %s (predicted gain %.1f%% of the slowest partition, "
              "min_gain %.1f%%; slowest/mean %.2f under hash, %.2f with Mixed)",
              "route by Mixed's table" if keep else "keep plain hash placement", 100 * gain,
              100 * min_gain, float(hash_loads.max()) / mean, float(plan_loads.max()) / mean)
    return planned if keep else plain
