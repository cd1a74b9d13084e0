"""KeyGuard: refused keys become one clear first line; everything else is the function's."""
from __future__ import annotations

import pickle

import pytest

from sparkbalance.routing import HashPartitioner, PKGPartitioner
from sparkbalance.spark.rdd.key_errors import KeyGuard, KeyRoutingError


@pytest.mark.parametrize("key, kind", [({1, 2}, "set"), (object(), "object"),
                                       ({"a": 1}, "dict")])
@pytest.mark.parametrize("f", [HashPartitioner(4), PKGPartitioner(4)])
def test_refused_keys_name_type_place_and_what_is_valid(f, key, kind):
    g = KeyGuard(f).fresh() if f.splits_keys else KeyGuard(f)
    with pytest.raises(KeyRoutingError) as info:
        g(key)
    first = str(info.value).splitlines()[0]
    assert first.startswith(f"sparkbalance: key of type {kind} on the driver cannot be routed "
                            f"by {type(f).__name__}: expected None, int, str")
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)


def test_the_guard_is_the_function_otherwise():
    f, p = HashPartitioner(8), PKGPartitioner(8)
    g = KeyGuard(f)
    assert g("a") == f("a") and g.num_partitions == 8 and not g.splits_keys
    assert not hasattr(g, "fresh") and hasattr(KeyGuard(p), "fresh")
    assert KeyGuard(p).candidates("a") == p.candidates("a")
    assert g == f and g == KeyGuard(f) and hash(g) == hash(f)
    assert pickle.loads(pickle.dumps(g))("a") == f("a")
    for proto in range(2, pickle.HIGHEST_PROTOCOL + 1):  # the guard keeps its function
        back = pickle.loads(pickle.dumps(KeyGuard(p), proto))
        assert isinstance(back, KeyGuard) and back.fresh()("a") in p.candidates("a")
    import copy
    assert copy.deepcopy(g)("a") == f("a")


def test_what_the_adapters_hand_pyspark_is_a_bound_method_that_pickles_with_its_guard():
    import types

    import cloudpickle

    from sparkbalance.routing import partition_func
    from sparkbalance.state.frames.moves import Carry, RidePartitioner
    f = HashPartitioner(8)
    route = partition_func(KeyGuard.of(f))
    assert isinstance(route, types.MethodType) and route.__self__.f is f
    # one guard per function: PySpark's partitioner equality holds across adapter calls
    assert route == partition_func(KeyGuard.of(f)) != partition_func(KeyGuard.of(HashPartitioner(8)))
    for dumps in (pickle.dumps, cloudpickle.dumps):
        back = pickle.loads(dumps(route))
        assert [back(k) for k in range(50)] == [f(k) for k in range(50)]
        with pytest.raises(KeyRoutingError):
            back({1})
    # functions and bound methods are handed on as they are
    assert partition_func(len) is len and partition_func(route) is route
    ride = pickle.loads(pickle.dumps(RidePartitioner(f)))
    assert ride(Carry(3)) == 3 and ride("a") == f("a")
