"""One shared local[2] SparkSession for every test under tests/spark.

Never create another session in these tests: there is one Spark JVM per Python process,
and `spark.jars` (the JVM bridge) only takes effect before it starts.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BRIDGE_JAR = ROOT / "jvm_bridge" / "build" / "sparkbalance-bridge.jar"


def build_session():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("sparkbalance-tests")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "4")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.session.timeZone", "UTC")
        # What a Spark 3.5/4.0 user sets for balanced cogroups (sparkbalance.spark.sql.grouped;
        # Spark 4.1+ does not need it). test_grouped checks the refusal without it.
        .config("spark.sql.requireAllClusterKeysForCoPartition", "false")
    )
    if BRIDGE_JAR.exists():
        builder = builder.config("spark.jars", str(BRIDGE_JAR))
    return builder.getOrCreate()


@pytest.fixture(scope="session")
def spark():
    session = build_session()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def sc(spark):
    return spark.sparkContext


# --- Two lanes sharing tests/spark (make test) -------------------------------------------
# `make test` runs tests/spark in one process while another runs the unit and integration
# tests; when that one is done, it runs tests/spark too, from the last file backwards. Each
# file is claimed by the first lane to reach it (an exclusive create in SB_TEST_CLAIMS, a
# directory both lanes share), so every file runs exactly once, in one lane, and the lanes
# meet wherever the durations put them. Without SB_TEST_CLAIMS nothing changes.
_CLAIMS = os.environ.get("SB_TEST_CLAIMS")
_FROM_END = os.environ.get("SB_TEST_FROM_END") == "1"
_mine: set = set()
_theirs: set = set()


def pytest_collection_modifyitems(config, items):
    if _CLAIMS and _FROM_END:
        rank: dict = {}
        for item in items:
            rank.setdefault(item.path, len(rank))
        items.sort(key=lambda item: -rank[item.path])   # stable: tests keep their file order


def _claim(path) -> bool:
    name = str(Path(path).resolve().relative_to(ROOT)).replace(os.sep, "__")
    try:
        os.close(os.open(os.path.join(_CLAIMS, name), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    if not _CLAIMS or item.path in _mine or Path(__file__).parent not in item.path.parents:
        return None                  # not a tests/spark file (the side lane's unit tests)
    if item.path in _theirs:
        return True                  # the other lane ran this file: not run, not reported here
    (_mine if _claim(item.path) else _theirs).add(item.path)
    return None if item.path in _mine else True


def pytest_terminal_summary(terminalreporter):
    if _CLAIMS:
        terminalreporter.write_line(
            f"tests/spark lanes: this lane ran {len(_mine)} files; the other lane ran "
            f"{len(_theirs)} of those collected here")
