"""Task-metrics listeners with two real executors (`local-cluster[2,1,1024]`).

Uses the shared cluster session of integration/conftest.py (one Spark JVM per pytest
process). That ``spark.stop()`` does not hang with a listener still attached is checked
in a child process (it must own and stop its session).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from sparkbalance.spark.session.bridge import bridge_available
from sparkbalance.spark.metrics.jvm_recorder import JvmTaskMetricsListener
from sparkbalance.spark.metrics.listener import TaskMetricsListener, open_listener, sparkbalance_job_group
from sparkbalance.stats.timeweights import seconds_per_record_by_executor

ROOT = Path(__file__).resolve().parents[1]
GROUP = "sparkbalance-it-listener"


def _job(sc, n=6):
    def work(pid, it):
        c = 0
        for _ in it:
            c += 1
        time.sleep(0.05)  # keep both executors busy so both get tasks
        yield c

    return sc.parallelize(range(600), n).mapPartitionsWithIndex(work).collect()


def test_executor_ids_and_tasks_under_local_cluster(cluster_spark):
    sc = cluster_spark.sparkContext
    with open_listener(cluster_spark, GROUP) as lst, sparkbalance_job_group(sc, GROUP):
        counts = _job(sc)
    tasks = lst.tasks()
    assert sorted(t.partition_id for t in tasks) == list(range(6))
    assert all(t.successful and t.duration_ms >= 0 for t in tasks)
    assert {t.executor_id for t in tasks} <= {"0", "1"}
    ex = {e.executor_id: e for e in lst.executors()}
    assert {"0", "1"} <= set(ex) and all(ex[i].total_cores == 1 for i in ("0", "1"))
    rates = seconds_per_record_by_executor(tasks, records=counts)
    assert set(rates) <= {"0", "1"} and all(r > 0 for r in rates.values())


def test_both_recorders_agree_under_local_cluster(cluster_spark):
    if not bridge_available(cluster_spark):
        pytest.skip("bridge jar not on spark.jars (run jvm_bridge/build.sh)")
    sc = cluster_spark.sparkContext
    with TaskMetricsListener(sc, GROUP) as a, JvmTaskMetricsListener(sc, GROUP) as b:
        with sparkbalance_job_group(sc, GROUP):
            (sc.parallelize(range(200), 4).map(lambda v: (v % 5, 1))
             .reduceByKey(lambda x, y: x + y, 3).collect())
    assert a.tasks() == b.tasks() and len(a.tasks()) == 7
    assert {t.executor_id for t in a.tasks()} <= {"0", "1"}
    assert np.all([t.run_time_ms >= 0 for t in b.tasks()])


_STOP_SCRIPT = textwrap.dedent("""
    import sys, time
    from pyspark.sql import SparkSession
    from sparkbalance.spark.session.bridge import session_builder_with_bridge
    from sparkbalance.spark.metrics.listener import TaskMetricsListener, open_listener
    b = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
    spark = session_builder_with_bridge(b).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    recs = [TaskMetricsListener(spark), open_listener(spark)]  # py4j + JVM when built
    for r in recs:
        r.attach()                     # deliberately left attached across stop()
    spark.sparkContext.parallelize(range(10), 2).count()
    for r in recs:
        r.flush()
    t0 = time.time()
    spark.stop()
    for r in recs:
        r.detach()                     # after stop: no bus to leave; must not raise
    print("STOPPED", ",".join(str(len(r.tasks())) for r in recs), round(time.time() - t0, 1))
""")


def test_spark_stop_does_not_hang_with_a_listener_attached():
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable,
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", _STOP_SCRIPT], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    line = [x for x in out.stdout.splitlines() if x.startswith("STOPPED")]
    assert line, out.stdout[-2000:]
    _, n_tasks, stop_s = line[0].split()
    assert n_tasks == "2,2" and float(stop_s) < 30
