"""Kill the driver of a ``stateful(...).applyInPandasWithState`` query (SIGKILL to its
process group: Python, its JVM, the executors) mid-stream, twice, and start it again from
both checkpoints (the query's and the state's under it) until the stream is done: the
parquet sink holds every batch's outputs exactly once and the running counts are exact.

The driver is this file run as a script (``python test_stateful_faults.py SRC CK OUT``).
"""
from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

MASTER = os.environ.get("SPARKBALANCE_KILL_MASTER", "local[2]")
NUM_FILES = 8
KEYS = ["a", "b", "c", "d", "e"]


def _file_keys(i: int) -> list[str]:
    # skewed and moving: key i % 5 is hot in file i
    return [KEYS[i % 5]] * 6 + KEYS[: 1 + i % 4]


def expected_rows() -> list[tuple]:
    """(key, running count) per key and batch, one file per batch."""
    totals: collections.Counter = collections.Counter()
    rows = []
    for i in range(NUM_FILES):
        c = collections.Counter(_file_keys(i))
        totals.update(c)
        rows += [(k, totals[k]) for k in c]
    return sorted(rows)


def running_count(key, pdfs, state):
    import pandas as pd
    n = sum(len(p) for p in pdfs) + (state.get[0] if state.exists else 0)
    state.update((n,))
    time.sleep(0.5)                   # widen the window a kill can land in
    yield pd.DataFrame({"k": [key[0]], "n": [n]})


def driver(src: str, ck: str, out: str) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from sparkbalance.state.pandas_state import stateful
    spark = (SparkSession.builder.master(MASTER).appName("sparkbalance-stateful-kill")
             .config("spark.sql.shuffle.partitions", "3")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    print("started", flush=True)
    df = spark.readStream.schema("k string").option("maxFilesPerTrigger", 1).json(src)
    q = (stateful(df.groupBy("k"), num_partitions=3, planner="mixed")
         .applyInPandasWithState(running_count, "k string, n long", "n long", "Append",
                                 "NoTimeout")
         .writeStream.format("parquet").outputMode("append")
         .option("checkpointLocation", ck).trigger(availableNow=True).start(out))
    q.awaitTermination()
    print("done", flush=True)
    spark.stop()


def _run(env: dict, log: Path, kill_after: tuple | None, args: list[str],
         ck: Path) -> int:
    """Run the driver; ``kill_after=(batches, seconds)``: SIGKILL its process group
    ``seconds`` after Spark's offset log holds ``batches`` more batch ids than when it
    started (a point in a planned batch, whatever the host's load or the batch's speed).

    Counted on the offset log, not on the sink: a kill between the file source's own log
    and the offset log (Spark plans a batch by writing both) makes the restarted query take
    two files in one batch, a Spark behaviour that would change the expected rows."""
    with open(log, "w") as f:
        p = subprocess.Popen([sys.executable, __file__, *args], stdout=f,
                             stderr=subprocess.STDOUT, env=env, start_new_session=True)
    offsets = ck / "offsets"

    def planned() -> int:
        return (sum(1 for m in offsets.iterdir() if m.name.isdigit())
                if offsets.exists() else 0)

    before = planned()
    try:
        seen = None
        deadline = time.monotonic() + 900
        while p.poll() is None and time.monotonic() < deadline:
            if kill_after is not None and seen is None and planned() - before >= kill_after[0]:
                seen = time.monotonic()
            if seen is not None and time.monotonic() - seen >= kill_after[1]:
                break
            time.sleep(0.05)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    return p.returncode


@pytest.mark.slow
def test_driver_killed_mid_stream_outputs_exactly_once(tmp_path):
    src, ck, out = tmp_path / "in", tmp_path / "ck", tmp_path / "out"
    src.mkdir()
    for i in range(NUM_FILES):
        with open(src / f"{i:03d}.json", "w") as f:
            f.writelines(json.dumps({"k": k}) + "\n" for k in _file_keys(i))
        # the file source takes files in modification-time order: make it the name order
        os.utime(src / f"{i:03d}.json", (time.time() - 100 + i,) * 2)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    args = [str(src), str(ck), str(out)]
    # mid-batch (the function sleeps 0.5 s per key), then as a batch starts
    for n, after in enumerate(((3, 0.3), (2, 0.0))):
        _run(env, tmp_path / f"kill{n}.log", after, args, ck)
    rc = _run(env, tmp_path / "final.log", None, args, ck)
    log = (tmp_path / "final.log").read_text()
    assert rc == 0 and "done" in log, log[-3000:]
    commits = sorted(int(p.name) for p in (ck / "commits").iterdir() if p.name.isdigit())
    assert commits == list(range(NUM_FILES))
    import pandas as pd          # no Spark in the test process: pyarrow skips "_" folders
    pdf = pd.read_parquet(out)
    rows = sorted(zip(pdf["k"], pdf["n"].astype(int)))
    assert rows == expected_rows()


if __name__ == "__main__":
    driver(*sys.argv[1:4])
