"""Load statistics over a window of k samples (Xing et al. §2.3), vectorised over units.

Every function works on the population form (1/k) the paper defines:
E S = (1/k) Σ s_i, var S = (1/k) Σ s_i² − (E S)², cov(S₁, S₂) = (1/k) Σ s₁ᵢ s₂ᵢ − E S₁·E S₂,
ρ = cov / (√var S₁ · √var S₂). We compute them from centred series (same values, no
cancellation between the two sums).

ρ of a constant series. The paper leaves 0/0 undefined; we take **ρ = 0** when either
series is constant, i.e. when its standard deviation is at most ``ZERO_STD_RTOL`` times its
largest magnitude (constant up to rounding: a node's series minus one of its units is
computed by a subtraction). ρ = 0 is the neutral value for the scores: a constant unit
changes no node's variance wherever it goes, and an empty node neither attracts nor
repels a unit.

ρ(o, N), the correlation of unit o with node N, is taken against the sum of the series of
every unit on N *except o* (Xing et al. §3.3.1).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ZERO_STD_RTOL", "LoadWindow", "LoadStatistics", "load_statistics", "covariance",
           "correlation", "correlation_matrix", "node_series", "unit_node_correlation",
           "mean_pair_correlation", "node_std_mean"]

#: A series whose std is at most this fraction of its largest |value| counts as constant
#: (its ρ with anything is 0). 1e-9 is far above float64 rounding of sums of ~10^3 terms
#: (~1e-13) and far below any load fluctuation worth acting on.
ZERO_STD_RTOL: float = 1e-9


@dataclass(frozen=True, eq=False)
class LoadStatistics:
    """Mean, variance and standard deviation of each row of an (m, k) series (1/k form).

    Examples
    --------
    >>> st = load_statistics([[1., 3.], [2., 2.]])
    >>> st.mean.tolist(), st.var.tolist()
    ([2.0, 2.0], [1.0, 0.0])
    """

    mean: np.ndarray
    var: np.ndarray
    std: np.ndarray


def load_statistics(series: np.ndarray) -> LoadStatistics:
    """E S, var S and √var S of every row (Xing et al. §2.3, population form).

    Examples
    --------
    >>> load_statistics([[0., 2., 4.]]).std.round(4).tolist()
    [1.633]
    """
    s = np.atleast_2d(np.asarray(series, dtype=np.float64))
    mean = s.mean(axis=-1)
    c = s - mean[..., None]
    var = np.einsum("...i,...i->...", c, c) / s.shape[-1]
    return LoadStatistics(mean=mean, var=var, std=np.sqrt(var))


def covariance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """cov(S₁, S₂) along the last axis (broadcasting), population form.

    Examples
    --------
    >>> float(covariance([1., 2., 3.], [3., 2., 1.]))
    -0.6666666666666666
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    ac = a - a.mean(axis=-1, keepdims=True)
    bc = b - b.mean(axis=-1, keepdims=True)
    return np.mean(ac * bc, axis=-1)


def _std_and_flat(c: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Std of centred rows ``c`` of ``s`` and the mask of constant rows (see module doc)."""
    std = np.sqrt(np.mean(c * c, axis=-1))
    scale = np.max(np.abs(s), axis=-1) if s.shape[-1] else np.zeros(s.shape[:-1])
    return std, std <= ZERO_STD_RTOL * scale


def correlation(a: np.ndarray, b: np.ndarray) -> np.ndarray | float:
    """ρ(S₁, S₂) along the last axis (broadcasting); 0 when either series is constant.

    Examples
    --------
    >>> float(correlation([1., 0., 1., 0.], [0., 1., 0., 1.]))
    -1.0
    >>> float(correlation([1., 2., 3.], [5., 5., 5.]))  # constant: ρ = 0 by definition
    0.0
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    ac = a - a.mean(axis=-1, keepdims=True)
    bc = b - b.mean(axis=-1, keepdims=True)
    sa, fa = _std_and_flat(ac, a)
    sb, fb = _std_and_flat(bc, b)
    cov = np.mean(ac * bc, axis=-1)
    flat = fa | fb
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(flat, 0.0, cov / np.where(flat, 1.0, sa * sb))
    rho = np.clip(rho, -1.0, 1.0)
    return float(rho) if np.ndim(rho) == 0 else rho


def correlation_matrix(x: np.ndarray) -> np.ndarray:
    """ρ between every pair of rows of an (n, k) array (diagonal 1, constant rows 0).

    Examples
    --------
    >>> correlation_matrix([[1., 0.], [0., 1.], [2., 0.]]).tolist()
    [[1.0, -1.0, 1.0], [-1.0, 1.0, -1.0], [1.0, -1.0, 1.0]]
    """
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    c = x - x.mean(axis=1, keepdims=True)
    std, flat = _std_and_flat(c, x)
    safe = np.where(flat, 1.0, std)
    z = c / safe[:, None]
    z[flat] = 0.0
    r = np.clip(z @ z.T / x.shape[1], -1.0, 1.0)
    np.fill_diagonal(r, np.where(flat, 0.0, 1.0))
    return r


def node_series(series: np.ndarray, assignment: np.ndarray, num_nodes: int) -> np.ndarray:
    """X_j = Σ_{o on N_j} S_o: the (n, k) load series of every node.

    Examples
    --------
    >>> node_series([[1., 2.], [3., 4.], [5., 6.]], [0, 1, 0], 2).tolist()
    [[6.0, 8.0], [3.0, 4.0]]
    """
    s = np.asarray(series, dtype=np.float64)
    a = np.asarray(assignment, dtype=np.int64)
    x = np.zeros((num_nodes, s.shape[1]))
    np.add.at(x, a, s)
    return x


def unit_node_correlation(series: np.ndarray, assignment: np.ndarray, num_nodes: int
                          ) -> np.ndarray:
    """The (m, n) matrix ρ(o, N_j): unit o against every node, o itself excluded.

    For the node holding o the other series is X_j − S_o (Xing et al. §3.3.1).

    Examples
    --------
    >>> r = unit_node_correlation([[1., 0.], [0., 1.], [1., 0.]], [0, 0, 1], 2)
    >>> r.tolist()  # unit 2 is alone: its node minus itself is empty, ρ = 0
    [[-1.0, 1.0], [-1.0, -1.0], [0.0, 0.0]]
    """
    s = np.asarray(series, dtype=np.float64)
    a = np.asarray(assignment, dtype=np.int64)
    x = node_series(s, a, num_nodes)
    # O(m·n + m·k) memory: ρ against whole nodes by one product of z-scores, then the
    # column of each unit's own node replaced by ρ against X_a − S_o.
    k = s.shape[1]
    sc = s - s.mean(axis=1, keepdims=True)
    xc = x - x.mean(axis=1, keepdims=True)
    ss, sf = _std_and_flat(sc, s)
    xs, xf = _std_and_flat(xc, x)
    zs = np.where(sf[:, None], 0.0, sc / np.where(sf, 1.0, ss)[:, None])
    zx = np.where(xf[:, None], 0.0, xc / np.where(xf, 1.0, xs)[:, None])
    r = np.clip(zs @ zx.T / k, -1.0, 1.0)
    if s.shape[0]:
        r[np.arange(s.shape[0]), a] = correlation(s, x[a] - s)
    return r


def mean_pair_correlation(x: np.ndarray) -> float:
    """(2 / n(n−1)) Σ_{i<j} ρ_ij of the node series (Xing et al. §2.4 goal (3), Table 3).

    Examples
    --------
    >>> mean_pair_correlation([[1., 0.], [0., 1.], [2., 0.]])
    -0.3333333333333333
    """
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    n = x.shape[0]
    if n < 2:
        return 0.0
    r = correlation_matrix(x)
    iu = np.triu_indices(n, 1)
    return float(r[iu].mean())


def node_std_mean(x: np.ndarray) -> float:
    """(1/n) Σ_j √var X_j: the average node load standard deviation (Xing et al. Fig. 4).

    Theorem 1's lower bound on it is std(X)/n with X = Σ_j X_j.

    Examples
    --------
    >>> node_std_mean([[1., 3.], [2., 2.]])
    0.5
    """
    return float(load_statistics(x).std.mean())


class LoadWindow:
    """The last k per-sample loads of m units: the (m, k) ``series`` the planners take.

    A ring buffer fed once per sample (a batch: the cost of every key group), oldest
    sample first in ``series``. Until k samples arrived, ``series`` holds only those seen
    (the planners accept any k >= 1; Xing et al. §3.4 plan after a warm-up of k samples,
    which ``ready`` tells).

    Examples
    --------
    >>> w = LoadWindow(num_units=2, k=3)
    >>> for batch in ([1., 0.], [2., 0.], [3., 1.], [4., 1.]):
    ...     w.push(batch)
    >>> w.series.tolist(), w.ready
    ([[2.0, 3.0, 4.0], [0.0, 1.0, 1.0]], True)
    """

    def __init__(self, num_units: int, k: int = 10) -> None:
        if isinstance(num_units, bool) or not isinstance(num_units, (int, np.integer)) \
                or num_units < 0:
            raise ValueError(f"num_units={num_units!r}; expected an int >= 0")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k={k!r}; expected an int >= 1")
        self.num_units = int(num_units)
        self.k = int(k)
        self._buf = np.zeros((self.num_units, self.k))
        self._count = 0

    def push(self, loads: np.ndarray) -> None:
        """Append one sample (length-m loads, each >= 0 and finite)."""
        x = np.asarray(loads, dtype=np.float64)
        if x.shape != (self.num_units,):
            raise ValueError(f"loads has shape {x.shape}; expected ({self.num_units},)")
        if not np.all(np.isfinite(x)) or (x.size and x.min() < 0):
            raise ValueError("loads has a negative or non-finite value; expected loads >= 0")
        self._buf[:, self._count % self.k] = x
        self._count += 1

    @property
    def samples(self) -> int:
        """How many samples the window holds (at most k)."""
        return min(self._count, self.k)

    @property
    def ready(self) -> bool:
        return self._count >= self.k

    @property
    def series(self) -> np.ndarray:
        """(m, samples) copy, oldest sample first."""
        if self._count <= self.k:
            return self._buf[:, :self._count].copy()
        start = self._count % self.k
        return np.concatenate([self._buf[:, start:], self._buf[:, :start]], axis=1)

    def clear(self) -> None:
        """Forget every sample (e.g. after the number of units changed)."""
        self._count = 0
