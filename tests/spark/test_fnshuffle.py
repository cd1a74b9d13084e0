"""The adapters' inline-routed shuffle for fitted key-grouping functions equals PySpark's
``partitionBy(n, f)`` record for record, partition for partition."""
from __future__ import annotations

import operator

import pytest

import sparkbalance as sb
from sparkbalance.routing import HashPartitioner, PKGPartitioner
from sparkbalance.spark.rdd import shuffle as fnshuffle


def _records():
    # skewed int keys (the memo hits), tuple keys, records given as lists (PySpark's loop
    # turns them into tuples)
    out = [(i % 7 if i % 3 else i, i) for i in range(3000)]
    out += [((i % 5, "x"), i) for i in range(200)]
    out += [[f"s{i % 11}", i] for i in range(300)]
    return out


@pytest.mark.parametrize("strategy", ["hash", "mixed", "keygroups"])
def test_partition_by_places_every_record_where_pyspark_does(sc, strategy):
    rdd = sc.parallelize(_records(), 3)
    f = sb.fit_partitioner(rdd, 4, strategy=strategy)
    assert fnshuffle.inlinable(f)
    ours = sb.partition_by(rdd, 4, f)
    plain = rdd.map(tuple).partitionBy(4, f)
    assert ours.glom().map(sorted_repr).collect() == plain.glom().map(sorted_repr).collect()
    # the same function again: PySpark's rule, no second shuffle
    again = sb.partition_by(ours, 4, f)
    assert again.partitioner == ours.partitioner
    assert again.toDebugString().count(b"Shuffled") == ours.toDebugString().count(b"Shuffled")


def sorted_repr(part):
    assert all(type(r) is tuple for r in part)
    return sorted(map(repr, part))


def test_reduce_and_aggregate_equal_pyspark(sc):
    rdd = sc.parallelize([tuple(r) for r in _records()], 3)
    f = sb.fit_partitioner(rdd, 4, strategy="mixed")
    assert sorted(map(repr, sb.reduce_by_key(rdd, operator.add, 4, f).collect())) == \
        sorted(map(repr, rdd.reduceByKey(operator.add, 4).collect()))
    got = sb.aggregate_by_key(rdd, [], lambda a, v: a + [v], operator.add, 4, f)
    want = rdd.aggregateByKey([], lambda a, v: a + [v], operator.add, 4)
    assert sorted(repr((k, sorted(v))) for k, v in got.collect()) == \
        sorted(repr((k, sorted(v))) for k, v in want.collect())


def test_a_late_bad_key_is_named_after_the_memo_switched_off(sc):
    rdd = sc.parallelize([(i, i) for i in range(5000)] + [(frozenset({1}), 0)], 1)
    from sparkbalance.spark.rdd.key_errors import KeyRoutingError
    with pytest.raises(KeyRoutingError) as info:   # the task's error itself, on the driver
        sb.partition_by(rdd, 2, HashPartitioner(2)).count()
    assert str(info.value).startswith(
        "sparkbalance: key of type frozenset in input partition 0"), str(info.value)


def test_functions_that_are_not_inlinable_keep_pysparks_path(sc):
    from sparkbalance.routing.pkg_baselines import PoTCPartitioner
    assert not fnshuffle.inlinable(PKGPartitioner(2))
    assert not fnshuffle.inlinable(PoTCPartitioner(2))  # its own __call__: stateful choice
    with pytest.raises(ValueError, match="cannot be routed inline"):
        fnshuffle.partition_by_function(sc.parallelize([(1, 1)]), PoTCPartitioner(2))
