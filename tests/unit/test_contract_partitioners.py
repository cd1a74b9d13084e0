"""One contract suite over every partition function of sparkbalance.

Contract (ARCHITECTURE "The three interfaces"): outputs in [0, n); deterministic (for
splitting functions: a deterministic candidate set, every output inside it, and a
deterministic replay from a fresh map task); pickle and cloudpickle round trips (a
splitting function's local load vector arrives zeroed); ``assign`` equals per-key calls
(for splitting functions: per-key calls of a fresh copy, i.e. one fresh map task); bad keys
raise the hashing module's clear errors.
"""
from __future__ import annotations

import pickle

import cloudpickle
import numpy as np
import pytest

from sparkbalance import strategies
from sparkbalance.routing import (HashPartitioner, KeyGroupPartitioner, RoutingTable,
                                  RoutingTablePartitioner)
from sparkbalance.routing.choices import ChoicesPartitioner
from sparkbalance.routing.pkg import PKGPartitioner
from sparkbalance.routing.tag import TimeAwarePartitioner
from sparkbalance.stats import KeyStats

KEYS = (list(range(-20, 80)) + [f"user-{i}" for i in range(80)] + [("a", 1), b"raw", 2.5,
        True, 3.0])
# A skewed record sequence: the heavy keys repeat, so splitting functions actually split.
RECORDS = ["hot"] * 60 + [7] * 30 + KEYS + ["hot"] * 20 + [("a", 1)] * 10


def _stats() -> KeyStats:
    counts: dict = {}
    for k in RECORDS:
        counts[k] = counts.get(k, 0) + 1
    # True == 1 and 3.0 == 3 in Python: dict keys merge, as stable_hash does.
    return KeyStats.from_counts(counts)


def _fitted() -> list:
    """Every registered strategy whose fitter imports, fitted on small skewed stats."""
    out = []
    for name in strategies.available():
        spec = strategies.get(name)
        try:
            strategies.fit(name, _stats(), 5)
        except (ImportError, AttributeError):
            continue  # planner module not written yet
        except Exception:
            pass  # keep it: the contract tests will show the failure
        out.append(pytest.param(lambda name=name: strategies.fit(name, _stats(), 5),
                                id=f"fit:{name}"))
    return out


FACTORIES = [
    pytest.param(lambda: HashPartitioner(1), id="hash1"),
    pytest.param(lambda: HashPartitioner(7), id="hash7"),
    pytest.param(lambda: RoutingTablePartitioner(5, RoutingTable({"user-1": 4, 3: 0, ("a", 1): 2})),
                 id="table"),
    pytest.param(lambda: KeyGroupPartitioner(3), id="keygroups"),
    pytest.param(lambda: KeyGroupPartitioner(4, 10, [0, 0, 3, 10, 10]), id="keygroups-empty"),
    pytest.param(lambda: PKGPartitioner(1), id="pkg1"),
    pytest.param(lambda: PKGPartitioner(6), id="pkg6"),
    pytest.param(lambda: ChoicesPartitioner(6, {"hot": 0.5, 7: 0.2}, mode="d"), id="dchoices"),
    pytest.param(lambda: ChoicesPartitioner(6, ["hot", 7], mode="w"), id="wchoices"),
    pytest.param(lambda: TimeAwarePartitioner(6, [1, 2, 1, 1, 3, 1], {"hot": 0.5, 7: 0.25}),
                 id="tag"),
    pytest.param(lambda: TimeAwarePartitioner(3), id="tag-plain"),
] + _fitted()


def _roundtrips(f):
    return [pickle.loads(pickle.dumps(f)), cloudpickle.loads(cloudpickle.dumps(f))]


@pytest.mark.parametrize("make", FACTORIES)
def test_outputs_in_range(make):
    f = make()
    n = f.num_partitions
    assert all(0 <= f(k) < n for k in RECORDS)
    out = f.assign(np.array(RECORDS, dtype=object))
    assert out.dtype == np.int64 and out.shape == (len(RECORDS),)
    assert ((0 <= out) & (out < n)).all()


@pytest.mark.parametrize("make", FACTORIES)
def test_deterministic(make):
    f, g = make(), make()
    if not f.splits_keys:
        assert [f(k) for k in RECORDS] == [g(k) for k in RECORDS] == [f(k) for k in RECORDS]
        return
    # Splitting: the candidate set is deterministic and every output lies inside it.
    assert [f.candidates(k) for k in KEYS] == [g.candidates(k) for k in KEYS]
    for k in RECORDS:
        assert f(k) in f.candidates(k)
    assert f.assign(RECORDS).tolist() == g.assign(RECORDS).tolist()


@pytest.mark.parametrize("make", FACTORIES)
def test_pickling_round_trip(make):
    f = make()
    before = [f(k) for k in RECORDS]  # warms memo / local loads on the driver copy
    for g in _roundtrips(f):
        assert g.num_partitions == f.num_partitions and g.splits_keys == f.splits_keys
        if f.splits_keys:
            assert g.local_loads == [0.0] * f.num_partitions  # a fresh map task
            assert [g(k) for k in RECORDS] == f.assign(RECORDS).tolist()
        else:
            assert [g(k) for k in RECORDS] == before


@pytest.mark.parametrize("make", FACTORIES)
def test_assign_equals_per_key_calls(make):
    f = make()
    keys = np.array(RECORDS, dtype=object)
    if f.splits_keys:
        # assign = what a fresh map task does; it neither reads nor changes f's own loads.
        f(RECORDS[0])
        loads = f.local_loads
        got = f.assign(keys).tolist()
        assert f.local_loads == loads
        fresh = f.fresh()
        assert got == [fresh(k) for k in RECORDS]
    else:
        assert f.assign(keys).tolist() == [f(k) for k in RECORDS]


@pytest.mark.parametrize("make", FACTORIES)
@pytest.mark.parametrize("bad, exc, match", [
    (frozenset({1}), TypeError, "frozenset"), ({"a": 1}, TypeError, "dict"),
    (("x", {1}), TypeError, "set"),
])
def test_bad_keys_raise_clear_errors(make, bad, exc, match):
    f = make()
    with pytest.raises(exc, match=match):
        f(bad)
    with pytest.raises(exc, match=match):
        f.assign([1, bad])


def test_pkg_splits_a_hot_key_evenly_over_its_two_candidates():
    f = PKGPartitioner(8)
    # PKG's two hashes coincide for 1/n of the keys: take the first key whose do not, so
    # the test does not depend on the hash values of one literal key.
    hot = next(k for k in (f"hot-{i}" for i in range(100)) if len(set(f.candidates(k))) == 2)
    a, b = f.candidates(hot)
    assert a != b
    out = f.assign([hot] * 100).tolist()
    assert out.count(a) == out.count(b) == 50


def test_choices_give_heavy_keys_more_candidates():
    d = ChoicesPartitioner(16, {"hot": 0.1, "warm": 0.02}, mode="d")
    w = ChoicesPartitioner(16, {"hot": 0.4}, mode="w")
    assert d.num_choices("hot") == 7  # ceil(0.1 * 16 / 0.25)
    assert d.num_choices("warm") == 2
    assert w.num_choices("hot") == 16
    assert set(d.candidates("cold")) == set(PKGPartitioner(16).candidates("cold"))
    out = w.assign(["hot"] * 160).tolist()
    assert sorted(out.count(p) for p in range(16)) == [10] * 16


def test_tag_balances_time_not_records():
    t = [1.0, 2.0, 4.0, 1.0]
    f = TimeAwarePartitioner(4, t, {"hot": 1.0})
    # p=1.0 gives 20 segments over 4 partitions: all four are candidates (w.h.p., fixed seed).
    assert sorted(f.candidates("hot")) == [0, 1, 2, 3]
    out = f.assign(["hot"] * 700).tolist()
    time_loads = [out.count(i) * t[i] for i in range(4)]
    assert max(time_loads) / (sum(time_loads) / 4) < 1.05


@pytest.mark.parametrize("kwargs, match", [
    ({"mode": "x"}, "mode='x'"), ({"heavy_keys": ["a"], "mode": "d"}, "mapping"),
    ({"heavy_keys": {"a": 2.0}}, "frequency"), ({"heavy_keys": {frozenset(): 0.5}}, "frozenset"),
])
def test_choices_validation(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        ChoicesPartitioner(4, **kwargs)


@pytest.mark.parametrize("t, match", [([1, 2], "shape"), ([1, 0, 1], "> 0"), ([1, np.nan, 1], "> 0")])
def test_tag_validation(t, match):
    with pytest.raises(ValueError, match=match):
        TimeAwarePartitioner(3, t)


def test_fitters_find_heavy_keys():
    s = _stats()
    assert "hot" in strategies.fit("dchoices", s, 5).heavy_keys
    assert "hot" in strategies.fit("wchoices", s, 5).heavy_keys
    assert "hot" in strategies.fit("tag", s, 5).routes
    assert strategies.fit("pkg", None, 5).num_partitions == 5
    with pytest.raises(ValueError, match="needs key statistics"):
        strategies.fit("tag", None, 5)


# --- the registry's records -------------------------------------------------------------

def _fitter_defaults(name: str) -> dict:
    import inspect
    sig = inspect.signature(strategies.get(name).load())
    return {k: p.default for k, p in sig.parameters.items()
            if p.kind is p.KEYWORD_ONLY and k != "current"}


@pytest.mark.parametrize("name", strategies.available())
def test_record_defaults_are_the_fitters(name):
    """The documented defaults of a record (θ, A_max, τ, ...) are what its fitter uses."""
    spec = strategies.get(name)
    have = _fitter_defaults(name)
    assert set(spec.defaults) <= set(strategies.accepted_params(name))
    for k, v in spec.defaults.items():
        assert have[k] == v, (name, k)


def test_documented_defaults_and_the_default_strategy():
    assert strategies.DEFAULT_STRATEGY in strategies.available()
    assert strategies.get("mixed").defaults == {"theta": 0.08, "max_table": 3000, "beta": 1.5}
    assert strategies.get("keygroups").defaults["tau"] == 0.2
    assert strategies.resolve(None).name == strategies.DEFAULT_STRATEGY


def test_mtm_accepts_the_mtmaware_constructor_parameters():
    import inspect
    from sparkbalance.planning.intervals.mtm import MTMAware
    init = set(inspect.signature(MTMAware.__init__).parameters) - {"self"}
    assert set(strategies.accepted_params("mtm")) == init
    strategies.check_params("mtm", {"matrix": {2: {3: 1.0}}, "gamma": 0.5})
    with pytest.raises(TypeError, match="'num_groups'"):
        strategies.check_params("mtm", {"num_groups": 8})
    assert "mtm" in strategies.available(state=True) and "mtm" not in strategies.available()
    with pytest.raises(ValueError, match="keyed state only"):
        strategies.fit("mtm", _stats(), 4)


@pytest.mark.parametrize("name", strategies.available())
def test_unknown_parameter_names_the_valid_ones(name):
    with pytest.raises(TypeError) as e:
        strategies.resolve(name, {"no_such_param": 1})
    assert "'no_such_param'" in str(e.value)
    assert all(p in str(e.value) for p in strategies.accepted_params(name))


def test_tag_systematic_placement_covers_every_partition_for_a_hot_key():
    # p = 0.383 over n = 8 is 15 segments: systematic placement puts one on every partition,
    # i.i.d. draws (the paper's literal reading) may miss some.
    f = TimeAwarePartitioner(8, None, {k: 0.383 for k in range(20)})
    assert all(sorted(f.candidates(k)) == list(range(8)) for k in range(20))
    g = TimeAwarePartitioner(8, None, {k: 0.383 for k in range(20)}, placement="random")
    assert all(set(g.candidates(k)) <= set(range(8)) for k in range(20))
    with pytest.raises(ValueError, match="placement"):
        TimeAwarePartitioner(8, None, {"a": 0.5}, placement="x")
