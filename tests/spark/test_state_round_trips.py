"""The keyed state's RDDs without needless py4j round trips: an RDD over a Java RDD the
state built reads its id only when asked and answers whether it is a barrier RDD itself
(:func:`~sparkbalance.state.frames.rdds.built_rdd`), and a persisted RDD reuses the JVM's
storage level (:func:`~sparkbalance.state.frames.caching.persist`) — the same results,
the same cache, fewer round trips."""
from __future__ import annotations

import threading

from pyspark import StorageLevel
from pyspark.serializers import CPickleSerializer, NoOpSerializer

from sparkbalance.state.frames.caching import persist
from sparkbalance.state.frames.rdds import as_frames, built_rdd


class _Calls:
    """py4j commands sent by this thread while installed (reference releases apart)."""

    def __init__(self, monkeypatch) -> None:
        from py4j import clientserver, java_gateway
        self.n, me = 0, threading.get_ident()
        for cls in (clientserver.ClientServerConnection, java_gateway.GatewayConnection):
            orig = cls.send_command

            def counted(conn, command, *a, _orig=orig, **kw):
                self.n += (not command.startswith("m\nd\n")
                           and threading.get_ident() == me)
                return _orig(conn, command, *a, **kw)
            monkeypatch.setattr(cls, "send_command", counted)


def test_built_rdd_reads_as_the_plain_rdd_with_its_id_read_when_asked(spark, monkeypatch):
    sc = spark.sparkContext
    src = sc.parallelize([b"a", b"bc", b"d"], 2)
    jrdd = as_frames(src.map(lambda b: b))._jrdd
    calls = _Calls(monkeypatch)
    rdd = built_rdd(jrdd, sc)
    passed = rdd.mapPartitionsWithIndex(lambda i, it: [(i, bytes(f)) for f in it])
    assert calls.n == 0           # no id, no barrier question
    assert not passed.is_barrier
    monkeypatch.undo()
    assert rdd.id() == jrdd.id()
    assert passed.collect() == [(0, b"a"), (1, b"bc"), (1, b"d")]
    assert sorted(rdd.collect()) == [b"a", b"bc", b"d"]
    assert isinstance(rdd._jrdd_deserializer, NoOpSerializer)


def test_a_pass_over_a_barrier_rdd_stays_a_barrier_rdd_in_the_jvm(spark):
    sc = spark.sparkContext
    barrier = sc.parallelize([1, 2], 2).barrier().mapPartitions(lambda it: it)
    rdd = built_rdd(barrier._jrdd, sc, barrier._jrdd_deserializer)
    passed = rdd.map(lambda x: x + 1)
    assert passed._jrdd.rdd().isBarrier()      # the JVM asks the narrow parents
    assert sorted(passed.collect()) == [2, 3]


def test_persist_builds_the_jvm_storage_level_once(spark, monkeypatch):
    sc = spark.sparkContext
    a = sc.parallelize(range(10), 2)
    b = sc.parallelize(range(5), 2)
    b._jrdd                       # a pass's Java RDD is built when first read
    persist(a, StorageLevel.MEMORY_AND_DISK)
    calls = _Calls(monkeypatch)
    persist(b, StorageLevel.MEMORY_AND_DISK)
    assert calls.n == 1           # the persist call alone
    monkeypatch.undo()
    try:
        for r in (a, b):
            assert r.is_cached
            assert r.getStorageLevel() == StorageLevel.MEMORY_AND_DISK
        assert b.sum() == 10 and a.sum() == 45
    finally:
        a.unpersist(), b.unpersist()


def test_built_rdd_with_a_pickled_deserializer(spark):
    sc = spark.sparkContext
    src = sc.parallelize([(1, "x"), (2, "y")], 2)._reserialize(CPickleSerializer())
    rdd = built_rdd(src._jrdd, sc, CPickleSerializer())
    assert sorted(rdd.collect()) == [(1, "x"), (2, "y")]
