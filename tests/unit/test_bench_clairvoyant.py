"""The clairvoyant's forecast: the values a windowed merge folds per key (pure)."""
from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

from sparkbalance.bench.clairvoyant import split_oracle, window_work
from sparkbalance.bench.streams import parse_spec


def _fold_counts(batches, window):
    """Simulate the window's segments (state.window): per batch, the values folded per key."""
    segs: dict = {}
    out = []
    for t, b in enumerate(batches):
        c = Counter(k for k, _ in b)
        work: Counter = Counter()
        for k in set(segs) | set(c):
            kept = [s for s in segs.get(k, []) if window is None or s[0] > t - window]
            if len(kept) != len(segs.get(k, [])):
                work[k] += sum(n for _, n in kept)         # replay what stays
            if c.get(k):
                work[k] += c[k]
                kept.append((t, c[k]))
            if kept:
                segs[k] = kept
            else:
                segs.pop(k, None)
        out.append({k: v for k, v in work.items() if v})
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 6), max_size=12), min_size=1, max_size=8),
       st.sampled_from([None, 1, 2, 3]))
def test_window_work_is_what_the_window_folds(keys, window):
    batches = [[(k, 1) for k in b] for b in keys]
    want = _fold_counts(batches, window)
    for t in range(len(batches)):
        assert window_work(batches, t, window) == want[t]


def test_oracle_specs_parse_as_their_planner():
    assert split_oracle("oracle:ssm") == (True, "ssm")
    assert parse_spec("oracle:mixed@0.2", 0.08) == ("mixed", 0.2)
    with pytest.raises(ValueError, match="plain Spark has no layout"):
        parse_spec("oracle:plain", 0.08)
