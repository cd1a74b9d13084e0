"""One owner per checkpoint directory: a lease file with the owner and a heartbeat.

Two operators writing one ``checkpoint_dir`` would interleave their commits (the last
writer wins, and a resume returns a mix of both streams). The owner therefore holds
``lease.json``::

    {"owner": "<uuid>", "host": "...", "pid": 123, "boot": "<boot id>", "pidns": "pid:[...]",
     "started": "<start ticks>", "heartbeat": <unix s>, "timeout": 30.0}

- **acquire**: created only when absent (:meth:`create_exclusive` of the store: a hard link
  locally, a rename without overwrite on HDFS), so of two starters exactly one wins; a lease
  held by a live owner is a :class:`LeaseError` naming the owner and its last heartbeat;
- **heartbeat**: a daemon thread rewrites the heartbeat every ``timeout / 3`` seconds while
  the file still names this owner;
- **stale takeover**: a lease whose heartbeat is older than its timeout (a killed driver)
  is moved aside under a name of the taker (a rename: of two takers only one moves it) and
  re-created; a lease that was refreshed in between is put back and the start refused;
- **dead-owner takeover**: a taker on the owner's host (same host name, boot id and pid
  namespace, from ``/proc`` on Linux) whose process is gone (no such pid, a zombie, or the
  pid now names a process started at another time) takes the lease over at once, by the
  same moving aside, instead of waiting for the heartbeat to go stale: a driver that
  crashed and was restarted resumes without waiting. A taker on another host, or where
  ``/proc`` tells nothing, waits for staleness;
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
from pathlib import Path
from typing import Any, Callable

from sparkbalance.state.durability.manifest import CheckpointError
from sparkbalance.state.durability.store import error_cause

__all__ = ["Lease", "LeaseError", "LEASE", "DEFAULT_LEASE_TIMEOUT", "check_lease_timeout",
           "this_process", "owner_gone"]

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


def _process_start(pid: int) -> tuple[str, str] | None:
    """``(state, start time)`` of process ``pid`` from ``/proc/<pid>/stat`` (the start in
    clock ticks since boot, field 22); None when there is no such process (or no /proc)."""
    try:
        stat = Path(f"/proc/{int(pid)}/stat").read_bytes()
    except (OSError, ValueError):
        return None
    # the command name (field 2) may hold spaces and parentheses: count after the last ')'
    rest = stat[stat.rindex(b")") + 2:].split()
    return rest[0].decode(), rest[19].decode()


def this_process() -> dict[str, str]:
    """What names this process on its host beyond its pid: the kernel's boot id, the pid
    namespace and the process's start time (Linux ``/proc``; empty elsewhere).

    Examples
    --------
    >>> sorted(this_process())                  # doctest: +SKIP
    ['boot', 'pidns', 'started']
    """
    out: dict[str, str] = {}
    try:
        out["boot"] = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        out["pidns"] = os.readlink("/proc/self/ns/pid")
    except OSError:
        return {}
    own = _process_start(os.getpid())
    if own is not None:
        out["started"] = own[1]
    return out


def owner_gone(rec: dict, here: dict[str, str] | None = None) -> str | None:
    """Why the owner a lease record names is provably gone, or None when it may be alive.

    Provable only on the owner's own host (same host name, boot id and pid namespace):
    its pid runs no process, a zombie, or a process started at another time (the pid was
    reused). Anywhere else (another host, or no ``/proc``) None: only a stale heartbeat
    tells then.

    Examples
    --------
    >>> owner_gone({"host": "elsewhere", "pid": 1, "boot": "b"}, {"boot": "b"}) is None
    True
    """
    here = this_process() if here is None else here
    if (rec.get("host") != socket.gethostname() or not here.get("boot")
            or rec.get("boot") != here["boot"] or rec.get("pidns") != here.get("pidns")):
        return None
    try:
        pid = int(rec["pid"])
    except (KeyError, TypeError, ValueError):
        return None
    if pid == os.getpid():
        return None                          # this process: alive by definition
    now = _process_start(pid)
    if now is None:
        return f"its process {pid} is gone"
    state, started = now
    if state in ("Z", "X"):
        return f"its process {pid} has exited"
    if rec.get("started") and started != rec["started"]:
        return f"pid {pid} now names another process"
    return None


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
        self._process = this_process()
        #: seconds the last :meth:`acquire` took (lease handling of a start or restart)
        self.acquire_seconds: float | None = None

    # ------------------------------------------------------------------ file
    def _record(self) -> dict:
        return {"owner": self.owner, "host": socket.gethostname(), "pid": os.getpid(),
                **self._process, "heartbeat": self.clock(), "timeout": self.timeout}

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
        :class:`CheckpointError` (the directory cannot be written). How long it took is
        ``acquire_seconds``, also logged (INFO)."""
        t0 = time.monotonic()
        self._acquire()
        self.acquire_seconds = time.monotonic() - t0
        _LOG.info("sparkbalance: lease on %s acquired in %.3f s", self.store.display(),
                  self.acquire_seconds)

    def _acquire(self) -> None:
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
            why = "its heartbeat is stale"
            if self.clock() - float(cur["heartbeat"]) <= float(cur["timeout"]):
                why = owner_gone(cur, self._process)
                if why is None:
                    raise LeaseError(f"checkpoint_dir {where} is in use by "
                                     f"{self._describe(cur)}; one operator per "
                                     "checkpoint_dir (close() the other, or give this one "
                                     "another directory)")
            self._take_over(cur, why)
        raise LeaseError(f"checkpoint_dir {where}: could not take the lease (other operators "
                         "are starting on it at the same time)")

    def _take_over(self, stale: dict, why: str) -> None:
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
        _LOG.warning("sparkbalance: taking over the lease of %s on %s: %s",
                     self._describe(stale), self.store.display(), why)
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
