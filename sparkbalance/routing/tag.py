"""Time-aware grouping, TAG (Yang et al.; ALGORITHMS.md §5).

Partition ``i`` completes one record in ``t_i`` seconds (processing + transfer, measured
from task durations by :mod:`sparkbalance.stats.timeweights`); its load is
``l_i = t_i * m_i`` for ``m_i`` records. TAG aims at equal ``l_i``, i.e. (Yang et al. eq. 3)
``m_i = m / (t_i * Σ_j 1/t_j)``. Two phases per window:

1. **Rebalance** (construction, :func:`heavy_routes`): the heavy keys' records are cut into
   segments of similar size (:data:`TAG_SEGMENT_FACTOR` / n of the stream each); each
   segment goes to partition ``i`` with probability ``p_i = (1/t_i) / Σ_j 1/t_j`` (eq. 4).
   The partitions a key's segments landed on are its candidates: a one-to-many routing
   table heavy key -> candidates. The random draws are seeded per key by a stable hash, so
   the table is identical in every process.
2. **Grouping** (per record, the stateful selector): a heavy key goes to the candidate with
   the least current ``l_i``; any other key to the smaller ``l_i`` of its two distinct hash choices
   (PKG's candidates). ``l_i`` is local to a map task, as PKG's load estimate.

Departures, written down:

* Segment placement is *systematic* by default: a key's ``g`` segments sit at positions
  ``(u + j) / g`` (``u`` uniform, key-seeded) of the cumulative distribution of ``p_i``, so
  each partition receives ``g * p_i`` segments up to rounding instead of a binomial number.
  Every segment still lands on partition ``i`` with probability ``p_i`` (eq. 4 holds), but a
  hot key no longer misses partitions by chance: with i.i.d. draws (``placement="random"``,
  the paper's literal reading) the hottest key of Zipf 1.5 over n = 8 missed 2 partitions
  and left them at 0.74x the mean load (bench_routing (b): max/avg 1.09 vs 1.00).
* A heavy key whose segments all land on one partition still gets a second distinct
  candidate (drawn with the same p_i), so it never has fewer choices than a light key.
"""
from __future__ import annotations

import random
from typing import Any, Mapping, Sequence

import numpy as np

from ..hashing import hash_family
from .choices import HEAVY_THRESHOLD_FACTOR
from .pkg import distinct_candidates
from .splitting import SplittingPartitioner

__all__ = ["TimeAwarePartitioner", "heavy_routes", "segment_probabilities",
           "TAG_SEGMENT_FACTOR"]

#: Segment size as a share of the stream: TAG_SEGMENT_FACTOR / n, the heavy threshold 1/(5n)
#: of Yang et al. §3.3.2 (so the lightest heavy key is one segment).
TAG_SEGMENT_FACTOR: float = HEAVY_THRESHOLD_FACTOR
#: Family member seeding a key's segment draws (0/2 are PKG's, 3 D-Choices').
_SEGMENT_HASH = 4
_PLACEMENTS = ("systematic", "random")


def _completion_times(t: Sequence[float] | np.ndarray, n: int) -> np.ndarray:
    a = np.asarray(t, dtype=np.float64)
    if a.shape != (n,):
        raise ValueError(f"completion_times has shape {a.shape}; expected ({n},), one t_i per "
                         "partition")
    if not np.all(np.isfinite(a)) or np.any(a <= 0):
        raise ValueError(f"completion_times must be finite and > 0; got min={a.min()!r}")
    return a / a.mean()  # only ratios matter; normalised so l_i stays in record units


def segment_probabilities(completion_times: Sequence[float] | np.ndarray) -> np.ndarray:
    """``p_i = (1/t_i) / Σ_j (1/t_j)`` (Yang et al. eq. 4).

    Examples
    --------
    >>> segment_probabilities([1.0, 2.0, 2.0]).tolist()
    [0.5, 0.25, 0.25]
    """
    inv = 1.0 / np.asarray(completion_times, dtype=np.float64)
    return inv / inv.sum()


def heavy_routes(heavy: Mapping[Any, float], completion_times: Sequence[float] | np.ndarray,
                 *, segment_size: float | None = None, seed: int = 0,
                 placement: str = "systematic") -> dict[Any, tuple[int, ...]]:
    """Rebalance phase: heavy key -> candidate partitions (distinct, draw order).

    Parameters
    ----------
    heavy : ``{key: p_k}`` relative frequencies of the heavy keys.
    completion_times : ``t_i`` per partition.
    segment_size : share of the stream per segment (default ``TAG_SEGMENT_FACTOR / n``).
    seed : mixes into every key's draws (same seed -> same table everywhere).
    placement : "systematic" (default) or "random" (i.i.d. draws); see the module docstring.

    Examples
    --------
    >>> r = heavy_routes({"hot": 0.5}, [1.0] * 8)
    >>> 2 <= len(r["hot"]) <= 8
    True
    """
    t = np.asarray(completion_times, dtype=np.float64)
    n = t.shape[0]
    p = segment_probabilities(t)
    cum = np.cumsum(p).tolist()
    cum[-1] = 1.0
    seg = TAG_SEGMENT_FACTOR / n if segment_size is None else float(segment_size)
    if not seg > 0:
        raise ValueError(f"segment_size={segment_size!r}; expected > 0")
    if placement not in _PLACEMENTS:
        raise ValueError(f"placement={placement!r}; expected one of {', '.join(_PLACEMENTS)}")
    routes: dict[Any, tuple[int, ...]] = {}
    for key, pk in heavy.items():
        if not (isinstance(pk, (int, float, np.floating)) and 0 < pk <= 1):
            raise ValueError(f"heavy key {key!r:.40} has frequency {pk!r}; expected 0 < p <= 1")
        rng = random.Random(hash_family(key, _SEGMENT_HASH) ^ (seed & 0xFFFFFFFF))
        segments = max(1, round(float(pk) / seg))
        chosen: dict[int, None] = {}
        if placement == "random":
            for _ in range(segments):
                chosen[_draw(rng, cum)] = None
        else:
            u = rng.random()
            for j in range(segments):
                chosen[_find(cum, (u + j) / segments)] = None
        if n > 1:
            while len(chosen) < 2:  # at least two choices, like a light key
                chosen[_draw(rng, cum)] = None
        routes[key] = tuple(chosen)
    return routes


def _draw(rng: random.Random, cum: list[float]) -> int:
    return _find(cum, rng.random())


def _find(cum: list[float], u: float) -> int:
    lo, hi = 0, len(cum) - 1
    while lo < hi:  # first index with cum > u
        mid = (lo + hi) // 2
        if cum[mid] > u:
            hi = mid
        else:
            lo = mid + 1
    return lo


class TimeAwarePartitioner(SplittingPartitioner):
    """TAG: heavy keys over their segment partitions, others two-choice, on ``l_i = t_i m_i``.

    Parameters
    ----------
    num_partitions : int
        n >= 1.
    completion_times : sequence of n floats > 0
        ``t_i``, seconds per record on partition i (only ratios matter).
    heavy : mapping key -> relative frequency p_k, optional
        The heavy keys (found by :func:`sparkbalance.stats.heavy.heavy_hitters`).
    segment_size, seed, placement :
        See :func:`heavy_routes`.

    Notes
    -----
    Stateful: ``l_i`` is a local estimate per map task (reset on unpickling).

    Examples
    --------
    >>> f = TimeAwarePartitioner(2, [1.0, 3.0], heavy={"hot": 0.9})
    >>> out = f.assign(["hot"] * 8).tolist()
    >>> out.count(0), out.count(1)   # the faster partition takes 3x the records
    (6, 2)
    """

    def __init__(self, num_partitions: int, completion_times: Sequence[float] | np.ndarray | None
                 = None, heavy: Mapping[Any, float] | None = None, *,
                 segment_size: float | None = None, seed: int = 0,
                 placement: str = "systematic") -> None:
        super().__init__(num_partitions)
        n = self.num_partitions
        t = _completion_times(np.ones(n) if completion_times is None else completion_times, n)
        self.completion_times = t
        self._weights = t.tolist()   # choosing i adds t_i to l_i
        self.heavy = dict(heavy or {})
        self.segment_size = segment_size
        self.seed = int(seed)
        self.placement = placement
        self._routes = heavy_routes(self.heavy, t, segment_size=segment_size, seed=self.seed,
                                    placement=placement)

    @property
    def routes(self) -> dict[Any, tuple[int, ...]]:
        """The one-to-many heavy-key routing table (a copy)."""
        return dict(self._routes)

    def candidates(self, key: Any) -> tuple[int, ...]:
        try:
            c = self._routes.get(key)
        except TypeError:
            c = None
        return c if c is not None else distinct_candidates(key, self.num_partitions)

    @property
    def local_time_loads(self) -> list[float]:
        """``l_i = t_i * m_i`` of this instance (t normalised to mean 1)."""
        return self.local_loads

    def __repr__(self) -> str:
        return (f"TimeAwarePartitioner(num_partitions={self.num_partitions}, "
                f"heavy={len(self.heavy)}, t={np.round(self.completion_times, 3).tolist()})")
