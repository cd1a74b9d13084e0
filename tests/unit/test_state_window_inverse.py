"""Windowed keyed state with an inverse update: the same states as replaying the window,
with one update and one inverse per record (Spark-free)."""
from __future__ import annotations

import operator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkbalance.state.frames.window import StateFold

# one key's batches: (present?, values) per batch seq
_batches = st.lists(st.tuples(st.booleans(), st.lists(st.integers(-50, 50), min_size=1,
                                                      max_size=4)), min_size=1, max_size=25)


def _run(fold: StateFold, batches) -> list:
    entry, states = None, []
    for seq, (present, values) in enumerate(batches):
        if present:
            entry, _ = fold.apply(entry, values, seq)
        elif entry is not None:
            entry = fold.expire(entry, seq)
        states.append(None if entry is None else entry[0])
    return states


@settings(max_examples=200, deadline=None)
@given(_batches, st.integers(1, 5))
def test_inverse_gives_the_states_of_the_replaying_window(batches, w):
    replay = StateFold(update=operator.add, initial=0, window=w)
    inv = StateFold(update=operator.add, initial=0, window=w, inverse=operator.sub)
    assert _run(inv, batches) == _run(replay, batches)


def test_one_update_and_at_most_one_inverse_per_record():
    calls = {"update": 0, "inverse": 0}

    def upd(s, v):
        calls["update"] += 1
        return s + v

    def inv(s, v):
        calls["inverse"] += 1
        return s - v

    w, records = 3, 0
    fold = StateFold(update=upd, initial=0, window=w, inverse=inv)
    entry = None
    for seq in range(30):
        entry, _ = fold.apply(entry, [1, 2], seq)
        records += 2
    assert calls["update"] == records
    assert calls["inverse"] <= records
    assert entry[0] == 3 * w

    calls.update(update=0, inverse=0)
    replay = StateFold(update=upd, initial=0, window=w)
    entry = None
    for seq in range(30):
        entry, _ = replay.apply(entry, [1, 2], seq)
    assert calls["update"] > 2 * records        # the replay refolds up to w batches


def test_inverse_needs_update_and_a_window():
    with pytest.raises(ValueError, match="inverse= needs"):
        StateFold(update=operator.add, initial=0, inverse=operator.sub)
    with pytest.raises(ValueError, match="inverse= needs"):
        StateFold(update_values=lambda s, vs: (s, None), initial=0, window=2,
                  inverse=operator.sub)
    with pytest.raises(TypeError, match="inverse=3"):
        StateFold(update=operator.add, initial=0, window=2, inverse=3)
