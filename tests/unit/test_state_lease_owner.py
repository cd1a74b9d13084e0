"""A dead owner's lease is taken over at once on its own host; a live owner is still
refused, and an owner on another host still waits for its heartbeat to go stale.

The owner is a real process (a Python child holding a :class:`Lease` on a local store,
SIGKILLed like a crashed driver); no Spark is needed for the lease.
"""
from __future__ import annotations

import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sparkbalance.state.durability.lease import LEASE, Lease, LeaseError, owner_gone, this_process
from sparkbalance.state.durability.store import LocalStore

ROOT = Path(__file__).resolve().parents[2]
HOLDER = textwrap.dedent("""
    import sys, time
    from sparkbalance.state.durability.lease import Lease
    from sparkbalance.state.durability.store import LocalStore
    lease = Lease(LocalStore(sys.argv[1]), 30.0)
    lease.acquire()
    print("held", flush=True)
    time.sleep(600)
""")

needs_proc = pytest.mark.skipif(not this_process(), reason="no /proc: only staleness tells")


def _holder(directory: Path) -> subprocess.Popen:
    """A process holding the lease on ``directory`` (default 30 s timeout)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH",
                                                                                 "")]))
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(directory)], env=env,
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    return p


@needs_proc
def test_a_killed_owner_on_this_host_is_taken_over_at_once_a_live_one_refused(tmp_path,
                                                                            caplog):
    p = _holder(tmp_path)
    try:
        rec = json.loads((tmp_path / LEASE).read_text())
        assert rec["pid"] == p.pid and rec["boot"] and rec["started"] and rec["pidns"]
        assert owner_gone(rec) is None                  # alive
        with pytest.raises(LeaseError, match=f"in use by operator .*pid {p.pid}"):
            Lease(LocalStore(tmp_path), 30.0).acquire()
    finally:
        os.kill(p.pid, signal.SIGKILL)                  # a crashed driver
        p.wait()
    assert owner_gone(rec) == f"its process {p.pid} is gone"
    new = Lease(LocalStore(tmp_path), 30.0)
    with caplog.at_level(logging.INFO, logger="sparkbalance"):
        new.acquire()                                   # heartbeat 30 s fresh: no wait
    try:
        assert json.loads((tmp_path / LEASE).read_text())["owner"] == new.owner
        log = caplog.text
        assert f"its process {p.pid} is gone" in log
        took = float(re.search(r"lease on .* acquired in ([0-9.]+) s", log).group(1))
        print(f"lease handling after the owner's SIGKILL: {took:.3f} s")
        assert took < 2.0 and new.acquire_seconds == pytest.approx(took, abs=1e-3)
    finally:
        new.release()


@needs_proc
def test_a_zombie_or_reused_pid_is_gone_another_host_is_not(tmp_path):
    rec = {"owner": "x", "host": socket.gethostname(), "pid": os.getpid(), **this_process(),
           "heartbeat": time.time(), "timeout": 30.0}
    assert owner_gone(rec) is None                      # this very process
    parent = dict(rec, pid=os.getppid(), started="1")   # alive, but started at another time
    assert owner_gone(parent) == f"pid {os.getppid()} now names another process"
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    while Path(f"/proc/{child.pid}/stat").read_text().split(") ")[1][0] != "Z":
        time.sleep(0.05)                                # exited, not reaped yet
    assert owner_gone(dict(rec, pid=child.pid)) == f"its process {child.pid} has exited"
    child.wait()
    assert owner_gone(dict(rec, pid=child.pid)) == f"its process {child.pid} is gone"
    for elsewhere in (dict(rec, host="another-host"), dict(rec, boot="another-boot"),
                      dict(rec, pidns="pid:[1]"), {k: v for k, v in rec.items()
                                                   if k != "boot"}):
        assert owner_gone(dict(elsewhere, pid=child.pid)) is None


def test_a_dead_owner_on_another_host_waits_for_the_stale_heartbeat(tmp_path):
    class Clock:
        t = 1000.0

        def __call__(self):
            return self.t

    clock = Clock()
    st = LocalStore(tmp_path)
    # an owner on another host whose pid runs nothing here: only its heartbeat tells
    (tmp_path / LEASE).write_text(json.dumps({
        "owner": "remote", "host": "another-host", "pid": 2 ** 22 + 7, "boot": "b",
        "pidns": "pid:[1]", "started": "1", "heartbeat": clock.t, "timeout": 10.0}))
    new = Lease(st, 10.0, clock=clock)
    clock.t += 5
    with pytest.raises(LeaseError, match="in use by operator remote"):
        new.acquire()
    clock.t += 6
    new.acquire()                                       # stale: taken over, as before
    assert json.loads((tmp_path / LEASE).read_text())["owner"] == new.owner
    new.release()
