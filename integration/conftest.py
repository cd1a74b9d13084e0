"""Integration tests: one shared multi-executor session (`local-cluster[2,1,1024]`).

Two real executor JVMs, each running this package from the virtual environment
(PYSPARK_PYTHON = this interpreter). Shared by every integration test module: starting a
cluster costs 10-20 s, so it is started once per pytest process.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BRIDGE_JAR = ROOT / "jvm_bridge" / "build" / "sparkbalance-bridge.jar"
CLUSTER_MASTER = "local-cluster[2,1,1024]"


def build_cluster_session():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # Executors must import sparkbalance: the editable install covers it; PYTHONPATH makes a
    # plain checkout work too.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(CLUSTER_MASTER)
        .appName("sparkbalance-integration")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "4")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.ui.enabled", "false")
        .config("spark.executor.memory", "768m")
        .config("spark.driver.memory", "1g")
        .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
        .config("spark.sql.session.timeZone", "UTC")
    )
    if BRIDGE_JAR.exists():
        builder = builder.config("spark.jars", str(BRIDGE_JAR))
    return builder.getOrCreate()


def executor_ids(sc) -> list[str]:
    """The ids of the executors the context has now (killed ones drop out)."""
    ids = sc._jsc.sc().getExecutorIds()
    return [ids.apply(i) for i in range(ids.size())]


@pytest.fixture(scope="session")
def cluster_spark():
    session = build_cluster_session()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def cluster_sc(cluster_spark):
    return cluster_spark.sparkContext
