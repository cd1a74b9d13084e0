"""Undo a batch (or a move) whose commit failed: the operator is not advanced.

A batch changes the operator in memory (its position, records, kept outputs, cached RDDs)
before its checkpoint commits; when the commit fails (a read-only or full directory, a lost
lease) a retry of the same batch on the same object must apply it once. A
:class:`Snapshot` is the value each part gives before the batch and takes back after a
failure: the operator's :class:`~sparkbalance.state.position.Position` (frozen), the marks
of its records part (put back into the same lists: a caller's reference to ``op.history``
stays valid) and of its durability part, and a copy of the cache bookkeeping with its lists, so
that the RDDs cached for the failed batch are released and those of the state before it
stay cached (its cache is released only after the commit: see
``KeyedStateOperator._record``).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

__all__ = ["Snapshot"]


def _rdds_of(obj: Any) -> list[Any]:
    """The RDDs an object's attributes (or lists of them) refer to."""
    found = []
    for v in vars(obj).values():
        for x in (v if isinstance(v, (list, tuple)) else [v]):
            if hasattr(x, "unpersist") and hasattr(x, "_jrdd"):
                found.append(x)
    return found


def _cache_copy(cache: Any) -> Any:
    """A copy of the cache bookkeeping whose lists are its own (the live one's grow)."""
    if cache is None:
        return None
    saved = copy.copy(cache)
    for k, v in vars(cache).items():
        if isinstance(v, list):
            setattr(saved, k, list(v))
    return saved


@dataclass(frozen=True)
class Snapshot:
    """The operator's parts as they were: a value taken before a batch or a move, put back
    after a failure.

    Parameters
    ----------
    position : the operator's position (a frozen value, put back as it is).
    records : the records part's mark (:meth:`~sparkbalance.state.ledger.Ledger.mark`).
    commits : the durability part's mark (what it had committed and kept).
    cache : a copy of the cache bookkeeping (:meth:`take` makes it).

    Examples
    --------
    >>> class Cache:
    ...     def __init__(self): self._held = []
    >>> live = Cache()
    >>> snap = Snapshot.take(position=3, records=("b0",), cache=live)
    >>> live._held.append("rdd")
    >>> snap.position, snap.records, snap.restore_cache(live)._held
    (3, ('b0',), [])
    """

    position: Any
    records: Any = None
    commits: Any = None
    cache: Any = None

    @classmethod
    def take(cls, position: Any, records: Any = None, commits: Any = None,
             cache: Any = None) -> "Snapshot":
        """The snapshot of these parts now (the cache bookkeeping copied with its lists)."""
        return cls(position, records, commits, _cache_copy(cache))

    def restore_cache(self, live: Any) -> Any:
        """Release the RDDs ``live`` cached since the snapshot; return the cache bookkeeping
        to use from now on (a copy of the one taken: the snapshot stays as it was)."""
        keep = {id(r) for r in _rdds_of(self.cache)}
        for r in _rdds_of(live):
            if id(r) not in keep:
                try:
                    r.unpersist()
                except Exception:  # noqa: BLE001 - releasing is best effort
                    pass
        return _cache_copy(self.cache)
