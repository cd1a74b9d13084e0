"""The DataFrame adapters over a Spark Connect session equal plain Spark there.

``sb.repartition``, ``sb.group_by`` (``agg``, ``count``, ``applyInPandas``), ``sb.join`` of
DataFrames (placed and split), ``sb.with_window_columns`` and ``sb.diagnose`` run on
``SparkSession.builder.remote("local[2]")`` with DataFrame expressions only; what needs the
driver's JVM (``weights="time"``) fails there with a clear error before any job.

A Connect session starts its own server JVM inside the process that asks for it, which
cannot share a process with the classic session of the other integration modules; this
module therefore runs every check in ONE child Python process (``python
integration/test_connect_adapters.py``), one Connect server for all of them (it takes
15-45 s to start on a shared machine: one start, not one per adapter). Needs PySpark's
connect extras (``pip install "pyspark[connect]"``: grpcio, grpcio-status,
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
#: Generous: the Connect server starts in 15-45 s on a shared machine, the checks run ~40 jobs.
TIMEOUT_S = 900
# the child process's own bound (pytest.ini's 600 s per test would cut a slow server start)
pytestmark = pytest.mark.timeout(TIMEOUT_S + 60)
CHECKS = ["repartition", "repartition_mixed", "install", "group_by_agg", "group_by_count",
          "apply_in_pandas", "join", "join_split", "window_hot", "window_two_columns",
          "window_auto", "time_weights_refused", "diagnose"]


def _connect_available() -> str | None:
    try:
        import grpc  # noqa: F401
        import google.rpc  # noqa: F401
        import zstandard  # noqa: F401
    except ImportError as exc:
        return f"PySpark's connect extras are missing ({exc}); pip install 'pyspark[connect]'"
    return None


@pytest.fixture(scope="module")
def report():
    missing = _connect_available()
    if missing:
        pytest.skip(missing)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    proc = subprocess.run([sys.executable, __file__], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert proc.returncode == 0 and lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(lines[-1])


def test_the_session_is_a_connect_session(report):
    assert report["session"].startswith("pyspark.sql.connect"), report


def test_every_adapter_equals_plain_spark_under_connect(report):
    failed = {k: v for k, v in report["checks"].items() if v != "ok"}
    assert not failed, failed
    assert sorted(report["checks"]) == sorted(CHECKS), report["checks"]


def test_window_split_kinds_under_connect(report):
    kinds = report["kinds"]
    assert kinds["sd"].startswith("plain:"), kinds
    assert kinds["rn"] == "rank" and kinds["lg"] == "halo", kinds


def test_diagnose_under_connect_reports_with_dataframe_advice(report):
    got = report["diagnose"]
    assert (got["rows"], got["null_rows"], got["distinct"]) == (1030, 30, 202), got
    assert got["top"] == [7, 400] and got["recommended"] != "spark", got
    assert got["advice"].startswith("sb.group_by(df, 'k', num_partitions=4"), got


def _run() -> dict:
    """The checks, on one Connect session of this process (run as a script)."""
    import random
    import traceback

    import pandas as pd
    from pyspark.sql import SparkSession, Window, functions as F
    from pyspark.testing import assertDataFrameEqual

    import sparkbalance as sb
    from sparkbalance.spark.sql.connect import ConnectUnsupported
    from sparkbalance.spark.window.payoff import SPLIT_CONF
    from sparkbalance.spark.window.windows import explain_split, with_window_columns

    spark = (SparkSession.builder.remote("local[2]")
             .config("spark.sql.shuffle.partitions", "4")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    rnd = random.Random(5)
    rows = [("hot" if rnd.random() < 0.8 else f"c{rnd.randrange(6)}", rnd.randrange(2),
             None if rnd.random() < 0.1 else rnd.randrange(30), u,
             None if rnd.random() < 0.1 else rnd.randrange(10)) for u in range(400)]
    df = spark.createDataFrame(rows, "k string, j int, t int, u int, x int")
    right = spark.createDataFrame([(f"c{i}", i) for i in range(4)] + [("hot", 99)],
                                  "k string, v int")
    report: dict = {"session": type(spark).__module__, "checks": {}}

    def per_key(pdf: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame({"k": [pdf["k"].iloc[0]], "n": [len(pdf)],
                             "s": [pdf["x"].fillna(0).sum()]})

    def windows(part: list[str], always: bool = True) -> None:
        spark.conf.set(SPLIT_CONF, "always" if always else "auto")
        w = Window.partitionBy(*part).orderBy(F.col("t").desc_nulls_last(), "u")
        wt = Window.partitionBy(*part).orderBy("t")
        cols = {"rn": F.row_number().over(w), "dr": F.dense_rank().over(wt),
                "cd": F.cume_dist().over(wt), "nt": F.ntile(3).over(w),
                "s": F.sum("x").over(wt), "a": F.avg("x").over(w),
                "lg": F.lag("x", 2).over(w), "rows": F.sum("x").over(w.rowsBetween(-2, 1)),
                "rng": F.max("x").over(wt.rangeBetween(-3, 3)),
                "tot": F.count("x").over(Window.partitionBy(*part)),
                "sd": F.stddev("x").over(w)}
        if part == ["k"] and always:
            report["kinds"] = explain_split(df, **cols)
        assertDataFrameEqual(with_window_columns(df, 4, **cols), df.withColumns(cols))

    def refused() -> None:
        try:
            sb.group_by(df, "k", num_partitions=4, weights="time")
        except ConnectUnsupported as exc:
            assert "weights='time'" in str(exc) and "Spark Connect" in str(exc), exc
        else:
            raise AssertionError("weights='time' ran under Connect")

    def installed() -> None:
        from sparkbalance.spark.sql.install import (install_dataframe_methods,
                                                    uninstall_dataframe_methods)
        install_dataframe_methods()
        try:
            assertDataFrameEqual(df.balancedGroupBy("k", num_partitions=4).count(),
                                 df.groupBy("k").count())
        finally:
            uninstall_dataframe_methods()

    def diagnosed() -> None:
        rows = [(7, i) for i in range(400)] + [(100 + i // 3, i) for i in range(600)] \
            + [(None, i) for i in range(30)]
        r = sb.diagnose(spark.createDataFrame(rows, "k int, v long"), "k", num_partitions=4)
        report["diagnose"] = {"rows": r.rows, "null_rows": r.null_rows,
                              "distinct": r.distinct_keys, "top": [r.top[0][0], r.top[0][1]],
                              "recommended": r.recommended, "advice": r.advice}

    checks = {
        "diagnose": diagnosed,
        "repartition": lambda: assertDataFrameEqual(sb.repartition(df, 4, "k"), df),
        "repartition_mixed": lambda: assertDataFrameEqual(
            sb.repartition(df, 4, F.col("k"), "j", strategy="mixed"), df),
        "install": installed,
        "group_by_agg": lambda: assertDataFrameEqual(
            sb.group_by(df, "k", num_partitions=4).agg(F.sum("x").alias("s"),
                                                        F.max("t").alias("m")),
            df.groupBy("k").agg(F.sum("x").alias("s"), F.max("t").alias("m"))),
        "group_by_count": lambda: assertDataFrameEqual(
            sb.group_by(df, F.upper("k").alias("K"), num_partitions=4).count(),
            df.groupBy(F.upper("k").alias("K")).count()),
        "apply_in_pandas": lambda: assertDataFrameEqual(
            sb.group_by(df, "k", num_partitions=4).applyInPandas(
                per_key, "k string, n long, s long"),
            df.groupBy("k").applyInPandas(per_key, "k string, n long, s long")),
        "join": lambda: assertDataFrameEqual(sb.join(df, right, "k", num_partitions=4),
                                             df.join(right, "k")),
        "join_split": lambda: assertDataFrameEqual(
            sb.join(df, right, "k", "left", num_partitions=4, strategy="split"),
            df.join(right, "k", "left")),
        "window_hot": lambda: windows(["k"]),
        "window_two_columns": lambda: windows(["k", "j"]),
        "window_auto": lambda: windows(["k"], always=False),
        "time_weights_refused": refused,
    }
    for name, check in checks.items():
        try:
            check()
            report["checks"][name] = "ok"
        except Exception as exc:  # reported per check, so one failure names itself
            report["checks"][name] = f"{type(exc).__name__}: {exc}"[:600]
            traceback.print_exc()
    spark.stop()
    return report


if __name__ == "__main__":
    print(json.dumps(_run()))
