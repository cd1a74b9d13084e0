"""A bad key or record met on an executor reaches the driver as one clear exception.

It is the cause's own class (KeyRoutingError, NotAPairError) and PySpark's PythonException
at once, its text the cause's lines only (key, partition, stage, fix); the executor's full
failure stays on ``executor_error``.
"""
from __future__ import annotations

import operator

import pytest
from pyspark.errors import PythonException

import sparkbalance as sb
from sparkbalance.spark.rdd.key_errors import KeyRoutingError, NotAPairError


@pytest.mark.parametrize("strategy", ["hash", "pkg"])
def test_an_executors_bad_key_names_type_partition_and_remedy(sc, strategy):
    rdd = sc.parallelize([("a", 1), ("b", 2), (frozenset({1}), 3), ("a", 4)], 2)
    with pytest.raises(KeyRoutingError) as info:
        sb.reduce_by_key(rdd, operator.add, 2, strategy).collect()
    assert isinstance(info.value, (PythonException, TypeError, ValueError))
    lines = str(info.value).splitlines()
    assert lines[0].startswith("sparkbalance: key of type frozenset in input partition 1 "
                               "(stage"), lines
    assert "expected None, int, str, bytes" in lines[0]
    assert "Filter or replace such keys" in lines[1]
    assert len(lines) <= 3 and "Traceback" not in str(info.value)
    assert "Traceback" in info.value.executor_error      # the executor's text, kept


def _first_cause(info) -> str:
    assert isinstance(info.value, (NotAPairError, PythonException)), info.value
    lines = str(info.value).splitlines()
    assert len(lines) <= 3 and lines[0].startswith("sparkbalance: records must be"), lines
    return lines[0]


@pytest.mark.parametrize("call", [
    lambda rdd: sb.partition_by(rdd, 2, "hash"),
    lambda rdd: sb.reduce_by_key(rdd, operator.add, 2),             # default: zero-pass path
    lambda rdd: sb.reduce_by_key(rdd, operator.add, 2, "pkg"),      # splitting: our router
    lambda rdd: sb.group_by_key(rdd, 2, "hash"),
], ids=["partition_by", "reduce_by_key-auto", "reduce_by_key-pkg", "group_by_key"])
def test_records_that_are_not_pairs_name_partition_and_record(sc, call):
    rdd = sc.parallelize([("a", 1), ("b", 2), 5, 6], 2)  # partition 1 holds 5, 6
    with pytest.raises(NotAPairError) as info:
        call(rdd).collect()
    line = _first_cause(info)
    assert ("sparkbalance: records must be (key, value) pairs; partition 1 got "
            "a <class 'int'>: 5") in line


def test_join_names_the_other_sides_bad_record(sc):
    left = sc.parallelize([("a", 1), ("b", 2)], 2)
    right = sc.parallelize([("a", "x"), "oops"], 2)
    with pytest.raises(NotAPairError) as info:
        sb.join(left, right, 2, "hash").collect()
    assert "partition 1 got a <class 'str'>: 'oops'" in _first_cause(info)


def test_pair_check_keeps_results_and_partitioner(sc):
    rdd = sc.parallelize([(i % 3, i) for i in range(30)], 3)
    out = sb.reduce_by_key(rdd, operator.add, 2, "hash")
    assert sorted(out.collect()) == sorted(rdd.reduceByKey(operator.add, 2).collect())
    parted = sb.partition_by(rdd, 2, "hash")
    assert parted.partitioner is not None and parted.partitioner.numPartitions == 2
