"""One call's reads of a session's conf from one snapshot: the session-wide mode's hooks read
up to a dozen settings per intercepted call (``enabled``, the check's budget and threshold,
the strategy keys, theta, ...), each a driver round trip of its own.

Within :func:`kept_reads` (one call's decision, on this thread) the first read of a
session takes every key set on it in one request (``RuntimeConfig.getAll`` rendered as one
string in the JVM: two round trips) and the others are answered from it. Outside the
block, and for Spark Connect sessions (their ``getAll`` is not the JVM's), every read asks
the session as before, so a ``spark.conf.set`` between two calls is always seen: nothing
is kept past the block.

Examples
--------
>>> with kept_reads():                                    # doctest: +SKIP
...     conf.read(df, "enabled"), conf.read(df, "check.sample_rows")   # one request
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

__all__ = ["kept_reads", "kept_value", "NOT_KEPT"]

#: What :func:`kept_value` returns outside a block (or for a session it cannot snapshot).
NOT_KEPT = object()
#: Between the entries of the JVM's rendering (a character no Spark key holds).
_SEP = "\u241e"
_LOCAL = threading.local()


@contextlib.contextmanager
def kept_reads() -> Iterator[None]:
    """Within the block, this thread's conf reads of a session come from one snapshot of it
    (a nested block shares the outer one's)."""
    if getattr(_LOCAL, "kept", None) is not None:
        yield
        return
    _LOCAL.kept = {}
    try:
        yield
    finally:
        _LOCAL.kept = None


def kept_value(session: Any, key: str) -> Any:
    """``key``'s value in the block's snapshot of ``session`` (None when unset), or
    :data:`NOT_KEPT` outside a block or when the session cannot be read at once."""
    kept = getattr(_LOCAL, "kept", None)
    if kept is None:
        return NOT_KEPT
    got = kept.get(id(session))
    if got is None or got[0] is not session:
        got = kept[id(session)] = (session, _snapshot(session))
    return NOT_KEPT if got[1] is None else got[1].get(key)


def _snapshot(session: Any) -> dict[str, str] | None:
    """Every key set on ``session`` (its runtime conf, launch settings included), or None."""
    jconf = getattr(session.conf, "_jconf", None)
    if jconf is None:          # Spark Connect
        return None
    text = jconf.getAll().mkString(_SEP)
    out: dict[str, str] = {}
    for entry in text.split(_SEP) if text else ():
        # a Scala map's entry renders as "key -> value" (no key holds " -> ")
        key, arrow, value = entry.partition(" -> ")
        if not arrow or not key:
            return None        # not the rendering expected: read key by key
        out[key] = value
    return out
