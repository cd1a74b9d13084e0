"""On two real executor JVMs, executors route every key exactly where the driver plans it.

Each executor runs its own Python workers (own PYTHONHASHSEED), so this is the end-to-end
check of the stable-hash contract the planners rely on.
"""
from __future__ import annotations

import time

from sparkbalance.hashing import stable_hash
from sparkbalance.routing import HashPartitioner, KeyGroupPartitioner, RoutingTablePartitioner

KEYS = [f"user-{i}" for i in range(300)] + list(range(300)) + [("t", i) for i in range(50)]


def _placement(rdd):
    return dict(rdd.mapPartitionsWithIndex(lambda i, it: ((k, i) for k, _ in it)).collect())


def test_two_executors_are_running(cluster_sc):
    # Executors register asynchronously after the session starts: wait for both.
    deadline = time.monotonic() + 60
    status = cluster_sc._jsc.sc().getExecutorMemoryStatus()
    while status.size() < 3 and time.monotonic() < deadline:  # driver + two executors
        time.sleep(0.5)
        status = cluster_sc._jsc.sc().getExecutorMemoryStatus()
    assert status.size() >= 3


def test_executors_hash_like_the_driver(cluster_sc):
    remote = dict(cluster_sc.parallelize(KEYS, 6).map(lambda k: (k, stable_hash(k))).collect())
    assert remote == {k: stable_hash(k) for k in KEYS}


def test_partition_by_places_keys_where_the_driver_says(cluster_sc):
    pairs = cluster_sc.parallelize([(k, 1) for k in KEYS], 5)
    for f in (HashPartitioner(7),
              RoutingTablePartitioner(7, {"user-1": 6, 3: 0, ("t", 2): 4}),
              KeyGroupPartitioner(7, 35, [0, 1, 5, 5, 20, 30, 31, 35])):
        placed = _placement(pairs.partitionBy(f.num_partitions, f))
        assert placed == {k: f(k) for k in KEYS}


def test_zero_pass_read_across_executors_equals_pyspark(cluster_sc):
    # The default strategy's zero-pass read fetches each task's run of key groups as one
    # block per map output (batch fetch), here from map outputs on two executors.
    from operator import add

    from sparkbalance.spark.rdd import mapstats
    from sparkbalance.spark.rdd import adapters as sbr
    if not mapstats.available(cluster_sc):
        import pytest
        pytest.skip("JVM bridge jar not built")
    recs = [(k, i) for i, k in enumerate(KEYS * 3)] + [("user-7", 1)] * 2000
    pairs = cluster_sc.parallelize(recs, 6)
    for balance in (True, False):
        decision: dict = {}
        out = mapstats.shuffle_by_groups(pairs, 5, balance=balance, decision=decision)
        f = mapstats.fitted_function(out)
        got = out.mapPartitionsWithIndex(lambda i, it: ((i, kv) for kv in it)).collect()
        assert sorted(map(repr, (kv for _, kv in got))) == sorted(map(repr, recs))
        assert all(f(k) == i for i, (k, _) in got)
    assert sorted(sbr.reduce_by_key(pairs, add, 5).collect(), key=repr) == sorted(
        pairs.reduceByKey(add, 5).collect(), key=repr)
