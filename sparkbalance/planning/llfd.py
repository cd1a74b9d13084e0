"""Least-Load Fit Decreasing with Adjust and exchangeable sets (Fang et al. §3.1, Algorithm 1).

LLFD(C): for k in C by decreasing c(k), for d by increasing L(d): if Adjust(k, d) place k on
d. ``Adjust(k, d)`` is TRUE when L(d) + c(k) <= (1 + θ_max)·L̄; otherwise it looks for an
*exchangeable set* E of keys on d, each lighter than k, chosen by the planner's selection
criterion, whose removal makes room: L(d) + c(k) − Σ_E c <= (1 + θ_max)·L̄. E goes back
into C. If no partition accepts k, k goes to the least-loaded partition and the plan is
reported infeasible (no endless loop: a step budget also bounds the ejection chains).

Pure functions over :class:`~sparkbalance.planning.units.Units`: the planners
(:mod:`.base`) call them, this module imports no planner. :class:`LLFD` as a planner lives in
:mod:`.baselines`.
"""
from __future__ import annotations

import heapq

import numpy as np

from .candidates import CandidateQueue
from .units import IN_C, Units

__all__ = ["run_llfd", "llfd_assign", "STEP_BUDGET_PER_CANDIDATE"]

#: Ejection chains terminate (each ejection swaps in a strictly heavier key) but may be
#: long; after this many steps per initial candidate (plus a floor) LLFD stops adjusting
#: and places the rest on the least-loaded partitions. Conservative: never hit in tests.
STEP_BUDGET_PER_CANDIDATE: int = 64
_STEP_BUDGET_FLOOR: int = 10_000
_CHUNK: int = 4096


class _Members:
    """Per-partition unit lists in decreasing criterion order, for exchangeable sets.

    ``static[d]``: the units on ``d`` when ``d`` is first asked for, ranked; units placed
    later are in ``added[d]``. The units on ``d`` at any time are among those on ``d`` when
    LLFD started and those placed on it since (``added``; ejected units go to C), so
    ``static[d]`` ranks that union, filtered, instead of ranking every unit (a stable sort
    of 10^7 floats) and scanning all of them per partition.
    """

    def __init__(self, units: Units) -> None:
        self.u = units
        self.static: dict[int, _Ranked] = {}
        self.added: dict[int, list[int]] = {}
        # who is where when LLFD starts, in the narrowest type (a 20 MB scan per partition)
        a = units.asg[: units.N]
        self._start = a.astype(np.int16 if units.n < 2 ** 15 else np.int64)

    def note_added(self, d: int, v: int) -> None:
        self.added.setdefault(d, []).append(v)

    def _static(self, d: int) -> "_Ranked":
        s = self.static.get(d)
        if s is None:
            u = self.u
            idx = np.flatnonzero(self._start == d)
            dyn = self.added.get(d)
            if dyn:
                idx = np.union1d(idx, np.asarray(dyn, dtype=np.int64))
            s = _Ranked(u, idx[u.asg[idx] == d])
            self.static[d] = s
        return s

    def exchangeable(self, ck: float, d: int, need: float, tol: float
                     ) -> tuple[np.ndarray, np.ndarray] | None:
        """E on partition ``d``: keys lighter than ``ck`` whose cost sums to >= ``need``.

        Returns (units, keys taken per unit) or None when no such set exists.
        """
        u = self.u
        asg, c, cnt, crit = u.asg, u.c, u.cnt, u.crit
        static = self._static(d)
        got_i: list[np.ndarray] = []
        total = 0.0
        for s in range(0, static.size, _CHUNK):
            ch = static.head(s + _CHUNK)[s:s + _CHUNK]
            ok = ch[(asg[ch] == d) & (c[ch] < ck) & (c[ch] > 0) & (crit[ch] > -np.inf)]
            if ok.size:
                got_i.append(ok)
                total += float((c[ok] * cnt[ok]).sum())
                if total >= need - tol:
                    break
        dyn = self.added.get(d)
        if dyn:
            dv = np.asarray(dyn, dtype=np.int64)
            dv = dv[(asg[dv] == d) & (c[dv] < ck) & (c[dv] > 0) & (crit[dv] > -np.inf)]
            # a unit placed on d, ejected and placed there again is listed twice: once
            # (first place kept) so that its cost counts once towards the need
            _, first = np.unique(dv, return_index=True)
            if first.size < dv.size:
                dv = dv[np.sort(first)]
            if dv.size:
                got_i.append(dv)
        if not got_i:
            return None
        cand = np.unique(np.concatenate(got_i)) if len(got_i) > 1 else got_i[0]
        cand = cand[np.argsort(-crit[cand], kind="stable")]
        w = c[cand] * cnt[cand]
        cw = np.cumsum(w)
        if cw[-1] < need - tol:
            return None
        j = int(np.searchsorted(cw, need - tol, side="left"))
        take = cnt[cand[: j + 1]].copy()
        rem = need - (cw[j - 1] if j > 0 else 0.0)
        last = int(cand[j])
        take[-1] = max(1, min(int(cnt[last]), int(np.ceil(max(rem - tol, 0.0) / c[last] - 1e-12))))
        return cand[: j + 1], take


class _Ranked:
    """Units ranked by decreasing ``crit`` (ties by index), sorted only as far as read.

    :meth:`head` returns a prefix of the full ranking: the top k by partial partition,
    with every unit tied with the k-th (k quadruples as the reader goes deeper). An
    exchangeable set usually needs a few chunks of a partition's 10^5 units, not a sort
    of all of them.
    """

    def __init__(self, units: Units, idx: np.ndarray) -> None:
        self.u = units
        self.idx = idx                   # ascending
        self.size = int(idx.shape[0])
        self._head = idx[:0]

    def head(self, m: int) -> np.ndarray:
        """At least the first ``min(m, size)`` units of the ranking."""
        h = self._head
        if h.shape[0] < min(m, self.size):
            k = max(m, 4 * h.shape[0], _CHUNK)
            if k >= self.size:
                h = self.u.ranked(self.idx)
            else:
                key = -self.u.crit[self.idx]
                sub = np.flatnonzero(key <= np.partition(key, k - 1)[k - 1])
                h = self.idx[sub[np.argsort(key[sub], kind="stable")]]
            self._head = h
        return h


def run_llfd(units: Units, C: list[int], cap: float, tol: float, criterion: str = "c"
             ) -> dict[str, int]:
    """Phase III: place every unit of ``C`` (in place on ``units.asg``).

    Returns counters: ``steps``, ``ejections``, ``fallbacks`` (keys that no partition could
    take within the cap — the balance goal is then out of reach for this trial), and
    ``budget_exhausted``.
    """
    u = units
    n = u.n
    L = u.loads()
    members = _Members(u)
    queue = CandidateQueue()
    Ca = np.asarray(C, dtype=np.int64)
    queue.push_run(u.c[Ca], Ca)
    budget = _STEP_BUDGET_FLOOR + STEP_BUDGET_PER_CANDIDATE * len(C)

    placed_on = [f"Phase III (LLFD): placed on least-loaded fitting partition {d}"
                 for d in range(n)] if u.single else []

    def fitting_run() -> int:
        """Place single keys while the least-loaded partition takes them within the cap.

        The common step of the loop below for a key (count 1), without numpy per key: the
        least-loaded partition from a heap of (L(d), d) (ties: lowest d, as argmin), the
        queue read in place; the decisions, identical, are written back afterwards.
        Returns how many keys it placed.
        """
        if not queue:
            return 0
        nxt = queue.peek_cost()
        if not float(L.min()) + nxt <= max(cap, nxt) + tol:
            return 0
        ph = list(zip(L.tolist(), range(n)))
        heapq.heapify(ph)
        vs: list[int] = []
        ds: list[int] = []
        replace = heapq.heapreplace
        while queue:
            negc, units, lo, hi = queue.block()
            i = lo
            while i < hi:
                ck = -negc[i]
                Ld, d = ph[0]
                if not Ld + ck <= (cap if cap >= ck else ck) + tol:
                    break
                replace(ph, (Ld + ck, d))
                ds.append(d)
                i += 1
            vs.extend(units[lo:i])
            queue.advance(i - lo)
            if i < hi:
                break
        loads, parts = zip(*ph)
        L[list(parts)] = loads
        va = np.asarray(vs, dtype=np.int64)
        u.asg[va] = ds
        home_now = (u.cur[va] == ds).tolist()
        reason, added = u.reason, members.added
        for v, d, same in zip(vs, ds, home_now):
            lst = added.get(d)                 # members.note_added and _note, inlined
            if lst is None:
                lst = added[d] = []
            lst.append(v)
            prev = reason.get(v)
            if prev is None or not same:
                text = placed_on[d]
                reason[v] = text if prev is None or prev in text else f"{prev}; then {text}"
        return len(vs)

    def place(v: int, m: int, q: int, d: int, ck: float) -> int:
        """Put ``q`` of record ``v``'s ``m`` keys on ``d`` (all when q >= m); re-queue the rest."""
        w = v if q >= m else u.split(v, q)
        u.asg[w] = d
        members.note_added(d, w)
        L[d] += ck * q
        if w != v:
            queue.push(ck, v)
        return w

    steps = ejections = fallbacks = 0
    exhausted = 0
    while True:
        if u.single:
            steps += fitting_run()
            if steps > budget:
                exhausted = 1
        v = queue.pop()
        if v < 0:
            break
        m = int(u.cnt[v])
        if m <= 0:
            continue
        ck = float(u.c[v])
        # a key heavier than the cap may still go alone on a partition (target max(cap, c))
        cap_k = max(cap, ck)
        cap_t = cap_k + tol
        steps += 1
        if steps > budget:
            exhausted = 1
        if m > 1 and ck > 0:
            # A compact record: its keys would go one by one to the least-loaded partition;
            # place them all at once by water-filling (same counts, one step).
            counts = _waterfill(L, ck, m, cap_t)
            if counts.sum() > 0:
                rest = m - int(counts.sum())
                dests = np.flatnonzero(counts).tolist()
                for j, d in enumerate(dests):
                    q = int(counts[d])
                    w = v if (rest == 0 and j == len(dests) - 1) else u.split(v, q)
                    u.asg[w] = d
                    members.note_added(d, w)
                    L[d] += ck * q
                    _note(u, w, f"Phase III (LLFD): placed on least-loaded fitting partition "
                                f"{d}")
                if rest > 0:
                    queue.push(ck, v)
                continue
        d0 = int(np.argmin(L))      # == the first of the stable order below
        if L[d0] + ck <= cap_t:
            # The common step: the least-loaded partition fits (no sort of L needed; at
            # 10^7 keys sorting L for every placed key was a fifth of the plan).
            q = m
            if ck > 0:
                q = min(q, int((cap_t - L[d0]) // ck))
                if n > 1 and m > 1:
                    q = min(q, max(1, int((float(np.partition(L, 1)[1]) - L[d0]) // ck) + 1))
            w = place(v, m, max(q, 1), d0, ck)
            if w not in u.reason or u.asg[w] != u.cur[w]:
                _note(u, w, f"Phase III (LLFD): placed on least-loaded fitting partition "
                            f"{d0}")
            continue
        order = np.argsort(L, kind="stable").tolist()
        placed = False
        for i, d in enumerate(order):
            if L[d] + ck <= cap_t:
                # Adjust TRUE without exchange. A record's keys go one by one to the least
                # loaded partition; batch them while d stays the least loaded (water-fill).
                q = m
                if ck > 0:
                    q = min(q, int((cap_t - L[d]) // ck))
                    if n > 1 and m > 1:
                        nxt = L[order[1]] if i == 0 else L[order[0]]
                        q = min(q, max(1, int((nxt - L[d]) // ck) + 1))
                w = place(v, m, max(q, 1), d, ck)
                if w not in u.reason or u.asg[w] != u.cur[w]:
                    _note(u, w, f"Phase III (LLFD): placed on least-loaded fitting partition "
                                f"{d}")
                placed = True
                break
            if exhausted or ck <= 0:
                continue
            need = L[d] + ck - cap_k
            found = members.exchangeable(ck, d, need, tol)
            if found is None:
                continue
            E, take = found
            text = (f"Phase III (Adjust): ejected from partition {d} as part of the "
                    f"exchangeable set making room for a key of cost {ck:.4g}")
            if u.single:
                # Single keys (take = 1 each): the loop below, with L(d) still reduced key
                # by key in the same order (Python floats), and the set queued as one run.
                u.asg[E] = IN_C
                ce = u.c[E]
                Ld = float(L[d])
                for x in ce.tolist():
                    Ld -= x
                L[d] = Ld
                for e in E.tolist():
                    _note(u, e, text)
                queue.push_run(ce, E)
                ejections += int(E.shape[0])
            else:
                for e, t in zip(E.tolist(), take.tolist()):
                    if t < u.cnt[e]:
                        e = u.split(e, t)
                    u.asg[e] = IN_C
                    L[d] -= u.c[e] * u.cnt[e]
                    _note(u, e, text)
                    queue.push(float(u.c[e]), e)
                    ejections += 1
            w = place(v, m, 1, d, ck)
            _note(u, w, f"Phase III (Adjust): placed on {d} after ejecting lighter keys")
            placed = True
            break
        if not placed:
            # Nothing fits within the cap: least-loaded partition, one key at a time.
            w = place(v, m, 1, order[0], ck)
            d = order[0]
            fallbacks += 1
            _note(u, w, f"Phase III (LLFD): no partition could take it within the cap; "
                        f"placed on least-loaded partition {d} (balance goal missed)")
    return {"steps": steps, "ejections": ejections, "fallbacks": fallbacks,
            "budget_exhausted": exhausted}


def _waterfill(L: np.ndarray, ck: float, m: int, cap_t: float) -> np.ndarray:
    """Keys per partition when ``m`` keys of cost ``ck`` go one by one to the least loaded.

    Water level T over the sorted loads, floor, leftovers to the lowest, then clipped to
    what fits under ``cap_t`` (the clipped keys stay in C for the next step).
    """
    n = L.shape[0]
    o = np.argsort(L, kind="stable")
    Ls = L[o]
    k = np.arange(1, n + 1)
    T = (np.cumsum(Ls) + m * ck) / k
    active = int(np.flatnonzero(Ls < T)[-1]) + 1 if np.any(Ls < T) else 1
    level = T[active - 1]
    base = np.zeros(n, dtype=np.int64)
    base[:active] = np.floor((level - Ls[:active]) / ck + 1e-9).astype(np.int64)
    base = np.maximum(base, 0)
    left = m - int(base.sum())
    if left > 0:
        nxt = Ls + base * ck
        base[np.argsort(nxt, kind="stable")[:left]] += 1
    elif left < 0:  # float rounding: take back from the highest
        nxt = Ls + base * ck
        for j in np.argsort(-nxt, kind="stable").tolist():
            if left == 0:
                break
            t = min(int(base[j]), -left)
            base[j] -= t
            left += t
    fit = np.floor((cap_t - Ls) / ck + 1e-12).astype(np.int64)
    base = np.minimum(base, np.maximum(fit, 0))
    out = np.zeros(n, dtype=np.int64)
    out[o] = base
    return out


def _note(u: Units, v: int, text: str) -> None:
    prev = u.reason.get(v)
    u.reason[v] = text if prev is None or prev in text else f"{prev}; then {text}"


def llfd_assign(cost: np.ndarray, num_partitions: int, theta: float = 0.0) -> np.ndarray:
    """LLFD from scratch: every key in C, all partitions empty (Appendix A's setting).

    Returns the partition of every key. Used for Theorem 1 checks.

    Examples
    --------
    >>> llfd_assign(np.array([3., 3., 2., 2., 2.]), 2).tolist()
    [0, 1, 0, 1, 0]
    """
    cost = np.asarray(cost, dtype=np.float64)
    k = cost.shape[0]
    zeros = np.zeros(k, dtype=np.int64)
    u = Units(cost, np.ones(k), np.ones(k, dtype=np.int64), zeros, zeros,
              np.zeros(k, dtype=bool), cost, num_partitions)
    u.asg[:k] = IN_C
    mean = cost.sum() / num_partitions
    run_llfd(u, list(range(k)), (1.0 + theta) * mean, 1e-9 * max(mean, 1e-300))
    return u.asg[:k].copy()
