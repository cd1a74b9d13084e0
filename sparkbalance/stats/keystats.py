"""Per-key statistics gathered from data: what every planner-backed strategy is fitted on."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np

from ..hashing import validate_key

__all__ = ["KeyStats", "as_key_array", "as_weight_array"]


def as_key_array(keys: Iterable[Any] | np.ndarray) -> np.ndarray:
    """1-D array of keys; numeric keys keep a numeric dtype, others become ``object``."""
    if isinstance(keys, np.ndarray):
        if keys.ndim != 1:
            raise ValueError(f"keys must be 1-D; got shape {keys.shape}")
        return keys
    items = list(keys)
    if items and all(type(k) is int for k in items):
        try:
            return np.asarray(items, dtype=np.int64)
        except OverflowError:
            pass
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def as_weight_array(values: Any, n: int, name: str) -> np.ndarray:
    """Validated float64 array of ``n`` finite, non-negative weights."""
    a = np.asarray(values, dtype=np.float64)
    if a.ndim != 1 or a.shape[0] != n:
        raise ValueError(f"{name} has shape {a.shape}; expected ({n},), one value per key")
    if n and (not np.all(np.isfinite(a)) or a.min() < 0):
        raise ValueError(f"{name} must be finite and >= 0; got min={a.min()!r}")
    return a


@dataclass(frozen=True)
class KeyStats:
    """Per-key statistics of one interval (batch, window or sample).

    Parameters
    ----------
    keys : array of distinct keys.
    counts : records per key (scaled up to the whole data when sampled).
    cost : c(k), the work of the key (defaults to ``counts``; seconds when time-aware).
    memory : S(k), state bytes the key would carry if moved (defaults to ``counts``).
    tail_count : records of keys *not* listed (bounded statistics keep only the heaviest
        keys and report the rest as one total; 0 when every key is listed).
    num_distinct : distinct keys in the data, listed or not (approximate when counted by a
        sketch); None means ``len(keys)``.

    Bounded statistics (top-k of a large key space) list the heavy keys only: the planners
    place those and leave the unlisted tail on its hash home, where many light keys spread
    evenly (a tail key of count <= ``tail_count / num_distinct`` on average).

    Examples
    --------
    >>> s = KeyStats.from_counts({"a": 5, "b": 1})
    >>> s.total_cost, len(s)
    (6.0, 2)
    """

    keys: np.ndarray
    counts: np.ndarray
    cost: np.ndarray | None = None
    memory: np.ndarray | None = None
    tail_count: float = 0.0
    num_distinct: float | None = None

    def __post_init__(self) -> None:
        keys = as_key_array(self.keys)
        n = keys.shape[0]
        if keys.dtype == object:
            for k in keys:
                validate_key(k)
        counts = as_weight_array(self.counts, n, "counts")
        cost = counts if self.cost is None else as_weight_array(self.cost, n, "cost")
        memory = counts if self.memory is None else as_weight_array(self.memory, n, "memory")
        object.__setattr__(self, "keys", keys)
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "cost", cost)
        object.__setattr__(self, "memory", memory)
        tail = float(self.tail_count)
        if not (np.isfinite(tail) and tail >= 0):
            raise ValueError(f"tail_count={self.tail_count!r}; expected a finite number >= 0")
        object.__setattr__(self, "tail_count", tail)
        if self.num_distinct is not None:
            d = float(self.num_distinct)
            if not (np.isfinite(d) and d >= n):
                raise ValueError(f"num_distinct={self.num_distinct!r}; expected a finite number "
                                 f">= len(keys)={n}")
            object.__setattr__(self, "num_distinct", d)

    @classmethod
    def from_counts(cls, counts: Mapping[Any, float], cost: Mapping[Any, float] | None = None,
                    memory: Mapping[Any, float] | None = None) -> "KeyStats":
        """Build from ``{key: count}`` (and optional ``{key: cost}``, ``{key: bytes}``)."""
        keys = list(counts)
        c = [counts[k] for k in keys]
        co = None if cost is None else [cost.get(k, 0.0) for k in keys]
        me = None if memory is None else [memory.get(k, 0.0) for k in keys]
        return cls(as_key_array(keys), c, co, me)

    def __len__(self) -> int:
        return int(self.keys.shape[0])

    @property
    def total_cost(self) -> float:
        return float(self.cost.sum())

    @property
    def total_count(self) -> float:
        """Records of the listed keys (add :attr:`tail_count` for the whole data)."""
        return float(self.counts.sum())

    @property
    def data_count(self) -> float:
        """Records of the whole data: listed keys plus the unlisted tail."""
        return self.total_count + self.tail_count

    @property
    def distinct(self) -> float:
        """Distinct keys in the data (``num_distinct``, else the number listed)."""
        return float(len(self)) if self.num_distinct is None else self.num_distinct

    def top(self, k: int) -> "KeyStats":
        """The ``k`` keys of highest cost (ties by position); the dropped keys' records join
        the tail."""
        order = np.argsort(-self.cost, kind="stable")[: max(0, int(k))]
        dropped = self.total_count - float(self.counts[order].sum())
        return KeyStats(self.keys[order], self.counts[order], self.cost[order], self.memory[order],
                        tail_count=self.tail_count + max(0.0, dropped),
                        num_distinct=self.distinct)

    def with_cost(self, cost: np.ndarray) -> "KeyStats":
        """Same keys and counts, another cost vector (e.g. time-weighted)."""
        return KeyStats(self.keys, self.counts, cost, self.memory, self.tail_count,
                        self.num_distinct)

    def as_dict(self) -> dict[Any, float]:
        """``{key: cost}``."""
        return dict(zip(self.keys.tolist(), self.cost.tolist()))
