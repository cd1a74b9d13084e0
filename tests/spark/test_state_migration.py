"""Delta migration of routing-table state on its own (``migrate``): chains of random-key
table deltas — more keys than frames, as in bench_state part A — leave exactly the
state a plain-Python reference computes, with the moving frames shuffled by the JVM
(bridge) or by Python (fallback)."""
from __future__ import annotations

import random

import pytest

from sparkbalance.routing.table import RoutingTable
from sparkbalance.state.frames import format as fr
from sparkbalance.state.frames.rdds import as_frames, frame_ops
from sparkbalance.state.control.layout import TableLayout
from sparkbalance.state.frames.migration import migrate

N, KEYS, G = 4, 3000, 16


def _entry(k: int) -> list:
    return [f"state-{k}".encode() * (1 + k % 5), float(10 + k % 7), None]


def _state(sc, layout: TableLayout):
    pairs = sc.parallelize(range(KEYS), 4).map(lambda k: (k, _entry(k)))
    return as_frames(pairs.partitionBy(layout.num_physical, layout.fn)
                     .mapPartitions(lambda it: fr.frames_of_entries(it, G)))


def _blocks(rdd) -> list[tuple[int, dict]]:
    return rdd.mapPartitionsWithIndex(
        lambda pid, it: [(pid, fr.frames_to_block(it))]).collect()


def _ops(sc, jvm: bool):
    ops = frame_ops(sc, prefer_jvm=jvm)
    if jvm and not ops.jvm:
        pytest.skip("bridge jar not built")
    return ops


def _random_delta(rng: random.Random, routes: dict, fraction: float) -> dict:
    """A table delta moving ``fraction`` of the keys (random ones) to another partition,
    plus a few keys the state does not hold."""
    delta = {k: rng.randrange(N) for k in rng.sample(range(KEYS), int(fraction * KEYS))}
    delta.update({KEYS + i: rng.randrange(N) for i in range(5)})
    return {**routes, **delta}


@pytest.mark.parametrize("jvm", [True, False], ids=["jvm", "python"])
def test_chained_random_key_deltas_leave_exactly_the_reference_state(sc, jvm):
    from pyspark import StorageLevel

    ops = _ops(sc, jvm)
    rng = random.Random(13)
    old = TableLayout(N, N)
    state = _state(sc, old)
    routes: dict = {}
    cached = []
    for version in range(1, 4):
        new_routes = _random_delta(rng, routes, 0.1)
        new = TableLayout(N, N, RoutingTable(new_routes, version))
        cands = frozenset(k for k in new_routes if routes.get(k) != new_routes[k])
        assert len(cands) > N * G                      # more keys than frames
        before = {k: old.fn(k) for k in range(KEYS)}
        res = migrate(ops, state, old, new, G, StorageLevel.MEMORY_AND_DISK, candidates=cands)
        moved = [k for k in range(KEYS) if new.fn(k) != before[k]]
        assert res.keys_moved == len(moved)
        assert res.bytes_moved == pytest.approx(sum(_entry(k)[1] for k in moved))
        got = _blocks(res.rdd)
        assert [p for p, _ in got] == list(range(N))
        for pid, block in got:
            want = {k: _entry(k) for k in range(KEYS) if new.fn(k) == pid}
            assert block == want, f"partition {pid} after delta {version}"
        cached += res.cached
        state, old, routes = res.rdd, new, new_routes
    for c in cached:
        c.unpersist()


def test_moving_frames_arrive_as_bytes_and_are_counted_from_their_headers(sc):
    ops = _ops(sc, True)
    frames = [fr.state_frame(g, {f"k{g}-{i}": [i, 1.5, None] for i in range(g + 1)})
              for g in range(6)]
    moving = sc.parallelize([(g % 3, f) for g, f in enumerate(frames)], 2)
    out, counts = ops.shuffle_frames(moving, 3)
    got = out.glom().collect()
    assert out.getNumPartitions() == 3
    assert [sorted(fr.header(f).group for f in part) for part in got] == [[0, 3], [1, 4], [2, 5]]
    assert counts() == (21, 21 * 1.5)
    bad, _ = ops.shuffle_frames(sc.parallelize([(3, frames[0])], 1), 3)
    with pytest.raises(Exception, match="routed to partition 3; expected 0 <= p < 3"):
        bad.count()
