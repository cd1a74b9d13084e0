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
