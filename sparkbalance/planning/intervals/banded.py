"""Banded interval plan: SSM's positional programme restricted to cuts near three layouts.

The exact programme of :mod:`.ssm` (Ding et al. §3.3, Fig. 4) costs O(n' m D) time and
keeps O(n' m) choices (``D`` the widest balanced interval in groups): about 3 s at n' = 100
and m = 16 n', out of memory at n' = 10,000. In the positional layout (interval ``j`` stays
with partition ``j``) the optimum moves each cut as little as balance allows, so cut ``j``
almost always lies near the old cut ``b_j`` or near the cut of a balanced layout. The
banded plan runs the same dynamic programme over the cuts within ``W`` groups of ``b_j``,
of ``r_j`` and of ``q_j`` (at most ``S = 6 W + 3`` candidates per cut), in O(n' S^2) time
and O(n' S) memory. ``q`` is the layout of least maximum load
(:func:`.model.min_max_partition`), so its path lies inside the band and the banded plan is
balanced whenever any plan is; ``r`` (:func:`repair_cuts`) is the balanced layout that keeps
the old cuts wherever it can, whose band holds the cheap plans when ``q`` lies far from
the old layout (with a tight bound after drift, the band around ``b`` and ``q`` alone moved
99.7 % of the state at n' = 10,000; with ``r``, 19 %). The plan is optimal whenever the
exact optimum's cuts lie in the band (the loss against the exact plan, where both run, is
measured in ``tests/unit/test_banded_plan.py``).

Examples
--------
>>> import numpy as np
>>> from sparkbalance.planning.intervals.model import make_problem
>>> p = make_problem(np.ones(20), np.ones(20), np.array([0, 13, 20]), 2, 0.2, None)
>>> gain, cuts = banded_positional(p, width=4)
>>> cuts.tolist(), gain
([0, 12, 20], 19.0)
"""
from __future__ import annotations

import math

import numpy as np

from .model import Problem, min_max_partition

__all__ = ["banded_positional", "band_width", "repair_cuts", "DEFAULT_WIDTH", "BAND_CELLS", "MIN_WIDTH"]

#: Half-width W of the band around each of the three reference cuts, in groups.
DEFAULT_WIDTH: int = 16
#: Cells (``n' * S^2``) of one banded plan beyond which the band narrows (:func:`band_width`):
#: about half a second of numpy work, so n' = 10,000 plans within a second or two.
BAND_CELLS: int = 16_000_000
#: Narrowest band half-width :func:`band_width` chooses.
MIN_WIDTH: int = 4
_NEG = -np.inf
#: (cuts x S x S) cells evaluated per vectorised chunk (bounded memory: 8 bytes each).
_CHUNK_CELLS = 1 << 21


def _old_cuts(p: Problem) -> np.ndarray:
    """The current cut points extended to ``n' + 1`` entries (missing cuts at ``m``)."""
    m, k = p.m, p.num_nodes
    old = np.full(k + 1, m, dtype=np.int64)
    nb = min(p.n, k)
    old[:nb + 1] = p.bounds[:nb + 1]
    old[0] = 0
    return old


def repair_cuts(p: Problem) -> np.ndarray | None:
    """A balanced layout that keeps the old cuts wherever it can; ``None`` if none exists.

    Left to right, cut ``j + 1`` is the old cut ``b_{j+1}`` moved just enough that the
    interval ``[c_j, c_{j+1})`` stays within the bound and the rest ``[c_{j+1}, m)`` can
    still be covered by the ``n' - j - 1`` intervals left (greedy cover counts ``G(x)``,
    one pass from the right: ``G(x) = 1 + G(R(x))``, ``R(x)`` the farthest end within the
    bound). By induction ``G(c_j) <= n' - j`` so the clipped cut is always reachable.
    Where the least-max-load layout lies far from the old one (a tight or relaxed bound
    after drift) this is the reference whose band holds the cheap plans.

    Examples
    --------
    >>> import numpy as np
    >>> from sparkbalance.planning.intervals.model import make_problem
    >>> p = make_problem(np.ones(8), np.ones(8), np.array([0, 1, 8]), 2, 0.0, None)
    >>> repair_cuts(p).tolist()
    [0, 4, 8]
    """
    m, k = p.m, p.num_nodes
    r = np.searchsorted(p.wc, p.wc[:-1] + p.cap, side="right") - 1
    if np.any(r <= np.arange(m)):
        return None                      # one group alone exceeds the bound
    g = [0] * (m + 1)
    rl = r.tolist()
    for x in range(m - 1, -1, -1):
        g[x] = 1 + g[rl[x]]
    if g[0] > k:
        return None
    # lo[c] = first x with G(x) <= c (G is non-increasing in x)
    neg_g = -np.asarray(g, dtype=np.int64)
    left = np.arange(k, -1, -1, dtype=np.int64)          # intervals left after cut j
    lo = np.searchsorted(neg_g, -left, side="left").tolist()
    old = _old_cuts(p).tolist()
    cuts, c = [0], 0
    for j in range(1, k + 1):
        reach = rl[c] if c < m else m
        c = min(max(old[j], lo[j], c), reach)
        cuts.append(c)
    cuts[-1] = m
    return np.asarray(cuts, dtype=np.int64)


def _windows(p: Problem, width: int, q: np.ndarray | None = None) -> np.ndarray:
    """Candidate cuts, shape (n'+1, S): the band around the old cuts, the balanced cuts
    nearest them (:func:`repair_cuts`) and the least-max-load cuts ``q`` (when the caller
    has them), clipped to the prefix-load bounds every feasible cut meets."""
    m, k = p.m, p.num_nodes
    j = np.arange(k + 1)
    old = _old_cuts(p)
    q = np.asarray(min_max_partition(p.wc, k) if q is None else q, dtype=np.int64)
    q = np.concatenate([q, np.full(k + 1 - q.shape[0], m, dtype=np.int64)])[:k + 1]
    rep = repair_cuts(p)
    off = np.arange(-width, width + 1, dtype=np.int64)
    refs = [old, q] if rep is None else [old, rep, q]
    win = np.concatenate([ref[:, None] + off[None, :] for ref in refs], axis=1)
    total = float(p.wc[-1])
    # cut j needs the first j intervals within j caps, the rest within (k - j) caps
    hi = np.searchsorted(p.wc, j * p.cap, side="right") - 1
    lo = np.searchsorted(p.wc, total - (k - j) * p.cap, side="left")
    lo = np.minimum(np.maximum(lo, 0), m)
    hi = np.maximum(np.minimum(hi, m), lo)
    win = np.clip(win, lo[:, None], hi[:, None])
    # keep q itself: it is the feasible path (clipping may only have moved it if infeasible)
    win[:, -1 - width] = q
    win[0, :], win[k, :] = 0, m
    return win


def band_width(num_nodes: int, budget: int = BAND_CELLS) -> int:
    """The band half-width ``W`` for ``num_nodes`` cuts: :data:`DEFAULT_WIDTH` while
    ``n' (6 W + 3)^2 <= budget``, else the widest band within the budget (at least
    :data:`MIN_WIDTH`). Time is O(n' W^2): at n' = 10,000 the default band costs 9.9e7
    cells, W = 6 costs 1.5e7; the loss of the narrower band is measured by
    ``integration/benchmarks/bench_scale.py``.

    Examples
    --------
    >>> band_width(1000), band_width(10_000), band_width(10**6)
    (16, 6, 4)
    """
    s = int(math.isqrt(max(1, budget // max(1, int(num_nodes)))))
    return int(min(DEFAULT_WIDTH, max(MIN_WIDTH, (s - 3) // 6)))


def banded_positional(p: Problem, width: int = DEFAULT_WIDTH, *,
                      balanced_cuts: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """Best positional plan among cuts in the band; ``(gain, cuts)``, gain -inf if none.

    Parameters
    ----------
    p : a validated problem (:func:`.model.make_problem`).
    width : half-width ``W`` of the band around each reference cut, in groups.
    balanced_cuts : ``min_max_partition(p.wc, p.num_nodes)`` when the caller already has
        it (it is the slowest part of the band at n' in the thousands).

    Examples
    --------
    >>> import numpy as np
    >>> from sparkbalance.planning.intervals.model import make_problem
    >>> p = make_problem(np.ones(8), np.ones(8), np.array([0, 4, 8]), 2, 0.0, None)
    >>> banded_positional(p, 2)[1].tolist()
    [0, 4, 8]
    """
    if isinstance(width, bool) or not isinstance(width, int) or width < 0:
        raise ValueError(f"width={width!r}; expected an int >= 0")
    m, n, k = p.m, p.n, p.num_nodes
    win = _windows(p, width, balanced_cuts)
    s = win.shape[1]
    allow_empty = p.low <= 0
    f = np.where(win[k] == m, 0.0, _NEG)
    args = np.zeros((k, s), dtype=np.int32)
    chunk = max(1, _CHUNK_CELLS // (s * s))
    bounds = p.bounds
    # prefix sums at the candidate cuts, gathered once; since sc is non-decreasing,
    # sc[max(a, b)] == max(sc[a], sc[b]) (same floats, no gathers per cell)
    wcw, scw = p.wc[win], p.sc[win]
    jj = np.arange(k)
    inside = jj < n                               # old interval j exists
    s0 = p.sc[np.where(inside, bounds[np.minimum(jj, n - 1)], m)]
    e0 = p.sc[np.where(inside, bounds[np.minimum(jj + 1, n)], m)]
    rows = np.arange(s)
    for top in range(k, 0, -chunk):
        js = np.arange(max(0, top - chunk), top)
        x = win[js][:, :, None]                 # cut j
        y = win[js + 1][:, None, :]             # cut j + 1
        load = wcw[js + 1][:, None, :] - wcw[js][:, :, None]
        ok = (y > x) | ((y == x) & allow_empty)
        ok &= load <= p.cap
        if p.low > 0:
            ok &= load >= p.low
        # overlap with old interval j: sc[min(y, e0)] - sc[max(x, s0)], clipped at 0
        base = (np.minimum(scw[js + 1][:, None, :], e0[js][:, None, None])
                - np.maximum(scw[js][:, :, None], s0[js][:, None, None]))
        np.maximum(base, 0.0, out=base)
        base[~ok] = _NEG
        for i in range(js.shape[0] - 1, -1, -1):  # sequential in j: f_j from f_{j+1}
            cand = base[i] + f[None, :]
            arg = np.argmax(cand, axis=1)
            args[js[i]] = arg
            f = cand[rows, arg]
    gain = float(f[0])
    if gain == _NEG:
        return gain, np.asarray([], dtype=np.int64)
    cuts = [0]
    col = 0
    for j in range(k):
        col = int(args[j, col])
        cuts.append(int(win[j + 1, col]))
    return gain, np.asarray(cuts, dtype=np.int64)
