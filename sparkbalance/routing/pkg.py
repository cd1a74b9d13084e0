"""Partial Key Grouping, PKG (Nasir et al., ICDE 2015).

Two techniques (Nasir et al. §3):

* **key splitting** — a key may go to either of two candidate partitions
  ``h_1(k) mod n`` and ``h_2(k) mod n`` (two independent stable hashes), so its state is
  split over at most two partitions and the adapters add a merge step;
* **local load estimation** — each *source* (here: each Spark map task) keeps its own
  vector of records it has sent per partition and sends each record to the candidate with
  the smaller local load. Nasir et al. §3.2: the global imbalance is at most the sum of the
  local ones, so no coordination is needed.

Structure (Storm's ``PartialKeyGrouping``): deterministic candidates
(:func:`pkg_candidates`, pure) + a stateful selector (least local load). The load vector is
per instance and reset on unpickling, i.e. one vector per Spark map task; see
:mod:`sparkbalance.routing.splitting` for the state contract and what ``assign`` means.
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from ..hashing import P, _A, _B, hash_family_array, raw_hash
from .splitting import SplittingPartitioner

__all__ = ["PKGPartitioner", "pkg_candidates", "pkg_candidates_array",
           "distinct_candidates", "PKG_HASHES"]

#: Family members of the two choices: h_1 = stable_hash (the hash home, so PKG's first
#: choice is where plain hashing puts the key) and h_2 = member 2 (member 1 is key groups').
PKG_HASHES: tuple[int, int] = (0, 2)

_A1, _B1 = _A[PKG_HASHES[0]], _B[PKG_HASHES[0]]
_A2, _B2 = _A[PKG_HASHES[1]], _B[PKG_HASHES[1]]


def pkg_candidates(key: Any, num_partitions: int) -> tuple[int, int]:
    """The two candidates ``(h_1(k) mod n, h_2(k) mod n)`` of ``key`` (they may coincide).

    Examples
    --------
    >>> a, b = pkg_candidates("user-1", 8)
    >>> 0 <= a < 8 and 0 <= b < 8
    True
    """
    r = raw_hash(key)  # one CRC-32 for both hashes; the affine steps are cheap
    return ((r * _A1 + _B1) % P) % num_partitions, ((r * _A2 + _B2) % P) % num_partitions


def distinct_candidates(key: Any, num_partitions: int) -> tuple[int, ...]:
    """Two *distinct* choices: ``a = h_1(k) mod n`` and ``b`` uniform over the other n-1.

    PKG lets its two hashes coincide (then the key has one choice). Time-aware routing
    (TAG) needs a real second choice for keys whose first lands on a slow partition:
    measured with 1 of 4 partitions 4x slower, coinciding pairs alone put 19 % more
    records there than the balanced share.

    Examples
    --------
    >>> a, b = distinct_candidates("user-1", 8)
    >>> a != b and a == pkg_candidates("user-1", 8)[0]
    True
    """
    if num_partitions == 1:
        return (0,)
    r = raw_hash(key)
    a = ((r * _A1 + _B1) % P) % num_partitions
    b = (a + 1 + ((r * _A2 + _B2) % P) % (num_partitions - 1)) % num_partitions
    return a, b


def pkg_candidates_array(keys: Iterable[Any] | np.ndarray, num_partitions: int) -> np.ndarray:
    """Vectorised :func:`pkg_candidates`: ``int64`` array of shape ``(len(keys), 2)``."""
    n = np.uint64(num_partitions)
    cols = [(hash_family_array(keys, i) % n).astype(np.int64) for i in PKG_HASHES]
    return np.stack(cols, axis=1)


class PKGPartitioner(SplittingPartitioner):
    """Two choices per key, least *local* load wins (``splits_keys = True``).

    Parameters
    ----------
    num_partitions : int
        n >= 1.

    Notes
    -----
    Stateful: the instance counts the records it has routed per partition (one vector per
    Spark map task). Every output is one of :meth:`candidates`.

    Examples
    --------
    >>> f = PKGPartitioner(8)
    >>> out = f.assign(["hot"] * 6).tolist()
    >>> set(out) <= set(f.candidates("hot")) and len(out) == 6
    True
    """

    def candidates(self, key: Any) -> tuple[int, int]:
        return pkg_candidates(key, self.num_partitions)

    def candidates_of(self, keys: Iterable[Any] | np.ndarray) -> list[tuple[int, ...]]:
        if isinstance(keys, np.ndarray):
            arr = keys
        else:
            items = list(keys)
            arr = np.empty(len(items), dtype=object)
            arr[:] = items
        if arr.size == 0:
            return []
        return [tuple(row) for row in pkg_candidates_array(arr, self.num_partitions).tolist()]

    def __call__(self, key: Any) -> int:
        # Specialised hot path of SplittingPartitioner.__call__ for exactly two choices.
        memo = self._memo
        c = None
        if memo is not None:
            try:
                c = memo.get(key)
            except TypeError:  # unhashable: raw_hash raises the clear error
                pass
        if c is None:
            c = pkg_candidates(key, self.num_partitions)
            self._remember(key, c)
        else:
            self._hits += 1
        loads = self._loads
        a, b = c
        p = a if loads[a] <= loads[b] else b
        loads[p] += 1.0
        return p
