"""sb.diagnose over a Spark Connect DataFrame: DataFrame expressions only, the same report.

As integration/test_windows_connect.py: a Connect session starts its own server JVM in the
process that asks for it, so the checks run in a child Python process (this file run as a
script), which prints one JSON line. Besides diagnose, the child tries the DataFrame
adapters the troubleshooting page lists as Connect-ready and reports each as ok or the
error's first line. Skips without PySpark's connect extras. ~1 min on an idle machine (the
Connect server's start is most of it).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 900


def test_diagnose_on_spark_connect():
    try:
        import grpc  # noqa: F401
        import google.rpc  # noqa: F401
        import zstandard  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"PySpark's connect extras are missing ({exc}); pip install "
                    "'pyspark[connect]'")
    env = dict(os.environ, SPARK_TESTING="1",   # an ephemeral Connect port: no clash
               PYTHONPATH=os.pathsep.join([str(ROOT)] + [
                   p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    proc = subprocess.run([sys.executable, __file__], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert proc.returncode == 0 and lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    got = json.loads(lines[-1])
    assert got["session"].startswith("pyspark.sql.connect"), got
    assert (got["rows"], got["null_rows"], got["distinct"]) == (1030, 30, 202), got
    assert got["top"] == [7, 400] and got["recommended"] != "spark", got
    assert got["advice"].startswith("sb.group_by(df, 'k', num_partitions=4"), got
    assert got["adapters"] == {"group_by": "ok", "repartition": "ok", "join": "ok"}, got


def _run() -> dict:
    from pyspark.sql import SparkSession, functions as F

    import sparkbalance as sb
    spark = SparkSession.builder.remote("local[2]").getOrCreate()
    try:
        rows = [(7, i) for i in range(400)] + [(100 + i // 3, i) for i in range(600)] \
            + [(None, i) for i in range(30)]
        df = spark.createDataFrame(rows, "k int, v long")
        r = sb.diagnose(df, "k", num_partitions=4)
        adapters = {}
        calls = {
            "group_by": lambda: sb.group_by(df, "k", num_partitions=4).agg(
                F.sum("v").alias("s")).count() == 202,
            "repartition": lambda: sb.repartition(df, 4, "k").count() == 1030,
            "join": lambda: sb.join(df, df.select("k").distinct(), "k",
                                    strategy="split").count() == 1000,
        }
        for name, call in calls.items():
            try:
                adapters[name] = "ok" if call() else "wrong result"
            except Exception as exc:  # noqa: BLE001 - reported, the test says which
                adapters[name] = str(exc).splitlines()[0][:200]
        return {"session": type(spark).__module__, "rows": r.rows, "null_rows": r.null_rows,
                "distinct": r.distinct_keys, "top": [r.top[0][0], r.top[0][1]],
                "recommended": r.recommended, "advice": r.advice, "adapters": adapters}
    finally:
        spark.stop()


if __name__ == "__main__":
    print(json.dumps(_run()))
