"""Task-metrics listeners on the shared local[2] session: py4j and (when built) JVM recorder."""
from __future__ import annotations

import logging
import time

import numpy as np
import pytest
from pyspark.sql import functions as F

from sparkbalance.spark.session.bridge import bridge_available, class_available
from sparkbalance.spark.session.jobs import JOB_DESCRIPTION_PROPERTY, JOB_GROUP_PROPERTY
from sparkbalance.spark.metrics.jvm_recorder import JvmTaskMetricsListener
from sparkbalance.spark.metrics.listener import (
    Recorder,
    TaskMetricsListener,
    open_listener,
    sparkbalance_job_group,
)
from sparkbalance.spark.metrics.py4j_listener import SPARK_LISTENER_INTERFACE_METHODS, Py4jSparkListener
from sparkbalance.stats.timeweights import completion_times, seconds_per_record_by_partition

GROUP = "sparkbalance-test-listener"


def _recorders(spark):
    out = [("py4j", lambda g=None: TaskMetricsListener(spark, g)),
           ("py4j-accessors", lambda g=None: TaskMetricsListener(spark, g, decode="accessors"))]
    if bridge_available(spark):
        out.append(("jvm", lambda g=None: JvmTaskMetricsListener(spark, g)))
    return out


def _shuffle_job(sc, n_map=3, n_reduce=4):
    return (sc.parallelize(range(300), n_map).map(lambda v: (v % 11, 1))
            .reduceByKey(lambda a, b: a + b, n_reduce).count())


def test_python_listener_implements_every_interface_method(spark):
    # javap on spark-core_2.13-4.3.0: SparkListenerInterface has exactly these 35.
    assert len(SPARK_LISTENER_INTERFACE_METHODS) == 35
    jcls = spark.sparkContext._jvm.java.lang.Class.forName(
        "org.apache.spark.scheduler.SparkListenerInterface")
    names = {m.getName() for m in jcls.getMethods()}
    assert names == set(SPARK_LISTENER_INTERFACE_METHODS)
    for name in names:
        assert callable(getattr(Py4jSparkListener, name))


@pytest.mark.parametrize("kind", ["py4j", "py4j-accessors", "jvm"])
def test_every_task_recorded_once_with_valid_fields(spark, kind):
    sc = spark.sparkContext
    makers = dict(_recorders(spark))
    if kind not in makers:
        pytest.skip("bridge jar not on spark.jars (run jvm_bridge/build.sh)")
    with makers[kind](GROUP) as lst, sparkbalance_job_group(sc, GROUP):
        _shuffle_job(sc)
    tasks, stages = lst.tasks(), lst.stages()
    assert [s.num_tasks for s in stages] == [3, 4]
    assert len(tasks) == 7
    assert len({t.task_id for t in tasks}) == 7
    by_stage = {s.stage_id: sorted(t.partition_id for t in tasks if t.stage_id == s.stage_id)
                for s in stages}
    assert sorted(by_stage.values()) == [[0, 1, 2], [0, 1, 2, 3]]
    for t in tasks:
        assert t.successful and t.duration_ms >= 0 and t.run_time_ms >= 0
        assert t.executor_id == "driver" and t.job_group == GROUP
    reduce_id = max(by_stage)
    assert sum(t.shuffle_bytes_read for t in tasks if t.stage_id == reduce_id) > 0
    assert all(s.wall_time_ms is not None and s.wall_time_ms >= 0 for s in stages)
    ex = lst.executors()
    assert [e.executor_id for e in ex] == ["driver"] and ex[0].total_cores == 2


def test_all_recorders_agree_on_the_same_job(spark):
    if not bridge_available(spark):
        pytest.skip("bridge jar not on spark.jars (run jvm_bridge/build.sh)")
    sc = spark.sparkContext
    from sparkbalance.spark.metrics.py4j_listener import _json_encoder
    if _json_encoder(sc) is None:  # Spark 3.5: no JsonProtocolOptions; 'json' is refused
        with pytest.raises(RuntimeError, match="decode='json'"):
            TaskMetricsListener(spark, GROUP, decode="json")
        a = TaskMetricsListener(spark, GROUP)  # 'auto' reads accessors there
    else:
        a = TaskMetricsListener(spark, GROUP, decode="json")
        assert a.decode == "json"
    b = TaskMetricsListener(spark, GROUP, decode="accessors")
    c = JvmTaskMetricsListener(spark, GROUP)
    assert b.decode == "accessors"
    with a, b, c, sparkbalance_job_group(sc, GROUP):
        _shuffle_job(sc, 2, 3)
        spark.range(0, 1000, 1, 3).groupBy((F.col("id") % 5).alias("z")).count().collect()
    # 2 + 3 RDD tasks, then 3 scan tasks and >= 1 reduce task (AQE may coalesce).
    assert a.tasks() == b.tasks() == c.tasks() and len(a.tasks()) >= 9
    assert a.stages() == b.stages() == c.stages()
    assert a.executors() == b.executors() == c.executors()


@pytest.mark.parametrize("kind", ["py4j", "jvm"])
def test_clear_forgets_earlier_batches(spark, kind):
    makers = dict(_recorders(spark))
    if kind not in makers:
        pytest.skip("bridge jar not on spark.jars (run jvm_bridge/build.sh)")
    sc = spark.sparkContext
    with makers[kind](GROUP) as lst, sparkbalance_job_group(sc, GROUP):
        sc.parallelize(range(10), 3).count()
        assert len(lst.tasks()) == 3
        lst.clear()
        assert lst.tasks() == [] and lst.stages() == []
        sc.parallelize(range(10), 2).count()
    assert sorted(t.partition_id for t in lst.tasks()) == [0, 1]
    lst.clear()
    assert lst.tasks() == []


def test_job_group_filter_and_helper_restores_the_old_group(spark):
    sc = spark.sparkContext
    sc.setJobGroup("outer", "outer jobs")
    try:
        with TaskMetricsListener(spark, GROUP) as lst:
            sc.parallelize(range(10), 2).count()  # "outer": not recorded
            with sparkbalance_job_group(sc, GROUP, "ours"):
                assert sc.getLocalProperty(JOB_GROUP_PROPERTY) == GROUP
                assert sc.getLocalProperty(JOB_DESCRIPTION_PROPERTY) == "ours"
                sc.parallelize(range(10), 3).count()
            assert sc.getLocalProperty(JOB_GROUP_PROPERTY) == "outer"
            assert sc.getLocalProperty(JOB_DESCRIPTION_PROPERTY) == "outer jobs"
    finally:
        sc.setLocalProperty(JOB_GROUP_PROPERTY, None)
        sc.setLocalProperty(JOB_DESCRIPTION_PROPERTY, None)
    assert sorted(t.partition_id for t in lst.tasks()) == [0, 1, 2]
    assert sc.getLocalProperty(JOB_GROUP_PROPERTY) is None


def test_costly_partition_has_proportionally_larger_seconds_per_record(spark):
    sc = spark.sparkContext
    slow, per_rec_s, factor, n, m = 2, 0.004, 4, 4, 50

    def work(pid, it):
        delay = per_rec_s * (factor if pid == slow else 1)
        c = 0
        for _ in it:
            time.sleep(delay)
            c += 1
        yield c

    sc.parallelize(range(n), n).count()  # warm the Python workers: startup is not per-record
    with open_listener(spark, GROUP) as lst, sparkbalance_job_group(sc, GROUP):
        counts = sc.parallelize(range(n * m), n).mapPartitionsWithIndex(work).collect()
    assert counts == [m] * n
    spr = seconds_per_record_by_partition(lst.tasks(), n, records=counts)
    others = np.delete(spr, slow)
    ratio = spr[slow] / np.median(others)
    # Expected ~4 (4 ms vs 16 ms per record); per-task overhead pulls it down, noise both ways.
    assert 2.0 < ratio < 8.0, (spr, ratio)
    t = completion_times(lst.tasks(), n, records=counts, normalize=True)
    assert int(np.argmax(t)) == slow


def test_detach_is_clean_and_idempotent(spark):
    sc = spark.sparkContext
    bus = sc._jsc.sc().listenerBus()
    lst = TaskMetricsListener(spark)
    me = lst._impl.toString()

    def registered():
        return sum(1 for x in bus.listeners() if x.toString() == me)

    with lst:
        assert registered() == 1
        sc.parallelize(range(4), 2).count()
    assert registered() == 0 and not lst.attached
    recorded = len(lst.tasks())
    sc.parallelize(range(4), 2).count()
    assert len(lst.tasks()) == recorded >= 2
    lst.detach()  # second detach: no-op
    assert lst.callback_errors == 0
    assert lst.queue == "sparkbalance" and lst.dropped_since_attach == 0
    assert set(lst.dropped_events()) >= {"appStatus", "sparkbalance"}
    assert all(v == 0 for v in lst.dropped_events().values())


def test_open_listener_logs_one_line_naming_the_recorder(spark, caplog):
    with caplog.at_level(logging.INFO, logger="sparkbalance.spark.metrics.listener"):
        lst = open_listener(spark)
    lines = [r for r in caplog.records if r.name == "sparkbalance.spark.metrics.listener"]
    assert len(lines) == 1
    assert lst.kind == ("jvm" if bridge_available(spark) else "py4j")
    assert isinstance(lst, Recorder)
    assert ("JVM recorder" if lst.kind == "jvm" else "pure-py4j") in lines[0].getMessage()
    assert open_listener(spark, prefer="py4j").kind == "py4j"
    with pytest.raises(ValueError, match="prefer="):
        open_listener(spark, prefer="fast")


def test_no_py4j_object_reaches_the_user(spark):
    sc = spark.sparkContext
    with open_listener(spark, GROUP) as lst, sparkbalance_job_group(sc, GROUP):
        sc.parallelize(range(4), 2).count()
    plain = (int, str, bool, type(None))
    for rec in [*lst.tasks(), *lst.stages(), *lst.executors()]:
        assert all(isinstance(v, plain) for v in vars(rec).values()), rec


def test_fit_partitioner_time_weights_reads_the_listener(spark):
    # fit_partitioner(weights="time") calls timeweights.time_weighted_stats/completion_times
    # with our records: the slow partition must get the largest t_i (Yang et al., TAG).
    fit_partitioner = pytest.importorskip("sparkbalance.spark.rdd.adapters").fit_partitioner
    from sparkbalance.routing.hash import HashPartitioner

    sc = spark.sparkContext
    h, slow = HashPartitioner(4), 1
    rdd = sc.parallelize([(k % 40, 1) for k in range(800)], 2)

    def work(pid, it):
        c = 0
        for _ in it:
            c += 1
            time.sleep(0.008 if pid == slow else 0.002)
        yield c

    with open_listener(spark, GROUP) as lst, sparkbalance_job_group(sc, GROUP):
        rdd.partitionBy(4, h).mapPartitionsWithIndex(work).collect()
    f = fit_partitioner(rdd, 4, strategy="tag", weights="time", listener=lst, current=h)
    assert int(np.argmax(f.completion_times)) == slow


def test_dropped_events_are_counted_and_reported(spark, caplog):
    # A 4-event buffer on our own queue (read when the queue is created, i.e. on attach)
    # and a burst of tiny JVM tasks: the py4j callbacks fall behind and Spark drops events.
    sc = spark.sparkContext
    conf = sc._jsc.sc().conf()
    key = "spark.scheduler.listenerbus.eventqueue.sparkbalance.capacity"
    conf.set(key, "4")
    try:
        lst = TaskMetricsListener(spark, decode="accessors")
        with caplog.at_level(logging.WARNING, logger="sparkbalance.spark.metrics.recorder"):
            with lst:
                spark.range(0, 200, 1, 200).write.format("noop").mode("overwrite").save()
    finally:
        conf.remove(key)
    assert lst.dropped_since_attach > 0
    assert len(lst.tasks()) < 200
    assert any("dropped on queue 'sparkbalance'" in r.getMessage() for r in caplog.records)


def test_class_available_answers_for_loaded_and_missing_classes(spark):
    assert class_available(spark, "org.apache.spark.SparkContext")
    assert not class_available(spark.sparkContext, "io.sparkbalance.bridge.NoSuchClass")
    assert bridge_available(spark) == class_available(spark, "io.sparkbalance.bridge.TaskRecorder")


def test_py4j_callbacks_do_not_log_at_info(spark, caplog):
    sc = spark.sparkContext
    with caplog.at_level(logging.INFO):
        with TaskMetricsListener(spark, GROUP) as lst, sparkbalance_job_group(sc, GROUP):
            sc.parallelize(range(4), 2).count()
    assert len(lst.tasks()) == 2
    assert not [r for r in caplog.records if r.name.startswith("py4j")
                and r.getMessage().startswith("Received command")]
