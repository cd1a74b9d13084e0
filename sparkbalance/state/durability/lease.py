"""One owner per checkpoint directory: a lease file with the owner and a heartbeat.

Two operators writing one ``checkpoint_dir`` would interleave their commits (the last
writer wins, and a resume returns a mix of both streams). The owner therefore holds
``lease.json``::

    {"owner": "<uuid>", "host": "...", "pid": 123, "heartbeat": <unix s>, "timeout": 30.0}

- **acquire**: created only when absent (:meth:`create_exclusive` of the store: a hard link
  locally, a rename without overwrite on HDFS), so of two starters exactly one wins; a lease
  held by a live owner is a :class:`LeaseError` naming the owner and its last heartbeat;
- **heartbeat**: a daemon thread rewrites the heartbeat every ``timeout / 3`` seconds while
  the file still names this owner;
- **stale takeover**: a lease whose heartbeat is older than its timeout (a killed driver)
  is moved aside under a name of the taker (a rename: of two takers only one moves it) and
  re-created; a lease that was refreshed in between is put back and the start refused;
- **fence**: :meth:`Lease.check` runs before every commit and refuses to commit when the
  file names another owner (this one was paused past its timeout and taken over);
- **release**: :meth:`Lease.release` (``KeyedStateOperator.close``, or the interpreter's
  exit) removes the file.

Staleness compares the heartbeat, written with the owner's clock, with the taker's clock:
hosts of one cluster are assumed synchronised to well under the timeout.
"""
from __future__ import annotations

import atexit
import json
import logging
import os
import socket
import threading
import time
import uuid
import weakref
from typing import Any, Callable

from sparkbalance.state.durability.manifest import CheckpointError
from sparkbalance.state.durability.store import error_cause

__all__ = ["Lease", "LeaseError", "LEASE", "DEFAULT_LEASE_TIMEOUT", "check_lease_timeout"]

_LOG = logging.getLogger(__name__)

LEASE = "lease.json"
#: Seconds without a heartbeat after which a lease is stale and may be taken over: a
#: restart after a driver crash waits at most this long; a live owner heartbeats every
#: third of it, so a pause of a few seconds (GC, a loaded host) never loses the lease.
DEFAULT_LEASE_TIMEOUT: float = 30.0


class LeaseError(CheckpointError):
    """The checkpoint directory is owned by another operator (or this one lost it)."""


def check_lease_timeout(value: Any) -> float:
    """``lease_timeout`` in seconds: a number > 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"lease_timeout={value!r}; expected seconds > 0")
    return float(value)


class Lease:
    """The lease of one operator on one store.

    Parameters
    ----------
    store : the checkpoint store (:mod:`~sparkbalance.state.durability.store`).
    timeout : seconds without a heartbeat before the lease is stale.
    clock : ``time.time`` (tests pass a fake clock).

    Examples
    --------
    >>> lease = Lease(store_for(None, "/tmp/ck"), timeout=30.0)    # doctest: +SKIP
    >>> lease.acquire(); lease.check(); lease.release()            # doctest: +SKIP
    """

    def __init__(self, store: Any, timeout: float = DEFAULT_LEASE_TIMEOUT,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.timeout = check_lease_timeout(timeout)
        self.clock = clock
        self.owner = uuid.uuid4().hex
        self.held = False
        self.lost: str | None = None
        self._stop = threading.Event()
        # A beat that read the file just before release() removed it must not write it
        # back (a released directory would then look held by this owner until stale).
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ file
    def _record(self) -> dict:
        return {"owner": self.owner, "host": socket.gethostname(), "pid": os.getpid(),
                "heartbeat": self.clock(), "timeout": self.timeout}

    def _encode(self) -> bytes:
        return json.dumps(self._record(), sort_keys=True).encode()

    def read(self, name: str = LEASE) -> dict | None:
        """The lease record of ``name``; None when absent. A file that is not a lease is a
        :class:`LeaseError` (never silently taken over)."""
        try:
            if not self.store.exists(name):
                return None
            raw = self.store.read_bytes(name)
        except OSError:
            return None                       # removed between exists and read
        try:
            rec = json.loads(raw.decode())
            float(rec["heartbeat"]), float(rec["timeout"]), str(rec["owner"])
        except Exception:  # noqa: BLE001 - any malformed lease
            raise LeaseError(f"{self.store.display(name)}: not a valid lease file ({raw[:60]!r}"
                             "); remove it if no operator uses this checkpoint_dir") from None
        return rec

    def _describe(self, rec: dict) -> str:
        age = self.clock() - float(rec["heartbeat"])
        return (f"operator {rec['owner'][:12]} (host {rec.get('host', '?')}, pid "
                f"{rec.get('pid', '?')}), last heartbeat {age:.1f} s ago, stale after "
                f"{float(rec['timeout']):g} s")

    # ------------------------------------------------------------------ protocol
    def acquire(self) -> None:
        """Take the lease, or raise :class:`LeaseError` (held by a live owner) or
        :class:`CheckpointError` (the directory cannot be written)."""
        where = self.store.display()
        for _ in range(4):
            try:
                if self.store.create_exclusive(LEASE, self._encode()):
                    self.held, self.lost = True, None
                    self._start()
                    return
            except OSError as e:
                raise CheckpointError(f"checkpoint_dir {where}: cannot write the lease file "
                                      f"({error_cause(e)}); is the directory writable?"
                                      ) from None
            cur = self.read()
            if cur is None:
                continue                      # released in between: try again
            if cur["owner"] == self.owner:
                self.held = True
                self._start()
                return
            if self.clock() - float(cur["heartbeat"]) <= float(cur["timeout"]):
                raise LeaseError(f"checkpoint_dir {where} is in use by {self._describe(cur)}; "
                                 "one operator per checkpoint_dir (close() the other, or "
                                 "give this one another directory)")
            self._take_over(cur)
        raise LeaseError(f"checkpoint_dir {where}: could not take the lease (other operators "
                         "are starting on it at the same time)")

    def _take_over(self, stale: dict) -> None:
        aside = f"{LEASE}.stale-{self.owner}"
        if not self.store.rename(LEASE, aside):
            return                            # another taker moved it first
        moved = self.read(aside)
        if moved is not None and moved.get("heartbeat") != stale["heartbeat"]:
            # the owner heartbeated between our read and the rename: it is alive
            if not self.store.exists(LEASE):
                self.store.rename(aside, LEASE)
            raise LeaseError(f"checkpoint_dir {self.store.display()} is in use by "
                             f"{self._describe(moved)}")
        _LOG.warning("sparkbalance: taking over the stale lease of %s on %s",
                     self._describe(stale), self.store.display())
        self.store.remove(aside)

    def check(self) -> None:
        """Fence before a commit: the lease file still names this owner."""
        if not self.held:
            raise LeaseError(f"checkpoint_dir {self.store.display()}: this operator holds no "
                             "lease (closed?)")
        cur = self.read()
        if cur is None or cur["owner"] != self.owner:
            self.held = False
            who = "nobody" if cur is None else self._describe(cur)
            raise LeaseError(f"checkpoint_dir {self.store.display()}: the lease was taken over "
                             f"(now held by {who}); this operator must not commit")

    def heartbeat(self) -> None:
        """Refresh the heartbeat while the file names this owner."""
        with self._lock:
            if not self.held:
                return
            cur = self.read()
            if cur is None or cur["owner"] != self.owner:
                self.lost = ("the lease file names another owner" if cur
                             else "the lease file is gone")
                return
            self.store.write_atomic(LEASE, self._encode())

    def release(self) -> None:
        """Stop the heartbeat and remove the lease file if it is still this owner's."""
        self._stop.set()
        with self._lock:
            if not self.held:
                return
            self.held = False
            try:
                cur = self.read()
                if cur is not None and cur["owner"] == self.owner:
                    self.store.remove(LEASE)
            except Exception:  # noqa: BLE001 - release is best effort (a stopped context)
                pass

    # ------------------------------------------------------------------ thread
    def _start(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=_beat, args=(weakref.ref(self), self._stop,
                                                            self.timeout / 3.0),
                                        name=f"sparkbalance-lease-{self.owner[:8]}",
                                        daemon=True)
        self._thread.start()
        atexit.register(_release_at_exit, weakref.ref(self))


def _release_at_exit(ref: "weakref.ref[Lease]") -> None:
    """An interpreter that exits without ``close()`` still frees the directory (a killed
    one cannot: its lease goes stale after the timeout)."""
    lease = ref()
    if lease is not None:
        lease.release()


def _beat(ref: "weakref.ref[Lease]", stop: threading.Event, every: float) -> None:
    """Heartbeat loop; holds only a weak reference, so a forgotten operator's lease stops
    beating (and becomes stale) once the operator is garbage collected."""
    while not stop.wait(every):
        lease = ref()
        if lease is None:
            return
        try:
            lease.heartbeat()
        except Exception as e:  # noqa: BLE001 - a failed beat is retried; check() fences
            _LOG.warning("sparkbalance: lease heartbeat on %s failed: %s",
                         lease.store.display(), error_cause(e))
        del lease
