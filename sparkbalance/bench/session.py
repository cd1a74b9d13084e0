"""Local Spark sessions of the demos and benchmarks, and the warm-up of their workers.

A stream benchmark runs ``local[n]`` with n = partitions task slots: with an I/O-like wait
per record the n tasks of a batch wait side by side even on a 2-core machine, and the
slowest partition sets the batch time as it would on n cores.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Mapping

__all__ = ["local_session", "warm_up"]

#: Modules the keyed-state tasks import; :func:`warm_up` imports them in every worker.
STATE_MODULES = ("numpy", "sparkbalance.hashing", "sparkbalance.routing.table",
                 "sparkbalance.routing.keygroups", "sparkbalance.state.frames.window",
                 "sparkbalance.state.frames.blocks", "sparkbalance.state.operator")


def local_session(slots: int, app: str = "sparkbalance-bench", *, bridge: bool = True,
                  conf: Mapping[str, str] | None = None) -> Any:
    """A ``local[slots]`` SparkSession for a demo or benchmark (UI off, log level ERROR).

    The Python workers run this interpreter and import the same ``sparkbalance`` as the
    driver (its folder is put first on ``PYTHONPATH``), so a checkout runs its own code.

    Parameters
    ----------
    slots : int
        Task slots of the local master (>= 1).
    app : str
        Application name.
    bridge : bool
        Put the JVM bridge jar on the classpath when it is built (the operator's JVM frame
        selection, the profiler's JVM task recorder). It only takes effect on the
        process's first JVM: a later session of the same process shares that JVM.
    conf : mapping, optional
        More Spark settings.

    Examples
    --------
    >>> spark = local_session(4, "demo", conf={"spark.driver.memory": "2g"})  # doctest: +SKIP
    >>> spark.sparkContext.master                                           # doctest: +SKIP
    'local[4]'
    """
    if slots < 1:
        raise ValueError(f"slots={slots}; expected >= 1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    root = str(Path(__file__).resolve().parents[2])
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join([root] + [p for p in paths if p != root])
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(f"local[{slots}]").appName(app)
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.ui.enabled", "false"))
    for k, v in (conf or {}).items():
        builder = builder.config(k, v)
    if bridge:
        from sparkbalance.spark.session.bridge import session_builder_with_bridge
        builder = session_builder_with_bridge(builder)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _warm_worker(it: Any) -> list:
    """Import what the state tasks use (in a Python worker; see :func:`warm_up`)."""
    import importlib
    for mod in STATE_MODULES:
        try:
            importlib.import_module(mod)
        except ImportError:  # a module the state no longer has: nothing to warm
            pass
    return [sum(1 for _ in it)]


def warm_up(spark: Any, num_partitions: int) -> None:
    """Start the ``num_partitions`` Python workers and import the state code in them.

    The first measured batches then do not pay for it (one tiny job per call).

    Examples
    --------
    >>> warm_up(local_session(4), 4)                                  # doctest: +SKIP
    """
    sc = spark.sparkContext
    sc.parallelize(range(4 * num_partitions), num_partitions).mapPartitions(
        _warm_worker).collect()
