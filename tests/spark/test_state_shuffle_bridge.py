"""The keyed state's routing shuffle built and its map stage run in one bridge call each
(``StateShuffle``): the same chunks in the same partitions as PySpark's step-by-step
shuffle, in a handful of py4j round trips instead of dozens; and the RDDs the keyed state
builds over Java RDDs (``built_rdd``) and persists (``caching.persist``) without needless
round trips, with the same results and cache."""
from __future__ import annotations

import threading

import pytest

from pyspark import StorageLevel
from pyspark.serializers import CPickleSerializer, NoOpSerializer

from sparkbalance.routing.hash import HashPartitioner
from sparkbalance.state.frames.caching import persist
from sparkbalance.state.frames import format as fr
from sparkbalance.state.frames.rdds import FrameOps, as_frames, built_rdd, frame_ops
from sparkbalance.state.frames.route_chunks import batch_chunks, run_map_stage, shuffle_chunks

P, G = 4, 16


class _Calls:
    """py4j commands sent while counting (reference releases apart)."""

    def __init__(self, monkeypatch) -> None:
        from py4j import clientserver, java_gateway
        self.n, me = 0, threading.get_ident()
        for cls in (clientserver.ClientServerConnection, java_gateway.GatewayConnection):
            orig = cls.send_command

            def counted(conn, command, *a, _orig=orig, **kw):
                # releases come with GC; a listener's callbacks run on other threads
                self.n += (not command.startswith("m\nd\n")
                           and threading.get_ident() == me)
                return _orig(conn, command, *a, **kw)
            monkeypatch.setattr(cls, "send_command", counted)


def _records(rdd) -> list:
    """Per partition, the sorted records of its ``R`` chunks."""
    parts = rdd.mapPartitions(
        lambda it: [sorted(r for f in it for r in fr.chunk_records(f))]).collect()
    return parts


@pytest.fixture(scope="module")
def ops(sc) -> FrameOps:
    ops = frame_ops(sc)
    if not ops.routes:
        pytest.skip("the bridge jar is not loadable or predates StateShuffle")
    return ops


def test_bridge_route_equals_pyspark_steps(sc, ops, monkeypatch) -> None:
    fn = HashPartitioner(P)
    pairs = sc.parallelize([(k % 37, k) for k in range(500)], 3)
    run_map_stage(shuffle_chunks([batch_chunks(pairs, fn, G)], P, fn, ops), ops)  # lookups
    one = batch_chunks(pairs, fn, G)
    one._jrdd                               # the Python map side, built either way
    calls = _Calls(monkeypatch)
    routed = shuffle_chunks([one], P, fn, ops)
    run_map_stage(routed, ops)
    assert calls.n == 2                     # route, the map stage (the id read when asked)
    monkeypatch.undo()
    plain = FrameOps(sc, True)
    plain.routes = False                    # PySpark's steps, as without the class
    two = plain.route([batch_chunks(pairs, fn, G)], P, id(fn))
    plain.run_map_stage(two)
    assert _records(routed) == _records(two)
    expected = [sorted((k % 37, k) for k in range(500) if fn.assign([k % 37])[0] == p)
                for p in range(P)]
    assert _records(routed) == expected


def test_bridge_route_of_two_map_sides_and_empty_batch(sc, ops) -> None:
    fn = HashPartitioner(P)
    a = batch_chunks(sc.parallelize([(k, 1) for k in range(40)], 2), fn, G)
    b = batch_chunks(sc.parallelize([(k, 2) for k in range(40, 60)], 1), fn, G)
    routed = shuffle_chunks([a, b], P, fn, ops)
    got = sorted(r for part in _records(routed) for r in part)
    assert got == sorted([(k, 1) for k in range(40)] + [(k, 2) for k in range(40, 60)])
    empty = shuffle_chunks([batch_chunks(sc.emptyRDD(), fn, G)], P, fn, ops)
    run_map_stage(empty, ops)               # no map stage to run: returns, runs nothing
    assert _records(empty) == [[] for _ in range(P)]


def test_python_pass_built_in_one_call(sc, ops, monkeypatch) -> None:
    passes = ops.passes
    if passes._pass is None:
        pytest.skip("the bridge jar predates PythonPasses")
    base = sc.parallelize(range(100), 4)
    passes.built(base.map(lambda x: x))               # the template, made once
    rdd = base.mapPartitionsWithIndex(lambda i, it: ((i, x * 2) for x in it),
                                      preservesPartitioning=True)
    calls = _Calls(monkeypatch)
    before = passes.built_here
    passes.built(rdd)
    assert calls.n == 1 and passes.built_here == before + 1
    monkeypatch.undo()
    plain = base.mapPartitionsWithIndex(lambda i, it: ((i, x * 2) for x in it))
    assert rdd.glom().collect() == plain.glom().collect()
    assert passes.built(rdd) is rdd._jrdd            # built once, as PySpark's property


def test_python_pass_with_a_broadcast_is_left_to_pyspark(sc, ops) -> None:
    passes = ops.passes
    if passes._pass is None:
        pytest.skip("the bridge jar predates PythonPasses")
    b = sc.broadcast({1: "a"})
    rdd = sc.parallelize([1, 2], 2).map(lambda x: b.value.get(x))
    before = passes.built_here
    passes.built(rdd)
    assert passes.built_here == before                # PySpark built it
    assert rdd.collect() == ["a", None]


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
