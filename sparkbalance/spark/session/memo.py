"""Values kept once per live Spark session (the bridge's, the executors' Python check).

Examples
--------
>>> memo = SessionMemo()
"""
from __future__ import annotations

import threading
from typing import Any, Callable

__all__ = ["SessionMemo"]


class SessionMemo:
    """Values computed once per live Spark context: ``get(sc, fn)`` runs ``fn`` the first
    time a context is seen, and returns the kept value after.

    Keyed by the identity of the context's JVM handle (``sc._jsc``), kept with it, so a
    stopped and restarted session (a new handle at a reused address) is a new session.

    Examples
    --------
    >>> class Ctx:
    ...     _jsc = object()
    >>> memo, calls = SessionMemo(), []
    >>> ctx = Ctx()
    >>> [memo.get(ctx, lambda: calls.append(1) or len(calls)) for _ in range(3)]
    [1, 1, 1]
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._values: dict[int, tuple[Any, Any]] = {}

    def get(self, sc: Any, fn: Callable[[], Any]) -> Any:
        jsc = sc._jsc
        with self._lock:  # two threads' first use: one load, one log line
            kept = self._values.get(id(jsc))
            if kept is None or kept[0] is not jsc:
                kept = self._values[id(jsc)] = (jsc, fn())
            return kept[1]
