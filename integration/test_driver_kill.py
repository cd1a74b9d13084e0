"""Kill the driver (SIGKILL to its process group: Python, its JVM and the local cluster's
executors) at random points of a 20-batch stream and start it again until it finishes:
the final state and every batch's delivered outputs equal a plain-Python reference."""
from __future__ import annotations

import os
import pickle
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from driver_kill_stream import NUM_BATCHES, reference  # noqa: E402

#: local[2] by default: the point is the driver's death, and a local cluster's startup on a
#: loaded host takes longer than the stream; set it to "local-cluster[2,1,1024]" to kill
#: executors' driver too (the process group is killed either way).
MASTER = os.environ.get("SPARKBALANCE_KILL_MASTER", "local[2]")
KILLS = 6


def _happened(event, text, more=0):
    """``event`` is in the log; "progress": ``1 + more`` batches beyond the resumed one
    were delivered (the replay of the last committed batch re-delivers it first: that is
    no progress)."""
    if event != "progress":
        return event in text
    if "resumed" not in text:
        return False
    fresh = "resumed last_batch_id=None" in text
    return text.count("\ndelivered ") >= (1 if fresh else 2) + more


def _run(cmd, env, log, kill_after):
    """Start the driver; ``kill_after`` = (event, seconds[, more]): SIGKILL the process
    group that many seconds after the log first shows ``event`` ("start": at once;
    "progress": ``1 + more`` fresh deliveries). Returns rc."""
    event, delay, *more = kill_after if kill_after else (None, None)
    with open(log, "w") as f:
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env,
                             start_new_session=True)
    try:
        seen_at = time.monotonic() if event == "start" else None
        deadline = time.monotonic() + 1500
        while p.poll() is None and time.monotonic() < deadline:
            if event is not None and seen_at is None and _happened(event, log.read_text(),
                                                                   *more):
                seen_at = time.monotonic()
            if seen_at is not None and time.monotonic() - seen_at >= delay:
                break
            time.sleep(0.2)
    finally:                     # also on a test timeout: never leave a driver behind
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    return p.returncode


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_driver_killed_at_random_points_resumes_exactly(tmp_path):
    ck, sink = tmp_path / "ck", tmp_path / "sink"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               PYTHONPATH=os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, str(HERE / "driver_kill_stream.py"), str(ck), str(sink), MASTER]
    rng = random.Random(19)
    kills, logs = [], []
    for attempt in range(KILLS + 4):
        log = tmp_path / f"run-{attempt}.log"
        # random points: once in the startup, once right after the resume (the first
        # batch's merge, commit or delivery), then a random moment after the run's first
        # or second fresh delivery (every run makes progress, and the kill lands in any
        # step of a batch). Counted in deliveries, not seconds: on a quiet machine a batch
        # takes well under a second, and kills timed in seconds let the stream finish
        # before the last one (5 kills of 6 seen once).
        plan = None
        if len(kills) < KILLS:
            plan = (("start", rng.uniform(1, 6)) if attempt == 0 else
                    ("resumed", rng.uniform(0, 1.5)) if attempt == 1 else
                    ("progress", rng.uniform(0, 1.0), rng.randrange(2)))
        rc = _run(cmd, env, log, plan)
        text = log.read_text()
        logs.append(text)
        if rc == 0:
            break
        if rc != -signal.SIGKILL:
            pytest.fail(f"run {attempt} failed (rc {rc}):\n{text[-3000:]}")
        done = [line for line in text.splitlines() if line.startswith("delivered")]
        kills.append(done[-1] if done else "before the first delivery")
    else:
        pytest.fail(f"did not finish after {len(logs)} runs; kills after: {kills}")
    print(f"killed {len(kills)} times, after: {kills}")
    resumed = [line for t in logs for line in t.splitlines() if line.startswith("resumed")]
    print("resumes:", resumed)
    assert len(kills) == KILLS
    # each restart found the killed driver's process gone and took its lease at once
    lease = [float(line.split()[3]) for t in logs[1:] for line in t.splitlines()
             if line.startswith("lease handled in ")]
    print("lease handling per restart (s):", lease)
    assert lease and max(lease) < 2.0 and not any("waiting:" in t for t in logs)
    state, outs = reference()
    assert pickle.loads((sink / "final.pkl").read_bytes()) == state
    for t in range(NUM_BATCHES):
        got = pickle.loads((sink / f"batch-{t:03d}.pkl").read_bytes())
        assert got == outs[t], f"outputs of batch {t}"
