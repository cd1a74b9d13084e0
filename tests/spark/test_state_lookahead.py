"""The controller that plans on the batch being merged (``lookahead="always"``): the batch's
keys are tallied before its merge, the plan made on them rides in that same batch's
shuffle, and the state stays exact against a plain-Python reference — windowed too, over
a checkpoint resume, and through a batch that fails."""
from __future__ import annotations

import operator

import numpy as np
import pytest

from sparkbalance.routing.hash import home_partitions
from sparkbalance.state.operator import KeyedStateOperator

N = 4


def _shifting(num: int, seed: int = 3) -> list[list]:
    """Batches whose three hot keys, all homed on one partition, change every batch (each
    stays warm in the next): a reactive plan always comes one batch too late."""
    rng = np.random.default_rng(seed)
    homed = [k for k, p in zip(range(1000, 3000), home_partitions(list(range(1000, 3000)), N))
             if p == 0]
    out = []
    for t in range(num):
        hot, warm = homed[3 * t:3 * t + 3], homed[3 * t - 3:3 * t] if t else []
        keys = list(rng.integers(0, 60, 200)) + hot * 60 + warm * 5
        out.append([(int(k), 1) for k in keys])
    return out


def _op(sc, **kw) -> KeyedStateOperator:
    return KeyedStateOperator(sc, N, update=operator.add, initial=0, planner="mixed",
                              trigger="paper", theta=0.1, **kw)


def _apply(ref: dict, batch: list) -> None:
    for k, v in batch:
        ref[k] = ref.get(k, 0) + v


def test_a_plan_on_the_batch_itself_moves_in_that_batch_and_keeps_the_state(sc):
    batches = _shifting(4)
    op, ref = _op(sc, lookahead="always"), {}
    for t, b in enumerate(batches):
        op.process(sc.parallelize(b, 2), batch_id=t)
        _apply(ref, b)
        assert op.collect_state() == ref
    # Every batch's hot keys are new: each batch was balanced by a move planned on itself
    # and carried in its own shuffle (a reactive controller runs each of them at λ ≈ 2).
    assert all(r.rebalanced for r in op.history)
    assert [m.seq for m in op.migrations] == [r.seq for r in op.history]
    assert max(r.imbalance_before for r in op.history) < 1.3
    fn = op.partition_function
    for pid, blk in enumerate(op.blocks_rdd.collect()):
        assert all(fn(k) == pid for k in blk)
    op.close()


@pytest.mark.parametrize("window", [None, 2])
def test_lookahead_matches_the_reactive_controller_state_for_state(sc, window):
    batches = _shifting(4, seed=4)
    ahead = _op(sc, lookahead="always", window=window)
    reactive = _op(sc, lookahead="never", window=window)
    for t, b in enumerate(batches):
        a = dict(ahead.process(sc.parallelize(b, 2), batch_id=t).collect())
        r = dict(reactive.process(sc.parallelize(b, 2), batch_id=t).collect())
        assert a == r
    assert ahead.collect_state() == reactive.collect_state()
    ahead.close()
    reactive.close()


def test_a_failed_lookahead_batch_leaves_the_operator_as_it_was(sc):
    batches = _shifting(3, seed=5)
    op, ref = _op(sc, lookahead="always"), {}
    for t, b in enumerate(batches[:2]):
        op.process(sc.parallelize(b, 2), batch_id=t)
        _apply(ref, b)
    version, rows = op.version, len(op.history)
    bad = batches[2] + [(float("nan"), 1)]
    with pytest.raises(Exception):
        op.process(sc.parallelize(bad, 2), batch_id=2)
    assert op.version == version and len(op.history) == rows
    assert op.collect_state() == ref
    op.process(sc.parallelize(batches[2], 2), batch_id=2)
    _apply(ref, batches[2])
    assert op.collect_state() == ref
    op.close()


def test_lookahead_resumes_from_a_checkpoint_exactly(sc, tmp_path):
    batches = _shifting(4, seed=6)
    op, ref = _op(sc, lookahead="always", checkpoint_dir=str(tmp_path)), {}
    for t, b in enumerate(batches[:2]):
        op.process(sc.parallelize(b, 2), batch_id=t)
        _apply(ref, b)
    op.close()
    again = _op(sc, lookahead="always", checkpoint_dir=str(tmp_path))
    assert again.collect_state() == ref
    for t, b in enumerate(batches[2:], start=2):
        again.process(sc.parallelize(b, 2), batch_id=t)
        _apply(ref, b)
    assert again.collect_state() == ref
    again.close()


def test_lookahead_rejects_an_unknown_mode(sc):
    with pytest.raises(ValueError, match="lookahead='sometimes'"):
        _op(sc, lookahead="sometimes")


def _group_layouts(G: int):
    from sparkbalance.state.control.layout import GroupLayout
    src = GroupLayout.initial(N, G)
    bounds = src.bounds.copy()
    bounds[1] -= 2                       # two groups of partition 0 move to partition 1
    return src, GroupLayout(N, N, G, bounds, src.phys.copy(), 1)


def _table_layouts(G: int):
    from sparkbalance.routing.table import RoutingTable
    from sparkbalance.state.control.layout import TableLayout
    src = TableLayout(N, N)
    homes = home_partitions(list(range(60)), N)
    moved = {k: (int(p) + 1) % N for k, p in zip(range(60), homes) if k % 3 == 0}
    return src, TableLayout(N, N, RoutingTable(moved))


@pytest.mark.parametrize("reread", [True, False], ids=["reread", "route-again"])
@pytest.mark.parametrize("kind", ["table", "groups"])
def test_a_moving_plan_routes_again_only_the_records_it_places_elsewhere(sc, kind, reread,
                                                                         monkeypatch):
    """The look-ahead's batch is routed by the old layout (its map stage run for the
    tally); the plan made on it moves some keys. With ``StateReread`` each merge reads
    the written shuffle again where its new keys were written: the batch is read once,
    nothing is routed again. Without it (an older jar) only the moved keys' records are
    routed again, with the moving state. Either way the state equals a plain
    recomputation — nothing lost or duplicated, every key on the partition the new
    layout names."""
    from sparkbalance.state.frames.framed_state import FramedState, Merged
    from sparkbalance.state.frames.rdds import frame_ops
    from sparkbalance.state.frames.route_chunks import KeyTally, run_map_stage
    from sparkbalance.state.frames.window import StateFold

    ops = frame_ops(sc)
    if not ops.chunks:
        pytest.skip("bridge jar with R frames not built")
    if reread and not ops.rereads:
        pytest.skip("bridge jar without StateReread")
    monkeypatch.setattr(ops, "rereads", reread)
    G = 16
    src, dst = (_table_layouts if kind == "table" else _group_layouts)(G)
    fold = StateFold(operator.add, 0, None, None, None)
    rng = np.random.default_rng(7)
    b0 = [(int(k), 1) for k in rng.integers(0, 60, 400)]
    b1 = [(int(k), 2) for k in rng.integers(0, 60, 400)]
    first = FramedState.empty(ops, src, G).merge(sc.parallelize(b0, 2), fold, 0)
    first.rdd.cache()
    first.stats()
    state = first.state()
    reads = sc.accumulator(0)

    def counted(kv):
        reads.add(1)
        return kv

    pairs = sc.parallelize(b1, 2).map(counted)
    tallied = state.merge(pairs, fold, 1, tally=sc.accumulator({}, KeyTally()))
    run_map_stage(tallied.routed)
    merged = state.merge(pairs, fold, 1, to=dst, routed=tallied.routed)
    merged.rdd.cache()
    out, got, _ = Merged.moved(merged.stats())
    assert out == got > 0
    ref: dict = {}
    _apply(ref, b0)
    _apply(ref, b1)
    assert merged.state().collect() == ref
    assert dict(merged.outputs().collect()) == {k: ref[k] for k, _ in b1}
    fn = dst.fn
    for pid, blk in enumerate(merged.state().blocks().collect()):
        assert all(fn(k) % N == pid for k in blk)
    srcp, dstp = src.fn, dst.fn
    misplaced = sum(1 for k, _ in b1 if srcp(k) % N != dstp(k) % N)
    assert 0 < misplaced < len(b1)
    if reread:
        # the batch was read once (its map stage); the merges read its shuffle again
        assert merged.misplaced.reread and merged.misplaced.routed is None
        assert reads.value == len(b1)
    else:
        # only the moved keys' records went through the second shuffle
        assert merged.misplaced.routed.value == misplaced
        assert reads.value == 2 * len(b1)
    merged.rdd.unpersist()
    first.rdd.unpersist()


def test_a_plan_that_misplaces_few_records_keeps_the_operator_exact(sc):
    """Many warm keys homed on one partition: the plan on the batch itself moves a few of
    them, under MISPLACED_SHARE of the batch's records, so the operator routes only those
    again (route_chunks.Misplaced); state and outputs equal a plain recomputation."""
    from sparkbalance.state.control.lookahead import MISPLACED_SHARE

    rng = np.random.default_rng(11)
    keys = list(range(5000, 5400))
    homes = home_partitions(keys, N)
    on0 = [k for k, p in zip(keys, homes) if p == 0][:40]
    base = [int(k) for k in rng.choice(keys[:200], 1400)]
    b0 = [(k, 1) for k in base]
    b1 = [(k, 1) for k in base] + [(k, 1) for k in on0 for _ in range(5)]
    op, ref = _op(sc, lookahead="always"), {}
    op.process(sc.parallelize(b0, 2), batch_id=0)
    _apply(ref, b0)
    before = op.partition_function
    out = dict(op.process(sc.parallelize(b1, 2), batch_id=1).collect())
    _apply(ref, b1)
    after = op.partition_function
    assert op.history[-1].rebalanced
    misplaced = sum(1 for k, _ in b1 if before(k) % N != after(k) % N)
    assert 0 < misplaced <= MISPLACED_SHARE * len(b1)
    assert out == {k: ref[k] for k, _ in b1}
    assert op.collect_state() == ref
    for pid, blk in enumerate(op.blocks_rdd.collect()):
        assert all(after(k) % N == pid for k in blk)
    op.close()


def test_misplaced_records_are_dropped_only_where_they_no_longer_belong():
    """Misplaced.drop on the batch block the merge gathered (no job): a moved key's
    records leave its old partition and stay on its new one; other keys stay."""
    from sparkbalance.routing.table import RoutingTable
    from sparkbalance.state.control.layout import GroupLayout, TableLayout
    from sparkbalance.state.frames.route_chunks import Misplaced

    G = 8
    src = TableLayout(N, N)
    k = next(k for k in range(100) if src.fn.assign([k])[0] == 0)
    stay = next(j for j in range(100) if src.fn.assign([j])[0] == 0 and j != k)
    m = Misplaced(src, TableLayout(N, N, RoutingTable({k: 2})), G)
    assert m.keys == {k: 2} and m.records({k: 4, stay: 9}) == 4
    old = {k: [1, 3], stay: [2]}
    m.drop(0, old)
    assert old == {stay: [2]}
    new = {k: [1]}
    m.drop(2, new)
    assert new == {k: [1]}
    # key groups: a moved group's keys leave its old partition only
    from sparkbalance.routing.keygroups import key_groups
    a = GroupLayout.initial(N, G)
    assign = a.interval_of_group().copy()
    g = int(np.flatnonzero(a.group_to_partition() == 0)[0])
    assign[g] = 1
    mg = Misplaced(a, a.after_map(assign, N), G)
    to = int(a.after_map(assign, N).group_to_partition()[g])
    assert mg.groups == {g: to} and to != 0
    ks = list(range(200))
    gs = key_groups(ks, G).tolist()
    moved = [x for x, h in zip(ks, gs) if h == g][:3]
    kept = [x for x, h in zip(ks, gs) if h != g][:3]
    blk = {x: [1] for x in moved + kept}
    mg.drop(0, blk)
    assert set(blk) == set(kept)
    blk = {x: [1] for x in moved}
    mg.drop(to, blk)
    assert set(blk) == set(moved)



def test_a_reread_block_keeps_only_the_keys_its_new_plan_places_there():
    """Misplaced with ``reread`` (no job): partition 2 reads its own reduce partition and
    partition 0's, where its arriving key was written, and keeps only the keys the new
    layout places on it; partition 0 drops the key that left."""
    from sparkbalance.routing.table import RoutingTable
    from sparkbalance.state.control.layout import TableLayout
    from sparkbalance.state.frames.route_chunks import Misplaced

    src = TableLayout(N, N)
    on = {p: [k for k in range(200) if src.fn.assign([k])[0] == p][:2] for p in range(N)}
    k = on[0][0]
    m = Misplaced(src, TableLayout(N, N, RoutingTable({k: 2})), 8, reread=True)
    assert m.sources() == [[0], [1], [2, 0], [3]]
    assert m.read_again({k: 4, on[0][1]: 3, on[2][0]: 5}) == 7   # partition 0, read once more
    blk = {x: [1] for x in on[2] + on[0]}     # its own and partition 0's keys
    m.drop(2, blk)
    assert set(blk) == set(on[2]) | {k}
    own = {x: [1] for x in on[0]}
    m.drop(0, own)
    assert set(own) == {on[0][1]}


def _every_other(num: int, seed: int = 6) -> list[list]:
    """Batches whose hot keys move every second batch (the first of each pair)."""
    shifting = _shifting((num + 1) // 2, seed)
    return [shifting[t // 2] for t in range(num)]


@pytest.mark.parametrize("mode,kind", [("always", 1), ("never", 0)])
def test_the_operator_times_its_batches_by_kind_for_the_price(sc, mode, kind):
    op = _op(sc, lookahead=mode)
    for t, b in enumerate(_every_other(4)):
        op.process(sc.parallelize(b, 2), batch_id=t)
    price = op._forecasting.lookahead.price
    # the batches that carried no move are samples of their kind, none of the other
    assert 0 < price.counts[kind] < len(op.history)
    assert price.counts[1 - kind] == 0
    op.close()


def test_auto_records_batches_with_and_without_the_look_ahead_and_stays_exact(sc):
    batches = _every_other(8, seed=7)
    op, ref = _op(sc, lookahead="auto"), {}
    # As after a costly shift (the paper trigger judges no seconds, so none is learned
    # here): auto looks ahead until quiet batches make another shift unlikely.
    op._forecasting.lookahead.observe(1.0)
    for t, b in enumerate(batches):
        op.process(sc.parallelize(b, 2), batch_id=t)
        _apply(ref, b)
    assert op.collect_state() == ref
    without, with_ = op._forecasting.lookahead.price.counts
    assert without > 0 and with_ > 0
    op.close()
