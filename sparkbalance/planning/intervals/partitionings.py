"""Sets of balanced partitionings and batched migration costs between them (for OMS, PMC).

By Lemmas 4.1-4.2 of Ding et al. only the *partitioning* (the set of task intervals) matters
for future migrations, not which node owns which interval, and empty intervals are
interchangeable. A partitioning into at most ``k`` intervals is therefore stored
canonically: its non-empty intervals in order, padded with empty intervals ``[m, m)`` at
the end to ``k + 1`` cut points.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

from .model import Problem

__all__ = ["coverable", "enumerate_partitionings", "sample_partitionings", "pairwise_costs",
           "TooManyPartitionings", "DEFAULT_MAX_PARTITIONINGS"]

#: Enumeration stops (with :class:`TooManyPartitionings`) beyond this many partitionings
#: per node count: the pairwise cost matrices of PMC grow with its square.
DEFAULT_MAX_PARTITIONINGS: int = 20_000

#: Pairs of partitionings per numpy batch in :func:`pairwise_costs` (memory ~ batch*n*n' floats).
_BATCH_PAIRS: int = 4096


class TooManyPartitionings(ValueError):
    """More balanced partitionings than the enumeration limit."""


def coverable(p: Problem, k_max: int) -> np.ndarray:
    """``ok[k, x]``: tasks ``[x, m)`` split into ``k`` intervals meeting the bound(s).

    With the one-sided bound (no ``min_load``) this is "at most k non-empty intervals".
    """
    m = p.m
    wc = p.wc
    ok = np.zeros((k_max + 1, m + 1), dtype=bool)
    ok[:, m] = True if p.low <= 0 else False
    ok[0, m] = True
    r = np.searchsorted(wc, wc[:-1] + p.cap, side="right") - 1
    if p.low > 0:
        lo = np.maximum(np.searchsorted(wc, wc[:-1] + p.low, side="left"), np.arange(1, m + 1))
    else:
        lo = np.arange(1, m + 1)
    for k in range(1, k_max + 1):
        prev = np.concatenate([[0], np.cumsum(ok[k - 1].astype(np.int64))])
        # any ok[k-1, x'] with lo[x] <= x' <= r[x]
        hi = np.maximum(r, lo - 1)
        ok[k, :m] = (prev[hi + 1] - prev[np.minimum(lo, hi + 1)]) > 0
    return ok


def _ends(p: Problem) -> tuple[np.ndarray, np.ndarray]:
    m = p.m
    r = np.searchsorted(p.wc, p.wc[:-1] + p.cap, side="right") - 1
    if p.low > 0:
        lo = np.maximum(np.searchsorted(p.wc, p.wc[:-1] + p.low, side="left"), np.arange(1, m + 1))
    else:
        lo = np.arange(1, m + 1)
    return lo, r


def _walk(p: Problem, k: int, ok: np.ndarray) -> Iterator[list[int]]:
    m = p.m
    lo, r = _ends(p)

    def rec(x: int, left: int, cuts: list[int]) -> Iterator[list[int]]:
        if x == m:
            yield cuts
            return
        for x2 in range(int(lo[x]), int(r[x]) + 1):
            if ok[left - 1, x2]:
                cuts.append(x2)
                yield from rec(x2, left - 1, cuts)
                cuts.pop()

    if ok[k, 0]:
        yield from rec(0, k, [0])


def _pad(cuts: list[int], k: int, m: int) -> np.ndarray:
    return np.asarray(cuts + [m] * (k + 1 - len(cuts)), dtype=np.int64)


def enumerate_partitionings(p: Problem, k: int | None = None,
                            limit: int = DEFAULT_MAX_PARTITIONINGS) -> np.ndarray:
    """All balanced partitionings of ``p``'s tasks into ``k`` (default n') intervals.

    Returns an array ``(count, k + 1)`` of canonical cut points (empties at the end).
    Raises :class:`TooManyPartitionings` beyond ``limit``.

    Examples
    --------
    >>> from sparkbalance.planning.intervals.model import make_problem
    >>> enumerate_partitionings(make_problem([1] * 4, [1] * 4, [0, 4], 2, 0.0)).tolist()
    [[0, 2, 4]]
    """
    k = p.num_nodes if k is None else k
    ok = coverable(p, k)
    out = []
    for cuts in _walk(p, k, ok):
        out.append(_pad(list(cuts), k, p.m))
        if len(out) > limit:
            raise TooManyPartitionings(
                f"more than limit={limit} balanced partitionings of m={p.m} tasks into "
                f"{k} intervals (tau={p.tau}); raise the limit or sample candidates")
    return np.asarray(out, dtype=np.int64).reshape(len(out), k + 1)


def sample_partitionings(p: Problem, count: int, k: int | None = None,
                         rng: np.random.Generator | None = None) -> np.ndarray:
    """Up to ``count`` distinct random balanced partitionings (random feasible walks)."""
    k = p.num_nodes if k is None else k
    rng = np.random.default_rng(0) if rng is None else rng
    ok = coverable(p, k)
    if not ok[k, 0]:
        return np.zeros((0, k + 1), dtype=np.int64)
    lo, r = _ends(p)
    seen: set[tuple[int, ...]] = set()
    for _ in range(count * 4):
        x, left, cuts = 0, k, [0]
        while x < p.m:
            cand = np.arange(int(lo[x]), int(r[x]) + 1)
            cand = cand[ok[left - 1, cand]]
            x = int(rng.choice(cand))
            cuts.append(x)
            left -= 1
        seen.add(tuple(_pad(cuts, k, p.m).tolist()))
        if len(seen) >= count:
            break
    return np.asarray(sorted(seen), dtype=np.int64).reshape(len(seen), k + 1)


def _batch_gain(sc: np.ndarray, old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Max gain for each pair ``(old[b], new[b])`` (LCS DP of model.match_intervals)."""
    bsz, n1 = old.shape[0], old.shape[1] - 1
    n2 = new.shape[1] - 1
    lo = np.maximum(old[:, :-1, None], new[:, None, :-1])
    hi = np.minimum(old[:, 1:, None], new[:, None, 1:])
    ov = np.where(hi > lo, sc[np.maximum(hi, lo)] - sc[lo], 0.0)
    prev = np.zeros((bsz, n2 + 1))
    for i in range(n1):
        row = np.zeros((bsz, n2 + 1))
        diag = prev[:, :-1] + ov[:, i, :]
        best = np.maximum(prev[:, 1:], diag)
        # row[j] = max(best[j-1], row[j-1]): a running maximum along j
        row[:, 1:] = np.maximum.accumulate(best, axis=1)
        prev = row
    return prev[:, -1]


def pairwise_costs(sizes_prefix: np.ndarray, olds: np.ndarray, news: np.ndarray) -> np.ndarray:
    """Optimal migration cost from every ``olds[a]`` to every ``news[b]`` (a x b matrix).

    Examples
    --------
    >>> sc = np.arange(21.0)
    >>> pairwise_costs(sc, np.array([[0, 13, 20]]), np.array([[0, 4, 13, 20]])).tolist()
    [[4.0]]
    """
    olds = np.asarray(olds, dtype=np.int64)
    news = np.asarray(news, dtype=np.int64)
    a, b = olds.shape[0], news.shape[0]
    total = float(sizes_prefix[-1])
    out = np.empty((a, b))
    if a == 0 or b == 0:
        return out
    per = max(1, _BATCH_PAIRS // max(1, b))
    for i0 in range(0, a, per):
        blk = olds[i0:i0 + per]
        o = np.repeat(blk, b, axis=0)
        nn = np.tile(news, (blk.shape[0], 1))
        out[i0:i0 + blk.shape[0]] = (total - _batch_gain(sizes_prefix, o, nn)).reshape(-1, b)
    return np.maximum(out, 0.0)

