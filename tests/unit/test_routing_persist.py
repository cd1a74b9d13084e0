"""Plans saved as JSON and loaded back route exactly as the fitted functions did; a file of
another hash family, format or version is refused with a clear error."""
from __future__ import annotations

import json

import numpy as np
import pytest

from sparkbalance import strategies
from sparkbalance.routing import GroupMapPartitioner, load, save
from sparkbalance.routing.persist import from_dict, to_dict
from sparkbalance.stats.keystats import KeyStats
from sparkbalance.strategies.auto import plan_groups


def _stats() -> KeyStats:
    rng = np.random.default_rng(3)
    counts = {int(i): int(c) + 1 for i, c in enumerate(rng.zipf(1.2, 400).clip(max=4000))}
    counts.update({"hot": 9000, b"raw": 300, 2.5: 700, ("t", 1): 800, "x" * 3: 5})
    return KeyStats.from_counts(counts)


KEYS = list(_stats().keys.tolist()) + ["unseen", 10 ** 9, ("t", 2)]


@pytest.mark.parametrize("name", strategies.available())
def test_every_fitted_strategy_round_trips(tmp_path, name):
    f = strategies.fit(name, _stats(), 6)
    path = tmp_path / f"{name}.json"
    f.save(path)
    g = load(path)
    assert type(g) is type(f) and g.num_partitions == f.num_partitions
    if f.splits_keys:
        assert [f.candidates(k) for k in KEYS] == [g.candidates(k) for k in KEYS]
        assert f.fresh().assign(KEYS * 3).tolist() == g.fresh().assign(KEYS * 3).tolist()
    else:
        assert g == f
        assert g.assign(KEYS).tolist() == f.assign(KEYS).tolist()
        assert [g(k) for k in KEYS] == [f(k) for k in KEYS]


def test_group_map_plan_round_trips(tmp_path):
    f, _ = plan_groups(np.arange(64) ** 2, 4)
    save(f, tmp_path / "p.json")
    g = load(tmp_path / "p.json")
    assert isinstance(g, GroupMapPartitioner) and g == f


def test_keys_keep_their_types(tmp_path):
    f = strategies.fit("mintable", _stats(), 3)
    d = json.loads(json.dumps(to_dict(f)))
    assert set(from_dict(d).table.routes) == set(f.table.routes)


def test_another_hash_family_is_refused():
    d = to_dict(strategies.fit("mixed", _stats(), 4))
    d["hash_family"] = {**d["hash_family"], "seed": 1}
    with pytest.raises(ValueError, match="another hash family.*Refit"):
        from_dict(d)


def test_other_files_are_refused(tmp_path):
    d = to_dict(strategies.fit("hash", None, 4))
    with pytest.raises(ValueError, match="not a sparkbalance plan"):
        from_dict({"format": "x"})
    with pytest.raises(ValueError, match="version 99"):
        from_dict({**d, "version": 99})
    with pytest.raises(ValueError, match="plan type 'nope'"):
        from_dict({**d, "type": "nope"})
