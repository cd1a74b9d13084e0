"""The interval model of Ding et al., Definitions 3.1-3.2, and its plan value.

``m`` tasks (key groups) ``T_0..T_{m-1}`` with work ``w_j`` and state size ``|s_j|``; node
``i`` owns the contiguous interval ``I_i = [bounds[i], bounds[i+1])``. After a migration to
``n'`` nodes the new intervals are ``I'_j = [new_bounds[j], new_bounds[j+1])`` and interval
``j`` is owned by node ``owners[j]`` (an old node ``< n`` or a new node ``>= n``).

Load balancing (Definition 3.1, one-sided)::

    W'_j = sum_{t in I'_j} w_t  <=  (1 + tau) * W / n'          for every j

optionally also ``W'_j >= min_load * W / n'`` (two-sided, an extension of ours).
Intervals may be empty (``bounds[i] == bounds[i+1]``; the proof of Lemma 3.4 relies on it).

Cost (§3.1) = sum of ``|s_t|`` over tasks whose node changes; gain = the state that stays =
``sum_j |I'_j ∩ I_{owners[j]}|`` (sizes), so ``cost + gain == sum |s|``.

Positive-gain matches never cross: if ``I'_a`` (before ``I'_b``) overlaps ``I_y`` and
``I'_b`` overlaps ``I_z`` then ``y <= z``. Hence the best owners for a *fixed* partitioning
are a longest-common-subsequence style DP over (old interval, new interval), see
:func:`match_intervals`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

__all__ = ["IntervalPlan", "Problem", "make_problem", "capacity", "match_intervals",
           "plan_from_partition", "interval_loads", "balanced", "LOAD_RTOL"]

#: Relative tolerance on the balance bound, so that float prefix sums of integer-like
#: weights (e.g. 1.4 * 20 / 4 == 7.000000000000001) do not flip feasibility.
LOAD_RTOL: float = 1e-9


@dataclass(frozen=True)
class Problem:
    """A validated single-step instance (internal; built by :func:`make_problem`)."""

    weights: np.ndarray      # w_j, float64 (m,)
    sizes: np.ndarray        # |s_j|, float64 (m,)
    bounds: np.ndarray       # current cut points, int64 (n+1,)
    num_nodes: int           # n'
    tau: float
    min_load: float          # fraction of the mean load W/n' (0 = one-sided)
    cap: float               # (1+tau) W/n' with tolerance
    low: float               # min_load W/n' with tolerance (0 when one-sided)
    wc: np.ndarray           # prefix sums of weights (m+1,)
    sc: np.ndarray           # prefix sums of sizes (m+1,)

    @property
    def m(self) -> int:
        return int(self.weights.shape[0])

    @property
    def n(self) -> int:
        return int(self.bounds.shape[0] - 1)


def check_tau(tau: Any) -> float:
    """Validate the balance parameter tau (Definition 3.1: tau >= 0)."""
    try:
        t = float(tau)
    except (TypeError, ValueError):
        raise TypeError(f"tau={tau!r}; expected a real number >= 0") from None
    if not math.isfinite(t) or t < 0:
        raise ValueError(f"tau={tau!r}; expected a finite number >= 0")
    return t


def check_min_load(min_load: Any) -> float:
    """Validate the optional lower bound, a fraction of the mean load in [0, 1]."""
    if min_load is None:
        return 0.0
    try:
        v = float(min_load)
    except (TypeError, ValueError):
        raise TypeError(f"min_load={min_load!r}; expected None or a number in [0, 1]") from None
    if not (0.0 <= v <= 1.0):
        raise ValueError(f"min_load={min_load!r}; expected None or a number in [0, 1] "
                         "(a fraction of the mean load W/n')")
    return v


def check_count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}={value!r}; expected an int >= 1")
    if value < 1:
        raise ValueError(f"{name}={value}; expected >= 1")
    return int(value)


def _vector(values: Any, name: str, m: int | None = None) -> np.ndarray:
    a = np.array(values, dtype=np.float64)   # a copy: it is made read-only below
    if a.ndim != 1:
        raise ValueError(f"{name} has shape {a.shape}; expected a 1-D array (one per task)")
    if m is not None and a.shape[0] != m:
        raise ValueError(f"len({name})={a.shape[0]}; expected {m} (= len(weights))")
    if a.shape[0] == 0:
        raise ValueError(f"{name} is empty; expected at least one task (m >= 1)")
    if not np.all(np.isfinite(a)) or a.min() < 0:
        raise ValueError(f"{name} must be finite and >= 0; got min={a.min()!r}")
    return a


def check_bounds(bounds: Any, m: int, name: str = "bounds") -> np.ndarray:
    """Cut points ``[0, ..., m]``, non-decreasing, integers, at least 2 of them."""
    b = np.asarray(bounds)
    if b.ndim != 1 or b.shape[0] < 2:
        raise ValueError(f"{name} has shape {b.shape}; expected n+1 >= 2 cut points [0, ..., m]")
    if b.dtype.kind not in "iu":
        if b.dtype.kind == "f" and np.all(np.isfinite(b)) and np.all(b == np.round(b)):
            b = b.astype(np.int64)
        else:
            raise TypeError(f"{name} has dtype {b.dtype}; expected integers")
    b = b.astype(np.int64)
    if b[0] != 0 or b[-1] != m:
        raise ValueError(f"{name} runs from {b[0]} to {b[-1]}; expected 0 to m={m}")
    d = np.diff(b)
    if np.any(d < 0):
        i = int(np.argmax(d < 0))
        raise ValueError(f"{name} are not monotone: {name}[{i}]={b[i]} > {name}[{i + 1}]="
                         f"{b[i + 1]}; expected non-decreasing cut points")
    return b


def capacity(total_work: float, num_nodes: int, tau: float) -> float:
    """The balance bound ``(1 + tau) * W / n'`` of Definition 3.1.

    Examples
    --------
    >>> capacity(20.0, 4, 0.4)
    7.0
    """
    return (1.0 + tau) * total_work / num_nodes


def _tol(x: float) -> float:
    # relative only: the bound is >= W/n', so float rounding of prefix sums (~1e-16 W)
    # is far below it, and tiny weights keep an exact comparison
    return LOAD_RTOL * abs(x)


def make_problem(weights: Any, sizes: Any, bounds: Any, num_nodes: Any, tau: Any,
                 min_load: Any = None) -> Problem:
    """Validate a single-step instance and precompute prefix sums and bounds."""
    w = _vector(weights, "weights")
    s = _vector(sizes, "sizes", w.shape[0])
    b = check_bounds(bounds, w.shape[0])
    n2 = check_count(num_nodes, "num_nodes")
    t = check_tau(tau)
    ml = check_min_load(min_load)
    wc = np.concatenate([[0.0], np.cumsum(w)])
    sc = np.concatenate([[0.0], np.cumsum(s)])
    total = float(wc[-1])
    cap = capacity(total, n2, t)
    cap += _tol(cap)
    low = ml * total / n2
    low = low - _tol(low) if low > 0 else 0.0
    for a in (w, s, b, wc, sc):
        a.flags.writeable = False
    return Problem(w, s, b, n2, t, ml, cap, low, wc, sc)


def interval_loads(prefix: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Sum of a per-task quantity over each interval, from its prefix sums."""
    return prefix[bounds[1:]] - prefix[bounds[:-1]]


def balanced(loads: np.ndarray, cap: float, low: float = 0.0) -> bool:
    """True when every load is within ``[low, cap]`` (tolerances already in cap/low)."""
    return bool(np.all(loads <= cap) and (low <= 0 or np.all(loads >= low)))


def overlap_matrix(sc: np.ndarray, old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """``ov[i, j] = |I_i ∩ I'_j|`` in state size (n x n')."""
    lo = np.maximum(old[:-1, None], new[None, :-1])
    hi = np.minimum(old[1:, None], new[None, 1:])
    return np.where(hi > lo, sc[np.maximum(hi, lo)] - sc[lo], 0.0)


def match_intervals(sizes_prefix: np.ndarray, old: np.ndarray, new: np.ndarray
                    ) -> tuple[float, np.ndarray]:
    """Best owners of a fixed new partitioning: max total overlap, and ``owners``.

    Positive-overlap matches never cross (module docstring), so the maximum-weight matching
    is the LCS-style DP ``f[i][j] = max(f[i-1][j], f[i][j-1], f[i-1][j-1] + ov[i][j])``
    (O(n n')); unmatched new intervals get unused old nodes first (in order), then new nodes
    ``n, n+1, ...``.

    Examples
    --------
    >>> sc = np.arange(21.0)                      # 20 tasks of size 1
    >>> g, owners = match_intervals(sc, np.array([0, 13, 20]), np.array([0, 4, 13, 20]))
    >>> g, owners.tolist()
    (16.0, [2, 0, 1])
    """
    n, n2 = old.shape[0] - 1, new.shape[0] - 1
    ov = overlap_matrix(sizes_prefix, old, new)
    f = np.zeros((n + 1, n2 + 1))
    for i in range(1, n + 1):
        row, prev = f[i], f[i - 1]
        for j in range(1, n2 + 1):
            row[j] = max(prev[j], row[j - 1], prev[j - 1] + ov[i - 1, j - 1])
    owners = np.full(n2, -1, dtype=np.int64)
    i, j = n, n2
    while i > 0 and j > 0:
        if f[i, j] == f[i - 1, j]:
            i -= 1
        elif f[i, j] == f[i, j - 1]:
            j -= 1
        else:
            owners[j - 1] = i - 1
            i -= 1
            j -= 1
    return float(f[n, n2]), fill_owners(owners, n)


def fill_owners(owners: np.ndarray, n: int) -> np.ndarray:
    """Give each unmatched interval (-1) an unused old node, then a new node ``n, n+1, ...``."""
    owners = owners.copy()
    used = set(owners[owners >= 0].tolist())
    free = [i for i in range(n) if i not in used]
    fresh = n
    for j in np.flatnonzero(owners < 0):
        if free:
            owners[j] = free.pop(0)
        else:
            owners[j] = fresh
            fresh += 1
    return owners


@dataclass(frozen=True)
class IntervalPlan:
    """A target interval layout and who owns each interval, with its cost.

    Attributes
    ----------
    bounds : n'+1 cut points; new interval ``j`` is ``[bounds[j], bounds[j+1])``.
    owners : node owning each new interval: an old node index ``< n`` (kept state of the
        overlap) or a new node ``>= n``. Old nodes absent from ``owners`` are removed.
    migration_cost : sum of ``|s_t|`` over tasks whose node changes.
    gain : state that stays (``total_size - migration_cost``).
    loads : ``W'_j`` per new interval.
    feasible : every load within the balance bound(s). When the bound cannot be met the
        planner returns the plan of least maximum load it found, with ``feasible=False``.
    seconds : planning time.
    capacity : the bound ``(1+tau) W / n'`` that was applied.
    algorithm : planner name.
    previous_bounds : the n+1 cut points the plan starts from.
    """

    bounds: np.ndarray
    owners: np.ndarray
    migration_cost: float
    gain: float
    loads: np.ndarray
    feasible: bool
    seconds: float = 0.0
    capacity: float = math.inf
    algorithm: str = ""
    previous_bounds: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def num_nodes(self) -> int:
        return int(self.bounds.shape[0] - 1)

    @property
    def removed(self) -> tuple[int, ...]:
        """Old nodes that own no interval after the migration."""
        n = int(self.previous_bounds.shape[0] - 1)
        kept = set(self.owners.tolist())
        return tuple(i for i in range(n) if i not in kept)

    @property
    def added(self) -> tuple[int, ...]:
        """New nodes (indices ``>= n``)."""
        n = int(self.previous_bounds.shape[0] - 1)
        return tuple(int(o) for o in self.owners if o >= n)

    def task_owner(self) -> np.ndarray:
        """Node of every task after the migration (length m)."""
        return np.repeat(self.owners, np.diff(self.bounds))

    def previous_owner(self) -> np.ndarray:
        """Node of every task before the migration (length m)."""
        b = self.previous_bounds
        return np.repeat(np.arange(b.shape[0] - 1, dtype=np.int64), np.diff(b))

    def moved(self) -> np.ndarray:
        """Boolean mask of tasks whose node changes."""
        return self.task_owner() != self.previous_owner()

    def explain(self) -> str:
        """One line per new interval: range, owner, load, and what moves in."""
        prev = self.previous_owner()
        lines = [f"{self.algorithm or 'plan'}: {self.previous_bounds.shape[0] - 1} -> "
                 f"{self.num_nodes} nodes, cost={self.migration_cost:g}, gain={self.gain:g}, "
                 f"feasible={self.feasible}, cap={self.capacity:g}"]
        for j in range(self.num_nodes):
            a, b = int(self.bounds[j]), int(self.bounds[j + 1])
            inn = sorted({int(p) for p in prev[a:b] if p != self.owners[j]})
            lines.append(f"  [{a}, {b}) -> node {int(self.owners[j])} load={self.loads[j]:g}"
                         + (f" (moves in from {inn})" if inn else ""))
        if self.removed:
            lines.append(f"  removed nodes: {list(self.removed)}")
        return "\n".join(lines)


def plan_from_partition(p: Problem, new_bounds: np.ndarray, owners: np.ndarray | None = None,
                        *, algorithm: str = "", seconds: float = 0.0,
                        feasible: bool | None = None) -> IntervalPlan:
    """Build an :class:`IntervalPlan` for ``new_bounds`` (best owners unless given).

    Costs are recomputed from the owners, never trusted from a planner's bookkeeping.
    """
    nb = np.array(new_bounds, dtype=np.int64)      # copies: the plan's arrays are read-only
    if owners is None:
        _, owners = match_intervals(p.sc, p.bounds, nb)
    owners = np.array(owners, dtype=np.int64)
    gain = 0.0
    for j, o in enumerate(owners.tolist()):
        if o < p.n:
            lo = max(int(nb[j]), int(p.bounds[o]))
            hi = min(int(nb[j + 1]), int(p.bounds[o + 1]))
            if hi > lo:
                gain += float(p.sc[hi] - p.sc[lo])
    total = float(p.sc[-1])
    loads = interval_loads(p.wc, nb)
    ok = balanced(loads, p.cap, p.low) if feasible is None else feasible
    for a in (nb, owners, loads):
        a.flags.writeable = False
    return IntervalPlan(nb, owners, max(total - gain, 0.0), gain, loads, bool(ok), seconds,
                        (1.0 + p.tau) * float(p.wc[-1]) / p.num_nodes, algorithm, p.bounds)


def min_max_partition(wc: np.ndarray, k: int) -> np.ndarray:
    """Cut points of ``k`` intervals minimising the maximum load (fallback when infeasible).

    Binary search on the bound with a greedy cover; a probe (do ``k`` greedy jumps from
    task 0 reach ``m``?) composes the jump array ``log2 k`` times instead of walking up to
    ``k`` jumps in Python (slow at ``k`` in the thousands); the answer's cuts are walked.

    Examples
    --------
    >>> min_max_partition(np.cumsum([0.0, 1, 1, 1, 1, 4]), 2).tolist()
    [0, 4, 5]
    """
    m = wc.shape[0] - 1
    w = np.diff(wc)
    lo, hi = float(w.max(initial=0.0)), float(wc[-1])

    def jumps(bound: float) -> np.ndarray:   # every start's greedy jump; m absorbs
        return np.concatenate([np.searchsorted(wc, wc[:-1] + bound * (1 + 1e-12),
                                               side="right") - 1, [m]])

    def covers(bound: float) -> bool:   # k jumps from 0 reach m (a stuck start never does)
        step, pos, left = jumps(bound), 0, k
        while left:
            pos = int(step[pos]) if left & 1 else pos
            left >>= 1
            step = step[step] if left else step
        return pos == m

    def cover(bound: float) -> list[int] | None:
        nxt = jumps(bound).tolist()
        cuts, x = [0], 0
        while x < m:
            x2 = nxt[x]
            if x2 <= x or len(cuts) > k:
                return None
            cuts.append(x2)
            x = x2
        return cuts if len(cuts) - 1 <= k else None

    for _ in range(100):
        if hi - lo <= 1e-9 * max(hi, 1.0):
            break
        mid = (lo + hi) / 2
        if not covers(mid):
            lo = mid
        else:
            hi = mid
    cuts = cover(hi) or [0, m]
    cuts += [m] * (k + 1 - len(cuts))
    return np.asarray(cuts, dtype=np.int64)


def as_sequence(values: Sequence[Any] | Any, length: int, name: str) -> list[Any]:
    """Broadcast a scalar parameter (e.g. tau) to a sequence of ``length`` values."""
    if isinstance(values, (list, tuple, np.ndarray)):
        if len(values) != length:
            raise ValueError(f"len({name})={len(values)}; expected {length}")
        return list(values)
    return [values] * length
