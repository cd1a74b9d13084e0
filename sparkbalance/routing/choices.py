"""D-Choices and W-Choices (Nasir et al., "When two choices are not enough", ICDE 2016).

PKG (Nasir et al.) fails when one key alone exceeds what two partitions can absorb (Nasir et al.
§5: imbalance grows once p_1 > 2/n). D-/W-Choices keep PKG's two choices for ordinary keys
and give the *heavy hitters* (frequency p_k >= θ, found with SpaceSaving or exact counts)
more candidates:

* **W-Choices** ("mode w"): a heavy key may go to any of the n partitions;
* **D-Choices** ("mode d"): a heavy key gets ``d_k`` candidates, sized to its frequency.

Heavy threshold θ = 1/(5n) (:data:`HEAVY_THRESHOLD_FACTOR`): the condition p_1 <= 1/(5n) of
Nasir et al.'s Theorem 5.1, under which two choices provably suffice, and the threshold
f > 1/(5n) that TAG (Yang et al. §3.3.2) takes from the same authors. Keys above it are the
ones two choices cannot be trusted with.

Our reading of "d sized to the key's frequency" (the 2016 paper solves a balls-in-bins
inequality for one d shared by all heavy keys; we size per key, which is at least as
balanced and uses fewer candidates for the lighter heavy keys): a heavy key split evenly over
``d`` candidates puts ``p_k / d`` of the stream on each; we keep that below
``DCHOICES_HEADROOM / n`` (a quarter of an average partition, leaving room for the light
keys the candidate also receives)::

    d_k = min(n, max(2, ceil(p_k * n / DCHOICES_HEADROOM)))

Candidates of a heavy key are *distinct* partitions: PKG's two choices first, then a
deterministic key-seeded permutation of the others (``random.Random`` seeded with an int is
identical in every process, unlike ``hash``).
"""
from __future__ import annotations

import math
import random
from typing import Any, Iterable, Mapping

import numpy as np

from ..hashing import hash_family
from .pkg import pkg_candidates
from .splitting import SplittingPartitioner

__all__ = ["ChoicesPartitioner", "dchoices_d", "spread_candidates", "HEAVY_THRESHOLD_FACTOR",
           "DCHOICES_HEADROOM"]

#: θ = HEAVY_THRESHOLD_FACTOR / n (Nasir et al. Thm 5.1's p_1 <= 1/(5n); Yang et al. §3.3.2).
HEAVY_THRESHOLD_FACTOR: float = 0.2
#: Largest share of an average partition one heavy key may put on one candidate (D-Choices).
#: Measured (bench_routing (b), 2*10^5 Zipf records, 5 sources): 0.5 left max/avg 1.03 (z=1,
#: n=32) and 1.11 (z=1.5, n=32); 0.25 gives <= 1.003 with 20-25 % of W-Choices' replicas.
DCHOICES_HEADROOM: float = 0.25
#: Family member seeding the permutation of extra candidates (0 and 2 are PKG's choices).
_SPREAD_HASH = 3
_MODES = ("d", "w")


def dchoices_d(p: float, num_partitions: int, headroom: float = DCHOICES_HEADROOM) -> int:
    """Number of choices ``d_k`` of a key of relative frequency ``p`` (see module docstring).

    Examples
    --------
    >>> dchoices_d(0.5, 8), dchoices_d(0.01, 8), dchoices_d(0.9, 4)
    (8, 2, 4)
    """
    return int(min(num_partitions, max(2, math.ceil(p * num_partitions / headroom - 1e-12))))


def spread_candidates(key: Any, d: int, num_partitions: int) -> tuple[int, ...]:
    """``min(d, n)`` distinct candidates: PKG's two choices, then a key-seeded permutation.

    Examples
    --------
    >>> c = spread_candidates("hot", 5, 8)
    >>> len(set(c)) == 5 and c[0] == pkg_candidates("hot", 8)[0]
    True
    """
    first = list(dict.fromkeys(pkg_candidates(key, num_partitions)))
    d = min(d, num_partitions)
    if len(first) >= d:
        return tuple(first[:d])
    rest = [p for p in range(num_partitions) if p not in first]
    random.Random(hash_family(key, _SPREAD_HASH)).shuffle(rest)
    return tuple(first + rest[: d - len(first)])


class ChoicesPartitioner(SplittingPartitioner):
    """PKG for ordinary keys, more choices for heavy hitters (``splits_keys = True``).

    Parameters
    ----------
    num_partitions : int
        n >= 1.
    heavy_keys : mapping key -> relative frequency p_k (0 < p_k <= 1), or an iterable of
        keys (mode "w" only: W-Choices needs no frequencies).
    mode : {"d", "w"}
        D-Choices (``d_k`` candidates, :func:`dchoices_d`) or W-Choices (all n).
    headroom : float
        :data:`DCHOICES_HEADROOM` (mode "d").

    Notes
    -----
    Stateful local load vector per map task, as PKG (:mod:`.splitting`).

    Examples
    --------
    >>> f = ChoicesPartitioner(8, {"hot": 0.5}, mode="d")
    >>> len(f.candidates("hot")), len(f.candidates("cold")) <= 2
    (8, True)
    """

    def __init__(self, num_partitions: int, heavy_keys: Mapping[Any, float] | Iterable[Any] = (),
                 mode: str = "d", *, headroom: float = DCHOICES_HEADROOM) -> None:
        super().__init__(num_partitions)
        if mode not in _MODES:
            raise ValueError(f"mode={mode!r}; expected 'd' (D-Choices) or 'w' (W-Choices)")
        if not 0 < headroom <= 1:
            raise ValueError(f"headroom={headroom!r}; expected 0 < headroom <= 1")
        self.mode = mode
        self.headroom = float(headroom)
        n = self.num_partitions
        if isinstance(heavy_keys, Mapping):
            freq = dict(heavy_keys)
        elif mode == "w":
            freq = {k: 1.0 for k in heavy_keys}
        else:
            raise TypeError("mode='d' needs heavy_keys as a mapping key -> relative frequency; "
                            f"got {type(heavy_keys).__name__}")
        table: dict[Any, tuple[int, ...]] = {}
        for k, p in freq.items():
            if not (isinstance(p, (int, float, np.floating)) and 0 < p <= 1):
                raise ValueError(f"heavy key {k!r:.40} has frequency {p!r}; expected 0 < p <= 1")
            d = n if mode == "w" else dchoices_d(float(p), n, self.headroom)
            table[k] = spread_candidates(k, d, n)  # validates the key (clear hashing error)
        self.heavy_keys: dict[Any, float] = freq
        self._table = table

    def candidates(self, key: Any) -> tuple[int, ...]:
        try:
            c = self._table.get(key)
        except TypeError:
            c = None
        return c if c is not None else pkg_candidates(key, self.num_partitions)

    def num_choices(self, key: Any) -> int:
        """Distinct candidates of ``key``."""
        return len(set(self.candidates(key)))

    def __repr__(self) -> str:
        return (f"ChoicesPartitioner(num_partitions={self.num_partitions}, mode={self.mode!r}, "
                f"heavy_keys={len(self.heavy_keys)})")
