"""Undo a batch (or a ``scale()``) whose commit failed: the operator is not advanced.

A batch changes the operator in memory (state, sequence number, last batch id, records,
cached RDDs) before its checkpoint commits; when the commit fails (a read-only or full
directory, a lost lease) a retry of the same batch on the same object must apply it once.
:class:`Snapshot` keeps the listed attributes as they were before the batch and puts them
back; lists are restored in place (a caller's reference to ``op.history`` stays valid),
and the cache bookkeeping object is copied with its lists so that the RDDs cached for the
failed batch are released and those of the state before it stay cached (its cache is
released only after the commit: see ``KeyedStateOperator._record``).
"""
from __future__ import annotations

import copy
from typing import Any, Iterable

__all__ = ["Snapshot"]


def _rdds_of(obj: Any) -> list[Any]:
    """The RDDs an object's attributes (or lists of them) refer to."""
    found = []
    for v in vars(obj).values():
        for x in (v if isinstance(v, (list, tuple)) else [v]):
            if hasattr(x, "unpersist") and hasattr(x, "_jrdd"):
                found.append(x)
    return found


class Snapshot:
    """Attributes ``fields`` of ``obj`` (and ``cache``, the name of its cache-bookkeeping
    attribute) as they are now.

    Examples
    --------
    >>> class Op: pass
    >>> op = Op(); op.seq, op.history = 3, [1]
    >>> snap = Snapshot(op, ("seq", "history"))
    >>> op.seq = 4; op.history.append(2)
    >>> snap.restore(op); op.seq, op.history
    (3, [1])
    """

    def __init__(self, obj: Any, fields: Iterable[str], cache: str | None = None) -> None:
        self._values: dict[str, Any] = {}
        for f in fields:
            v = getattr(obj, f)
            self._values[f] = (v, list(v)) if isinstance(v, list) else (v, None)
        self._cache_name = cache
        if cache is not None:
            live = getattr(obj, cache)
            saved = copy.copy(live)
            for k, v in vars(live).items():
                if isinstance(v, list):
                    setattr(saved, k, list(v))
            self._cache = saved

    def restore(self, obj: Any) -> None:
        """Put the attributes back; release RDDs cached since the snapshot."""
        for f, (v, items) in self._values.items():
            if items is not None:
                v[:] = items
            setattr(obj, f, v)
        if self._cache_name is not None:
            live = getattr(obj, self._cache_name)
            keep = {id(r) for r in _rdds_of(self._cache)}
            for r in _rdds_of(live):
                if id(r) not in keep:
                    try:
                        r.unpersist()
                    except Exception:  # noqa: BLE001 - releasing is best effort
                        pass
            setattr(obj, self._cache_name, self._cache)
