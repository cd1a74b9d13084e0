"""A bad key met on an executor: the Python part of the failure starts with the cause."""
from __future__ import annotations

import operator

import pytest

import sparkbalance as sb


@pytest.mark.parametrize("strategy", ["hash", "pkg"])
def test_an_executors_bad_key_names_type_partition_and_remedy(sc, strategy):
    rdd = sc.parallelize([("a", 1), ("b", 2), (frozenset({1}), 3), ("a", 4)], 2)
    with pytest.raises(Exception) as info:
        sb.reduce_by_key(rdd, operator.add, 2, strategy).collect()
    text = str(info.value)
    lines = [x for x in text.splitlines() if "sparkbalance: key of type" in x]
    assert lines, text[-4000:]
    line = lines[0]
    assert "KeyRoutingError: sparkbalance: key of type frozenset in input partition 1 (stage" in line
    assert "expected None, int, str, bytes" in line


def _first_cause(info) -> str:
    lines = [x for x in str(info.value).splitlines() if "sparkbalance: records must be" in x]
    assert lines, str(info.value)[-4000:]
    return lines[0]


@pytest.mark.parametrize("call", [
    lambda rdd: sb.partition_by(rdd, 2, "hash"),
    lambda rdd: sb.reduce_by_key(rdd, operator.add, 2),             # default: zero-pass path
    lambda rdd: sb.reduce_by_key(rdd, operator.add, 2, "pkg"),      # splitting: our router
    lambda rdd: sb.group_by_key(rdd, 2, "hash"),
], ids=["partition_by", "reduce_by_key-auto", "reduce_by_key-pkg", "group_by_key"])
def test_records_that_are_not_pairs_name_partition_and_record(sc, call):
    rdd = sc.parallelize([("a", 1), ("b", 2), 5, 6], 2)  # partition 1 holds 5, 6
    with pytest.raises(Exception) as info:
        call(rdd).collect()
    line = _first_cause(info)
    assert ("NotAPairError: sparkbalance: records must be (key, value) pairs; partition 1 got "
            "a <class 'int'>: 5") in line


def test_join_names_the_other_sides_bad_record(sc):
    left = sc.parallelize([("a", 1), ("b", 2)], 2)
    right = sc.parallelize([("a", "x"), "oops"], 2)
    with pytest.raises(Exception) as info:
        sb.join(left, right, 2, "hash").collect()
    assert "partition 1 got a <class 'str'>: 'oops'" in _first_cause(info)


def test_pair_check_keeps_results_and_partitioner(sc):
    rdd = sc.parallelize([(i % 3, i) for i in range(30)], 3)
    out = sb.reduce_by_key(rdd, operator.add, 2, "hash")
    assert sorted(out.collect()) == sorted(rdd.reduceByKey(operator.add, 2).collect())
    parted = sb.partition_by(rdd, 2, "hash")
    assert parted.partitioner is not None and parted.partitioner.numPartitions == 2
