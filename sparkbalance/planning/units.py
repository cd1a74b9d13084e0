"""Working state shared by the planners: "units" = keys (exact) or compact records.

A unit stands for ``count`` keys that share per-key cost ``c``, state ``S``, hash home and
current destination (Fang et al. §4.1: a record (next, current, home, c, S, count); an exact
key is a record with count 1). Planners move whole units, or split off part of a unit
when only some of its keys must move. ``asg`` is the working destination ("next");
``-1`` means "in the candidate set C".

Phases I (cleaning) and II (preparing) of Fang et al. §3 live here; Phase III is
:mod:`sparkbalance.planning.llfd`.
"""
from __future__ import annotations

import numpy as np

__all__ = ["Units", "IN_C"]

#: ``asg`` value of a unit that sits in the candidate set C.
IN_C: int = -1


class Units:
    """Growable parallel arrays of units; one instance per planning trial.

    Attributes
    ----------
    c, S : per-key cost and state size of the unit's keys.
    cnt : number of keys (int64).
    home, cur : hash home h(k) and current destination F(k).
    asg : working destination F'(k) (``IN_C`` while in the candidate set).
    in_table : the unit's keys have a routing-table entry today.
    crit : selection criterion (higher = taken first), fixed per planner.
    origin : index of the base unit a split part came from (for realisation).
    """

    __slots__ = ("n", "N", "c", "S", "cnt", "home", "cur", "_asg", "_packed", "in_table",
                 "crit", "_origin", "reason", "single")

    def __init__(self, c: np.ndarray, S: np.ndarray, cnt: np.ndarray, home: np.ndarray,
                 cur: np.ndarray, in_table: np.ndarray, crit: np.ndarray,
                 num_partitions: int, single: bool = False) -> None:
        self.n = int(num_partitions)
        self.N = int(c.shape[0])
        # The base arrays are shared with the caller and the other trials of a plan, not
        # copied: only ``asg`` changes in place before a split, and the first split grows
        # (copies) every array, since they start exactly full. One copy of nine arrays per
        # trial was 650 MB per trial at 10^7 keys, kept for every trial of a plan.
        self.c = np.asarray(c, dtype=np.float64)
        self.S = np.asarray(S, dtype=np.float64)
        self.cnt = np.asarray(cnt, dtype=np.int64)
        self.home = np.asarray(home, dtype=np.int64)
        self.cur = np.asarray(cur, dtype=np.int64)
        self.asg = np.array(cur, dtype=np.int64)
        self.in_table = np.asarray(in_table, dtype=bool)
        self.crit = np.asarray(crit, dtype=np.float64)
        self._origin: np.ndarray | None = None    # arange(N) until the first split
        self.reason: dict[int, str] = {}
        # ``single``: the caller knows every count is 1 (exact keys), so c·cnt = c and
        # S·cnt = S exactly and the per-key products (a pass and 80 MB each at 10^7 keys)
        # are skipped; a split clears it.
        self.single = bool(single)

    # -- bookkeeping -------------------------------------------------------------------
    def split(self, u: int, m: int) -> int:
        """Split ``m`` keys off unit ``u`` into a new unit (same fields) and return it."""
        if self._origin is None:
            self._origin = np.arange(self.c.shape[0], dtype=np.int64)
        if self.N == self.c.shape[0]:
            for name in ("c", "S", "cnt", "home", "cur", "asg", "in_table", "crit", "_origin"):
                arr = getattr(self, name)
                setattr(self, name, _grow(arr, 2 * arr.shape[0]))
        v = self.N
        self.N += 1
        self.single = False
        for arr in (self.c, self.S, self.home, self.cur, self.asg, self.in_table, self.crit,
                    self._origin):
            arr[v] = arr[u]
        self.cnt[v] = m
        self.cnt[u] -= m
        if u in self.reason:
            self.reason[v] = self.reason[u]
        return v

    def copy(self) -> "Units":
        """An independent copy. Single keys never split, so only ``asg`` and the reasons
        changed and the other arrays stay shared; otherwise every array is copied."""
        new = object.__new__(Units)
        for name in Units.__slots__:
            value = getattr(self, name)
            if isinstance(value, np.ndarray) and (name == "_asg" or not self.single):
                value = value.copy()
            setattr(new, name, value)
        new.reason = dict(self.reason)
        return new

    @property
    def asg(self) -> np.ndarray:
        """Working destinations F'(k), rebuilt from the packed form (:meth:`pack`) on use."""
        a = self._asg
        if a is None:
            moved, dest = self._packed
            a = np.array(self.cur, dtype=np.int64)
            a[moved] = dest
            self._asg, self._packed = a, None
        return a

    @asg.setter
    def asg(self, value: np.ndarray) -> None:
        self._asg, self._packed = value, None

    def pack(self) -> None:
        """Single keys: keep only the units away from F(k) until ``asg`` is used again.

        A finished trial then holds its moves, not a full ``asg`` (80 MB at 10^7 keys, and
        Mixed keeps up to eight trials; on this machine every fresh 80 MB costs ~0.17 CPU s
        of first-touch page faults, so peak memory is also time).
        """
        if self.single and self._asg is not None:
            self._packed, self._asg = self._diff(), None

    def snapshot(self) -> "Units | tuple[np.ndarray, np.ndarray, dict[int, str]]":
        """This state, to rebuild with :meth:`restore`: for single keys only what differs
        from the shared arrays (packs this Units), else a copy."""
        if not self.single:
            return self.copy()
        self.pack()
        moved, dest = self._packed
        return moved, dest, dict(self.reason)

    def _diff(self) -> tuple[np.ndarray, np.ndarray]:
        a = self._asg[: self.N]
        moved = np.flatnonzero(a != self.cur[: self.N])
        return moved, a[moved]

    def restore(self, snap: "Units | tuple[np.ndarray, np.ndarray, dict[int, str]]"
                ) -> "Units":
        """A new Units in the state ``snap`` taken by :meth:`snapshot` of a Units that
        shares this one's base arrays."""
        if isinstance(snap, Units):
            return snap.copy()
        moved, dest, reason = snap
        new = object.__new__(Units)
        for name in Units.__slots__:
            setattr(new, name, getattr(self, name))
        new._asg, new._packed = None, (moved, dest)
        new.reason = dict(reason)
        return new

    @property
    def origin(self) -> np.ndarray:
        """Index of the base unit each unit came from (a split part: its source's)."""
        if self._origin is None:
            self._origin = np.arange(self.c.shape[0], dtype=np.int64)
        return self._origin

    def view(self, name: str) -> np.ndarray:
        return getattr(self, name)[: self.N]

    def loads(self) -> np.ndarray:
        """L(d) over units placed (``asg >= 0``)."""
        # Units in C (asg = -1) are parked in an extra bin n for the count and dropped: the
        # same sums, in the same order, as a bincount of the placed units alone, without
        # copying the placed ones (each 80 MB temporary at 10^7 units cost ~50 ms in
        # page faults alone).
        a = self.asg[: self.N]
        w = self.c[: self.N] if self.single else self.c[: self.N] * self.cnt[: self.N]
        in_c = np.flatnonzero(a < 0) if a.shape[0] and a.min() < 0 else None
        if in_c is not None:
            a[in_c] = self.n
        out = np.bincount(a, weights=w, minlength=self.n + 1)[: self.n].astype(np.float64)
        if in_c is not None:
            a[in_c] = IN_C
        return out

    def migration(self) -> float:
        """Σ S(k) over the keys whose working destination differs from F(k)."""
        moved = self.asg[: self.N] != self.cur[: self.N]
        if self.single:
            return float(self.S[: self.N][moved].sum())
        return float((self.S[: self.N] * self.cnt[: self.N])[moved].sum())

    def ranked(self, idx: np.ndarray) -> np.ndarray:
        """Units ``idx`` (ascending) by decreasing ``crit``, ties by index: the stable
        decreasing-crit order of all units restricted to ``idx``.

        Ranking only the units a phase looks at: the order of all units was a stable sort
        of 10^7 floats per criterion and plan, about 1.5 CPU s each.
        """
        return idx[np.argsort(-self.crit[idx], kind="stable")]

    def ranked_until(self, idx: np.ndarray, need: float) -> np.ndarray:
        """The shortest prefix of :meth:`ranked` ``(idx)`` that holds the first unit
        where the running Σ c·cnt reaches ``need`` (all of it when none does).

        Top-k by partial partition, k doubling: each candidate set takes every unit tied
        with its k-th value, so it is exactly a prefix of the full ranking, and the running
        sums over it are the full ranking's (``cumsum`` adds left to right).
        """
        m = idx.shape[0]
        k = 64
        key = -self.crit[idx]
        while k < m:
            v = np.partition(key, k - 1)[k - 1]
            sub = np.flatnonzero(key <= v)
            top = idx[sub[np.argsort(key[sub], kind="stable")]]
            if np.cumsum(self.c[top] * self.cnt[top])[-1] >= need:
                return top
            k *= 4
        return self.ranked(idx)

    def table_size(self, stale: int = 0) -> int:
        """|R'| = stale entries kept + keys placed away from their home."""
        a = self.asg[: self.N]
        away = a != self.home[: self.N]
        if self.single:
            return int(stale + np.count_nonzero(away))
        return int(stale + self.cnt[: self.N][away].sum())

    def truncate_table(self, limit: int) -> int:
        """Send keys back home until at most ``limit`` keys sit away from h(k).

        Keeps the entries of highest c(k) (they carry the most load off their home; a
        compact record is split when only part of it fits). Returns the keys sent home.
        Used when no trial of a planner fits A_max (``PlanningContext.within_limit``).
        """
        N = self.N
        away = np.flatnonzero(self.asg[:N] != self.home[:N])
        away = away[np.argsort(-self.c[away], kind="stable")]
        left = max(int(limit), 0)
        text = (f"A_max: no plan of this planner fits the table limit {limit}; "
                "entry dropped, back to its hash home (lightest entries first)")
        if self.single:  # one key per entry: the first ``left`` stay, the rest go home
            home = away[left:]
            self.asg[home] = self.home[home]
            self.reason.update(dict.fromkeys(home.tolist(), text))
            return int(home.shape[0])
        sent = 0
        for u in away.tolist():
            m = int(self.cnt[u])
            if m <= left:
                left -= m
                continue
            if left > 0:  # keep ``left`` keys of this record where they are
                self.split(u, left)
                m -= left
                left = 0
            self.asg[u] = self.home[u]
            self.reason[u] = text
            sent += m
        return sent

    # -- Phase I: cleaning -------------------------------------------------------------
    def move_back(self, n_back: int, order: np.ndarray) -> int:
        """Move back (virtually) the first ``n_back`` table keys of ``order`` to h(k).

        ``order``: units with table entries, in cleaning order (Mixed: smallest S first).
        Returns the number of keys moved back.
        """
        left = int(n_back)
        done = 0
        for u in order.tolist():
            if left <= 0:
                break
            m = int(self.cnt[u])
            if m > left:  # compact record: only part of it goes home
                u = self.split(u, left)
                m = left
            self.asg[u] = self.home[u]
            self.reason[u] = "Phase I (cleaning): entry removed, back to its hash home"
            left -= m
            done += m
        return done

    # -- Phase II: preparing -------------------------------------------------------------
    def prepare(self, cap: float, tol: float, criterion: str, floor: float | None = None
                ) -> list[int]:
        """Take keys off every overloaded partition (L(d) > cap) by decreasing ``crit``.

        Stops per partition as soon as it is no longer overloaded; the last record is split
        so that only the keys needed leave. Returns the units put into C.

        Extension (not in the paper): a key heavier than the cap fits nowhere, so the
        heaviest key of a partition is *pinned* when c(k) > cap and the partition's target
        becomes max(cap, c(k)) — it ends holding that key alone, the lower bound
        max c / L̄ instead of the paper's arbitrary fallback.
        """
        L = self.loads()
        N = self.N
        a = self.asg[:N]
        c = self.c[:N]
        target = np.full(self.n, cap)
        pinned = np.full(self.n, -1, dtype=np.int64)
        heavy = np.flatnonzero((a >= 0) & (c > cap))
        if heavy.size:
            heavy = heavy[np.argsort(c[heavy], kind="stable")]  # last write = heaviest
            pinned[a[heavy]] = heavy
            has = pinned >= 0
            target[has] = c[pinned[has]]
            for d in np.flatnonzero(has).tolist():
                p = int(pinned[d])
                if self.cnt[p] > 1:  # pin a single key of the record
                    pinned[d] = self.split(p, 1)
            N = self.N
            a = self.asg[:N]
            c = self.c[:N]
        over = np.flatnonzero(L > target + tol)
        taken: list[int] = []
        if over.size == 0:
            return taken
        # keys of cost 0 never help (and S=0 would give them γ = inf); skip them
        on_over = np.zeros(self.n, dtype=bool)
        on_over[over] = True
        sel = np.flatnonzero(on_over[a] & (c > 0))
        part = a[sel]
        grouped = np.argsort(part.astype(np.uint16) if self.n < 2 ** 16 else part,
                             kind="stable")     # radix sort: by partition, then by index
        sel, part = sel[grouped], part[grouped]
        lo = np.searchsorted(part, over, side="left")
        hi = np.searchsorted(part, over, side="right")
        for d, i, j in zip(over.tolist(), lo.tolist(), hi.tolist()):
            units = sel[i:j]
            if pinned[d] >= 0:
                units = units[units != pinned[d]]
            if units.size == 0:
                continue
            excess = L[d] - target[d]
            if floor is None:
                units = self.ranked_until(units, excess - tol)
            else:
                units = self.ranked(units)
                # "fit" variant: skip keys whose removal alone would take d below ``floor``
                # (L̄): the paper's prefix may drop a heavy key to cure a small excess and
                # move far more state than needed. Falls back to the prefix when the
                # lighter keys cannot cover the excess.
                small = units[c[units] <= L[d] - floor + tol]
                if small.size and float((c[small] * self.cnt[small]).sum()) >= excess - tol:
                    units = small
            w = c[units] * self.cnt[units]
            cw = np.cumsum(w)
            # smallest prefix whose removal brings L(d) down to its target
            j = int(np.searchsorted(cw, excess - tol, side="left"))
            j = min(j, units.shape[0] - 1)
            full = units[:j].tolist()
            last = int(units[j])
            rem = excess - (cw[j - 1] if j > 0 else 0.0)
            m_need = int(np.ceil(max(rem - tol, 0.0) / c[last] - 1e-12))
            m_need = max(1, min(m_need, int(self.cnt[last])))
            if m_need < self.cnt[last]:
                last = self.split(last, m_need)
            for u in full + [last]:
                self.asg[u] = IN_C
                self.reason[u] = (f"Phase II (preparing): taken off overloaded partition {d} "
                                  f"(L={L[d]:.4g} > cap {target[d]:.4g}) by {criterion}")
            taken.extend(full)
            taken.append(last)
        return taken


def _grow(arr: np.ndarray, cap: int) -> np.ndarray:
    out = np.zeros(max(cap, arr.shape[0]), dtype=arr.dtype)
    out[: arr.shape[0]] = arr
    return out
