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
           "prefix_trie", "TooManyPartitionings", "DEFAULT_MAX_PARTITIONINGS"]

#: Enumeration stops (with :class:`TooManyPartitionings`) beyond this many partitionings
#: per node count: the pairwise cost matrices of PMC grow with its square.
DEFAULT_MAX_PARTITIONINGS: int = 20_000

#: Cells (DP entries) per vectorised chunk of :func:`_trie_gains` (8 bytes each, a few
#: arrays of it live at once).
_CELLS: int = 1 << 18
#: Old partitionings per call of :func:`_trie_gains` (its trie levels hold this many
#: columns per node).
_OLD_BLOCK: int = 512


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


def _count_walks(p: Problem, k: int, ok: np.ndarray) -> float:
    """How many partitionings :func:`_walk` yields (a float: it only meets a limit).

    ``cnt[j][x]`` walks from ``x`` with ``j`` intervals left: 1 at ``x = m``, else the sum
    of ``cnt[j-1][x']`` over the ends ``lo[x] <= x' <= r[x]`` with ``ok[j-1, x']``.
    """
    m = p.m
    if not ok[k, 0]:
        return 0.0
    lo, r = _ends(p)
    cnt = np.zeros(m + 1)
    cnt[m] = 1.0
    for j in range(1, k + 1):
        pre = np.concatenate([[0.0], np.cumsum(np.where(ok[j - 1], cnt, 0.0))])
        nxt = np.zeros(m + 1)
        nxt[m] = 1.0
        hi = np.maximum(r, lo - 1)
        nxt[:m] = pre[hi + 1] - pre[np.minimum(lo, hi + 1)]
        cnt = nxt
    return float(cnt[0])


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
    if _count_walks(p, k, ok) > limit:   # refuse before walking up to the limit
        raise TooManyPartitionings(
            f"more than limit={limit} balanced partitionings of m={p.m} tasks into "
            f"{k} intervals (tau={p.tau}); raise the limit or sample candidates")
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


def prefix_trie(news: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The partitionings ``news`` as a trie of shared cut prefixes, level by level.

    Level ``d`` holds the distinct prefixes ``news[:, :d + 2]`` (the first ``d + 1`` new
    intervals): ``(parent, start, end)`` per node, ``parent`` indexing level ``d - 1``
    (level ``-1`` is one empty root), ``[start, end)`` its last interval. Sorted
    partitionings share most prefixes, so the trie has far fewer nodes than ``n' K``.
    """
    levels = []
    prev = np.zeros(news.shape[0], dtype=np.int64)
    for d in range(news.shape[1] - 1):
        uniq, inv = np.unique(news[:, :d + 2], axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        parent = np.empty(uniq.shape[0], dtype=np.int64)
        parent[inv] = prev
        levels.append((parent, uniq[:, d], uniq[:, d + 1]))
        prev = inv
    levels.append((prev, np.zeros(0), np.zeros(0)))   # last: the row of each partitioning
    return levels


def _trie_gains(sc: np.ndarray, olds: np.ndarray, levels: list) -> np.ndarray:
    """Max gain ``g[a, b]`` of every pair ``(olds[a], news[b])``: the LCS DP of
    :func:`.model.match_intervals`, one DP column per new interval, shared by all
    partitionings with the same prefix (:func:`prefix_trie`) and vectorised over ``olds``.

    ``f[i][j] = max(f[i-1][j], f[i][j-1], f[i-1][j-1] + ov[i-1][j-1])`` has a unique
    solution in which each cell adds one overlap to one earlier cell, so any evaluation
    order gives the same floats as the row-by-row pairwise DP. Overlaps use that ``sc`` is
    non-decreasing: ``sc[min(b, d)] - sc[max(a, c)] == min(sc[b], sc[d]) -
    max(sc[a], sc[c])``, clipped at 0 (no gathers in the inner loop).
    """
    n1 = olds.shape[1] - 1
    s_lo = sc[olds[:, :-1]].T.copy()            # (n1, a): sc at old interval starts
    s_hi = sc[olds[:, 1:]].T.copy()             # (n1, a): sc at old interval ends
    a = olds.shape[0]
    col = np.zeros((n1 + 1, 1, a))               # f[.][0] = 0 for the root
    last = np.zeros((0, a))
    for d, (parent, c0, c1) in enumerate(levels[:-1]):
        final = d == len(levels) - 2
        cnt = parent.shape[0]
        lo_c, hi_c = sc[c0], sc[c1]
        out = np.empty((cnt, a)) if final else np.empty((n1 + 1, cnt, a))
        step = max(1, _CELLS // max(1, (n1 + 1) * a))
        for u0 in range(0, cnt, step):
            u = slice(u0, min(cnt, u0 + step))
            prev = col[:, parent[u], :]           # (n1+1, u, a)
            ov = np.minimum(s_hi[:, None, :], hi_c[u][None, :, None])
            ov -= np.maximum(s_lo[:, None, :], lo_c[u][None, :, None])
            np.maximum(ov, 0.0, out=ov)
            ov += prev[:-1]                        # diagonal: f[i-1][j-1] + ov
            np.maximum(ov, prev[1:], out=ov)       # best[i] = max(f[i][j-1], diagonal)
            if final:
                out[u] = ov.max(axis=0) if n1 else 0.0
            else:
                blk = out[:, u, :]
                blk[0] = 0.0
                for i in range(1, n1 + 1):         # f[i][j] = max(f[i-1][j], best[i])
                    np.maximum(blk[i - 1], ov[i - 1], out=blk[i])
        if final:
            last = out
        else:
            col = out
    return last[levels[-1][0]].T                  # (a, b): rows of olds, columns of news


def pairwise_costs(sizes_prefix: np.ndarray, olds: np.ndarray, news: np.ndarray, *,
                   trie: list | None = None) -> np.ndarray:
    """Optimal migration cost from every ``olds[a]`` to every ``news[b]`` (a x b matrix).

    The same values as :func:`.model.match_intervals` pair by pair, computed over a trie
    of the new partitionings' shared prefixes (:func:`_trie_gains`). ``trie``: the
    :func:`prefix_trie` of ``news``, when the caller reuses it across calls.

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
    if a == 0 or b == 0:
        return np.empty((a, b))
    levels = prefix_trie(news) if trie is None else trie
    out = np.empty((a, b))
    for i0 in range(0, a, _OLD_BLOCK):
        blk = olds[i0:i0 + _OLD_BLOCK]
        out[i0:i0 + blk.shape[0]] = total - _trie_gains(sizes_prefix, blk, levels)
    return np.maximum(out, 0.0)
