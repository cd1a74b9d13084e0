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
