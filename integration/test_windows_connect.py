"""with_window_columns over a Spark Connect session equals plain Spark there.

A Connect session (``SparkSession.builder.remote("local[2]")``) starts its own server JVM
inside the process that asks for it, which cannot share a process with the classic session
of the other integration modules; this module therefore runs its checks in a child Python
process (``python integration/test_windows_connect.py``), one Connect session for the module.
Needs PySpark's connect extras (``pip install "pyspark[connect]"``: grpcio, grpcio-status,
googleapis-common-protos, zstandard); without them the test skips, saying so.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Generous: the Connect server starts in 15-45 s on a shared machine, the checks run ~20 jobs.
TIMEOUT_S = 900


def _connect_available() -> str | None:
    try:
        import grpc  # noqa: F401
        import google.rpc  # noqa: F401
        import zstandard  # noqa: F401
    except ImportError as exc:
        return f"PySpark's connect extras are missing ({exc}); pip install 'pyspark[connect]'"
    return None


def test_with_window_columns_on_spark_connect():
    missing = _connect_available()
    if missing:
        pytest.skip(missing)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    proc = subprocess.run([sys.executable, __file__], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert proc.returncode == 0 and lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(lines[-1])
    assert report["session"].startswith("pyspark.sql.connect"), report
    assert report["equal"] == ["hot", "two_columns"], report
    assert report["kinds"]["sd"].startswith("plain:"), report
    assert report["kinds"]["rn"] == "rank" and report["kinds"]["lg"] == "halo", report


def _run() -> dict:
    """The checks, on a Connect session of this process (run as a script)."""
    import random

    from pyspark.sql import SparkSession, Window, functions as F
    from pyspark.testing import assertDataFrameEqual

    from sparkbalance.spark.window.windows import explain_split, with_window_columns

    spark = (SparkSession.builder.remote("local[2]")
             .config("spark.sql.shuffle.partitions", "4")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    rnd = random.Random(5)
    rows = [("hot" if rnd.random() < 0.8 else f"c{rnd.randrange(6)}", rnd.randrange(2),
             None if rnd.random() < 0.1 else rnd.randrange(30), u,
             None if rnd.random() < 0.1 else rnd.randrange(10)) for u in range(400)]
    df = spark.createDataFrame(rows, "k string, j int, t int, u int, x int")
    report: dict = {"session": type(spark).__module__, "equal": []}
    for label, part in (("hot", ["k"]), ("two_columns", ["k", "j"])):
        w = Window.partitionBy(*part).orderBy(F.col("t").desc_nulls_last(), "u")
        wt = Window.partitionBy(*part).orderBy("t")
        cols = {"rn": F.row_number().over(w), "dr": F.dense_rank().over(wt),
                "cd": F.cume_dist().over(wt), "nt": F.ntile(3).over(w),
                "s": F.sum("x").over(wt), "a": F.avg("x").over(w),
                "lg": F.lag("x", 2).over(w), "rows": F.sum("x").over(w.rowsBetween(-2, 1)),
                "rng": F.max("x").over(wt.rangeBetween(-3, 3)),
                "tot": F.count("x").over(Window.partitionBy(*part)),
                "sd": F.stddev("x").over(w)}
        if label == "hot":
            report["kinds"] = explain_split(df, **cols)
        assertDataFrameEqual(with_window_columns(df, 4, **cols), df.withColumns(cols))
        report["equal"].append(label)
    spark.stop()
    return report


if __name__ == "__main__":
    print(json.dumps(_run()))
