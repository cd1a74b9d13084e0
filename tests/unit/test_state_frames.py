"""Spark-free tests of the state frames: encoding, the per-partition merge (against the
plain dict merge), migration splits and checkpoint validation."""
from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkbalance.routing.keygroups import key_group
from sparkbalance.routing.table import RoutingTable
from sparkbalance.state.frames import moves as fm
from sparkbalance.state.frames import format as fr
from sparkbalance.state.frames.blocks import merge_blocks
from sparkbalance.state.frames.merge import merge_partition
from sparkbalance.state.control.layout import GroupLayout, TableLayout
from sparkbalance.state.frames.window import StateFold

G = 8


def _frames_of(block: dict, num_groups: int = G) -> list[bytes]:
    return list(fr.frames_of_entries(block.items(), num_groups))


def _kinds(frames):
    out = {}
    for f in frames:
        out.setdefault(chr(f[0]), []).append(f)
    return out


def test_state_frame_round_trip_and_header():
    block = {"a": [1, 10.0, None], "b": [2, 5.5, None]}
    f = fr.state_frame(3, block)
    h = fr.header(f)
    assert (chr(h.tag), h.group, h.nkeys, h.nbytes, h.oldest) == ("S", 3, 2, 15.5, -1)
    keys, sizes = fr.frame_index(f)
    assert keys == ["a", "b"] and sizes.tolist() == [10.0, 5.5]
    assert fr.frame_block(f) == block
    w = fr.state_frame(0, {"k": [1, 1.0, [(4, [1]), (5, [0])]]})
    assert fr.header(w).oldest == 4


def test_an_index_written_as_a_numpy_array_still_reads():
    # frames checkpointed before the index held its sizes as float64 bytes
    import pickle
    block = {"a": [1, 10.0, None], "b": [2, 5.5, None]}
    index = pickle.dumps((["a", "b"], np.array([10.0, 5.5])), protocol=5)
    old = (fr._HEAD.pack(fr.TAG_STATE, 3, 2, 15.5, -1, len(index)) + index
           + pickle.dumps(block, protocol=5))
    for f in (old, fr.state_frame(3, block)):
        keys, sizes = fr.frame_index(f)
        assert keys == ["a", "b"] and sizes.dtype == np.float64
        assert sizes.tolist() == [10.0, 5.5] and fr.frame_block(f) == block
    assert fr.frames_stats(0, [old, fr.state_frame(4, {"c": [3, 2.0, None]})], G,
                           False)[3].tolist() == [10.0, 5.5, 2.0]


@pytest.mark.parametrize("frame,match", [
    (b"S", "expected a bytes frame"),
    (b"X" + bytes(40), "invalid"),
    ("not bytes", "expected a bytes frame"),
])
def test_corrupt_frames_are_clear_errors(frame, match):
    with pytest.raises(ValueError, match=match):
        fr.header(frame)


def test_header_count_mismatch_is_corruption():
    f = bytearray(fr.state_frame(1, {"a": [1, 1.0, None]}))
    f[5:9] = (7).to_bytes(4, "big")      # nkeys field
    with pytest.raises(ValueError, match="holds 1 keys; its header says 7"):
        fr.frame_block(bytes(f))


def _merge_by_frames(state: dict, batch: dict, fold, seq, per_group=False, split=1,
                     watch=None, watch_groups=None):
    frames = []
    for f in _frames_of(state):
        if split > 1:  # the same group in several frames (as after a migration)
            blk = fr.frame_block(f)
            items = list(blk.items())
            g = fr.header(f).group
            for i in range(split):
                part = dict(items[i::split])
                if part:
                    frames.append(fr.state_frame(g, part))
        else:
            frames.append(f)
    frames.append(fr.data_frame(fr.TAG_BATCH, batch))
    out = list(merge_partition(2, frames, fold, seq, G, per_group, watch,
                               watch_groups=watch_groups))
    k = _kinds(out)
    assert len(k["O"]) == 1 and len(k["T"]) == 1 and set(k) <= {"S", "O", "T"}
    new = fr.frames_to_block(k.get("S", []))
    return new, fr.frame_payload(k["O"][0]), fr.frame_payload(k["T"][0])[:6], k.get("S", [])


keys_st = st.one_of(st.integers(-50, 50), st.text(max_size=3))


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(keys_st, st.integers(-9, 9), max_size=25),
       st.lists(st.tuples(keys_st, st.integers(-9, 9)), max_size=30),
       st.sampled_from([None, 1, 2]), st.integers(1, 3))
def test_merge_partition_equals_the_dict_merge(state0, records, window, split):
    fold = StateFold(update=operator.add, initial=0, window=window)
    seq = 3
    state = {}
    for k, v in state0.items():       # entries as an earlier batch (seq 2) left them
        state[k], _ = fold.apply(None, [v], seq - 1)
    batch = {}
    for k, v in records:
        batch.setdefault(k, []).append(v)
    want, want_out, want_stats = merge_blocks(2, {k: list(e) for k, e in state.items()},
                                              batch, fold, seq)
    got, got_out, got_stats, _ = _merge_by_frames(state, batch, fold, seq, split=split)
    assert got == want
    assert sorted(got_out, key=repr) == sorted(want_out, key=repr)
    _, wk, wc, wm, wn = want_stats
    _, gk, gc, gm, gn, gt = got_stats
    assert gn == wn == len(want) and gt == pytest.approx(wm.sum())
    assert dict(zip(gk, zip(gc.tolist(), gm.tolist()))) == \
        dict(zip(wk, zip(wc.tolist(), wm.tolist())))


def test_group_stats_sum_the_key_stats():
    fold = StateFold(update=operator.add, initial=0)
    state = {i: [i, float(i + 1), None] for i in range(40)}
    batch = {i: [1] * (i % 3 + 1) for i in range(0, 60, 2)}
    _, _, (_, keys, cost, mem, nk, _), _ = _merge_by_frames(state, dict(batch), fold, 1)
    _, _, (_, none, gc, gm, gn, _), _ = _merge_by_frames(state, dict(batch), fold, 1, True)
    assert none is None and gc.shape == (G,) and gn == nk
    assert gc.sum() == pytest.approx(cost.sum()) and gm.sum() == pytest.approx(mem.sum())
    groups = np.array([key_group(k, G) for k in keys])
    assert np.allclose(np.bincount(groups, weights=mem, minlength=G), gm)


def test_untouched_groups_pass_through_as_the_same_bytes():
    fold = StateFold(update=operator.add, initial=0)
    state = {i: [i, 1.0, None] for i in range(200)}
    before = _frames_of(state)
    hot = 7
    _, _, _, after = _merge_by_frames(state, {hot: [1]}, fold, 5)
    same = set(before) & set(after)
    assert len(same) == len(before) - 1          # only the hot key's group was rewritten
    assert all(fr.header(f).group != key_group(hot, G) for f in same)


def test_expiring_windows_rewrite_only_their_groups():
    fold = StateFold(update=operator.add, initial=0, window=2)
    state = {}
    for k in range(30):                # keys seen at seq 0 (odd) or seq 1 (even)
        state[k], _ = fold.apply(None, [1], k % 2 == 0)
    got, _, _, _ = _merge_by_frames(state, {}, fold, 2)
    assert set(got) == {k for k in range(30) if k % 2 == 0}   # seq 0 fell out at seq 2


def test_duplicate_keys_across_frames_are_refused():
    fold = StateFold(update=operator.add, initial=0)
    g = key_group("a", G)
    frames = [fr.state_frame(g, {"a": [1, 1.0, None]}), fr.state_frame(g, {"a": [2, 1.0, None]}),
              fr.data_frame(fr.TAG_BATCH, {"a": [1]})]
    with pytest.raises(RuntimeError, match="stored twice"):
        list(merge_partition(0, frames, fold, 0, G, False))


def test_merge_needs_exactly_one_batch_block():
    fold = StateFold(update=operator.add, initial=0)
    with pytest.raises(RuntimeError, match="no batch block"):
        list(merge_partition(0, [], fold, 0, G, False))
    b = fr.data_frame(fr.TAG_BATCH, {})
    with pytest.raises(RuntimeError, match="two batch blocks"):
        list(merge_partition(0, [b, b], fold, 0, G, False))


def _chunks(records: list, cuts: list[int]) -> list[bytes]:
    """``records`` as the R frames of a routing shuffle, cut at ``cuts``."""
    import pickle
    out, a = [], 0
    for b in sorted(set(cuts)) + [len(records)]:
        if b > a:
            part = records[a:b]
            out.append(fr.chunk_frame(part, pickle.dumps(part), G))
            a = b
    return out


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(keys_st, st.integers(-9, 9), max_size=25),
       st.lists(st.tuples(keys_st, st.integers(-9, 9)), max_size=30),
       st.lists(st.integers(0, 30), max_size=5), st.sampled_from([None, 2]))
def test_chunked_batch_merges_as_one_batch_block(state0, records, cuts, window):
    """The batch as its routing shuffle's R chunks (any cut, none when empty) merges
    exactly as the one grouped B frame: state, outputs (values in arrival order) and
    statistics."""
    fold = StateFold(update_values=lambda s, vs: (s + sum(vs), [tuple(vs)]), initial=0,
                     window=window)
    seq = 3
    state = {k: fold.apply(None, [v], seq - 1)[0] for k, v in state0.items()}
    batch: dict = {}
    for k, v in records:
        batch.setdefault(k, []).append(v)
    frames = _frames_of(state)
    want = list(merge_partition(1, frames + [fr.data_frame(fr.TAG_BATCH, batch)], fold,
                                seq, G, False))
    got = list(merge_partition(1, _chunks(records, cuts) + frames, fold, seq, G, False,
                               chunked=True))
    wk, gk = _kinds(want), _kinds(got)
    assert fr.frames_to_block(gk.get("S", [])) == fr.frames_to_block(wk.get("S", []))
    assert fr.frame_payload(gk["O"][0]) == fr.frame_payload(wk["O"][0])
    ws, gs = fr.frame_payload(wk["T"][0]), fr.frame_payload(gk["T"][0])
    assert gs[1] == ws[1] and np.array_equal(gs[2], ws[2]) and gs[4:] == ws[4:]


def test_chunk_frames_list_the_groups_of_their_keys():
    import pickle
    recs = [(k, 1) for k in (3, "x", 3, 40)]
    f = fr.chunk_frame(recs, pickle.dumps(recs), G)
    h = fr.header(f)
    listed = np.frombuffer(f[fr.HEADER_SIZE:fr.HEADER_SIZE + h.index_len], ">i4").tolist()
    assert chr(h.tag) == "R" and listed == sorted({key_group(k, G) for k in (3, "x", 40)})
    assert fr.chunk_records(f) == recs


def test_riding_state_in_chunks_merges_as_the_ride_block():
    """A riding migration's carried items in R chunks beside the batch's (keyed by
    ``Carry``, listing the groups of the entries they carry) merge exactly as the one
    ``(block, carried)`` B frame of :func:`frame_moves.ride_block`."""
    import pickle
    from sparkbalance.state.frames.framed_state import move_of
    src = TableLayout(2, 2)
    movers = [k for k in range(80) if src.fn(k) == 0][:12]
    dst = TableLayout(2, 2, RoutingTable({k: 1 for k in movers}))
    move = move_of(src, dst, G, frozenset(movers))
    fold = StateFold(update=operator.add, initial=0)
    state = {p: {k: [k, 1.0, None] for k in range(80) if src.fn(k) == p} for p in (0, 1)}
    carried = [(c, it) for c, it in fm.carried_items(0, _frames_of(state[0]), move)
               if c.pid == 1]
    assert len(carried) == len(movers)
    records = [(k, 1) for k in range(0, 80, 3) if dst.fn(k) == 1] + [(movers[0], 5)]
    mixed = records[:3] + carried[:5] + records[3:] + carried[5:]
    want = list(merge_partition(1, fm.ride_block(mixed, G) + _frames_of(state[1]), fold, 4,
                                G, False, move=move))
    chunks = []
    for part in (mixed[:7], mixed[7:]):
        keys = [r[0] for r in part if type(r[0]) is not fm.Carry] + \
            [r[1][1] for r in part if type(r[0]) is fm.Carry]
        chunks.append(fr.chunk_frame(part, pickle.dumps(part), G, keys))
    got = list(merge_partition(1, chunks + _frames_of(state[1]), fold, 4, G, False,
                               move=move, chunked=True))
    wk, gk = _kinds(want), _kinds(got)
    block = fr.frames_to_block(gk.get("S", []))
    assert block == fr.frames_to_block(wk.get("S", []))
    assert set(movers) <= set(block)
    assert sorted(fr.frame_payload(gk["O"][0])) == sorted(fr.frame_payload(wk["O"][0]))
    ws, gs = fr.frame_payload(wk["T"][0]), fr.frame_payload(gk["T"][0])
    assert gs[4:] == ws[4:] and gs[7] == len(movers)        # moved in, counted once


def test_batch_frames_of_the_other_mode_are_refused():
    fold = StateFold(update=operator.add, initial=0)
    b = fr.data_frame(fr.TAG_BATCH, {"a": [1]})
    with pytest.raises(RuntimeError, match="'B' frame"):
        list(merge_partition(0, [b], fold, 0, G, False, chunked=True))
    with pytest.raises(RuntimeError, match="'R' frame"):
        list(merge_partition(0, _chunks([("a", 1)], []), fold, 0, G, False))


def test_moved_and_stays_partition_the_entries_exactly():
    lay = TableLayout(3, 3, RoutingTable({k: (k + 1) % 3 for k in range(0, 60, 4)}))
    block = {k: [k, 2.0, None] for k in range(60) if TableLayout(3, 3).fn(k) == 1}
    frames = _frames_of(block)
    moved = list(fm.moved_entries(1, frames, lay.fn))
    stays = fr.frames_to_block(fm.stay_frames(1, frames, lay.fn))
    assert moved and stays
    assert set(stays) | {x for x, _ in moved} == set(block)
    assert not set(stays) & {x for x, _ in moved}
    assert all(lay.fn(x) == 1 for x in stays) and all(lay.fn(x) != 1 for x, _ in moved)
    untouched = [f for f in frames if all(lay.fn(k) == 1 for k in fr.frame_block(f))]
    assert set(untouched) <= set(fm.stay_frames(1, frames, lay.fn))   # passed on as is



def test_leaving_list_splits_the_entries_like_the_partition_function():
    """The driver's per-frame list of leaving keys (the table delta) moves and keeps the
    same entries as calling the new partition function on every stored key."""
    old = TableLayout(3, 3)
    routes = {k: (old.fn(k) + 1) % 3 for k in range(0, 60, 4)}
    routes[1000] = 2                          # a delta key the state does not hold
    new = TableLayout(3, 3, RoutingTable(routes))
    block = {k: [k, 2.0, None] for k in range(60) if old.fn(k) == 1}
    frames = _frames_of(block)
    leaving = fm.leaving_by_frame(frozenset(routes), old.fn, new.fn, G)
    assert all(old.fn(k) == p and key_group(k, G) == g and new.fn(k) == to
               for (p, g), ks in leaving.items() for k, to in ks.items())
    moved = list(fm.leaving_entries(1, frames, leaving))
    assert sorted((new.fn(k), (k, e)) for k, e in fm.moved_entries(1, frames, new.fn)) \
        == sorted(moved)
    assert fr.frames_to_block(fm.kept_frames(1, frames, leaving)) \
        == fr.frames_to_block(fm.stay_frames(1, frames, new.fn))
    untouched = [f for f in frames if (1, fr.header(f).group) not in leaving]
    assert set(untouched) <= set(fm.kept_frames(1, frames, leaving))   # passed on as is

def test_reroute_groups_moves_frames_unchanged():
    old = GroupLayout.initial(2, num_groups=G)
    g2p = np.array([1, 1, 1, 1, 1, 0, 0, 0])
    frames = _frames_of({k: [k, 1.0, None] for k in range(100)})
    routed = list(fm.reroute_groups(frames, g2p))
    assert [f for _, f in routed] == frames
    assert all(p == g2p[fr.header(f).group] for p, f in routed)
    assert old.num_groups == G


def test_check_state_frame_catches_misplaced_and_foreign_keys():
    lay = TableLayout(2, 2)
    g = key_group(next(k for k in range(100) if lay.fn(k) == 0), G)
    keys = [k for k in range(1000) if lay.fn(k) == 0 and key_group(k, G) == g]
    good = fr.state_frame(g, {k: [k, 1.0, None] for k in keys})
    assert keys and fr.check_state_frame(good, 0, G, lay.fn).nkeys == len(keys)
    with pytest.raises(ValueError, match="routes it to 0"):
        fr.check_state_frame(good, 1, G, lay.fn)
    with pytest.raises(ValueError, match="keys of other groups"):
        fr.check_state_frame(fr.state_frame((g + 1) % G, {keys[0]: [1, 1.0, None]}), 0, G,
                             lay.fn)
    with pytest.raises(ValueError, match="among the state frames"):
        fr.check_state_frame(fr.data_frame(fr.TAG_OUTPUTS, []), 0, G, lay.fn)


def test_frames_summary_and_stats_from_headers():
    block = {k: [k, 3.0, None] for k in range(50)}
    frames = _frames_of(block)
    assert fr.frames_summary(4, frames) == (4, 50, 150.0)
    pid, keys, cost, mem, nk, tot = fr.frames_stats(4, frames, G, False)
    assert tot == 150.0
    assert sorted(keys) == list(range(50)) and cost.sum() == 0 and mem.sum() == 150.0
    _, none, gc, gm, gn, _ = fr.frames_stats(4, frames, G, True)
    assert none is None and gm.sum() == 150.0 and gn == 50


def test_watched_stats_list_only_batch_and_table_keys_with_exact_totals():
    """Per-key statistics of a big state with a small batch: the batch's keys and the
    routing table's (watched) keys only; the totals still count every key."""
    fold = StateFold(update=operator.add, initial=0)
    state = {i: [i, 2.0, None] for i in range(300)}
    batch = {5: [1, 1], 6: [1]}
    watch = frozenset({7, 250, 999})          # 999: a table key without state
    new, _, (_, keys, cost, mem, nk, tot), _ = _merge_by_frames(state, batch, fold, 1,
                                                                watch=watch)
    assert sorted(keys) == [5, 6, 7, 250]
    assert dict(zip(keys, cost.tolist())) == {5: 2.0, 6: 1.0, 7: 0.0, 250: 0.0}
    assert nk == 300 and tot == pytest.approx(sum(e[1] for e in new.values()))
    _, _, (_, keys0, *_), _ = _merge_by_frames(state, batch, fold, 1, watch=frozenset())
    assert sorted(keys0) == [5, 6]


def test_the_drivers_watched_groups_of_a_partition_give_the_same_statistics():
    """The groups of the table keys the layout places on the partition, sent by the driver,
    stand in for hashing every table key in the task: the same statistics when they hold
    its keys' groups; a table key placed elsewhere (its group not sent) is not read here."""
    fold = StateFold(update=operator.add, initial=0)
    state = {i: [i, 2.0, None] for i in range(300)}
    batch = {5: [1, 1], 6: [1]}
    watch = frozenset({7, 250, 999})
    here = {key_group(7, G), key_group(250, G)}
    base = _merge_by_frames(state, batch, fold, 1, watch=watch)
    sent = _merge_by_frames(state, batch, fold, 1, watch=watch, watch_groups=here)
    assert sent[0] == base[0] and sent[1] == base[1]
    assert sent[2][1] == base[2][1] and sent[2][4:] == base[2][4:]
    _, _, (_, keys, *_), _ = _merge_by_frames(state, batch, fold, 1, watch=watch,
                                              watch_groups={key_group(7, G)})
    assert sorted(keys) == [5, 6, 7] or key_group(250, G) == key_group(7, G)


class _Acc:
    """An accumulator's ``add`` folded by an ``AccumulatorParam``, as a task's local copy."""

    def __init__(self, param):
        self.param, self.value = param, param.zero(None)

    def add(self, v):
        self.value = self.param.addInPlace(self.value, v)


def test_a_tallied_chunk_stamps_its_tasks_span_per_chunk_from_its_unpickling():
    """The look-ahead's map span: from when the task's worker unpickles the chunk wrapper
    (the task's start) to its last chunk, one clock read per chunk, and the keys counted."""
    import pickle
    import time

    from sparkbalance.state.frames.route_chunks import KeyTally, MapSpan, _TalliedChunk
    from sparkbalance.state.frames.format import chunk_records

    tally, span = _Acc(KeyTally()), _Acc(MapSpan())
    made = _TalliedChunk(8, tally, None, span)
    time.sleep(0.01)
    t0 = time.time()
    task = pickle.loads(pickle.dumps(made))
    tally, span = task.tally, task.span      # the task's copies, as a worker's
    recs = [("a", 1), ("b", 2), ("a", 3)]
    frame = task(recs, pickle.dumps(recs))
    first_end = span.value[1]
    task(recs[:1], pickle.dumps(recs[:1]))
    assert chunk_records(frame) == recs
    assert tally.value == {"a": 3, "b": 1}
    assert t0 <= span.value[0] <= first_end <= span.value[1] <= time.time()
    assert span.value[0] > made._t0        # the task's start, not the driver's


def test_a_chunk_without_tally_still_stamps_the_span():
    import pickle

    from sparkbalance.state.frames.route_chunks import MapSpan, _TalliedChunk

    span = _Acc(MapSpan())
    task = pickle.loads(pickle.dumps(_TalliedChunk(4, None, None, span)))
    task([("k", 1)], pickle.dumps([("k", 1)]))
    span = task.span
    assert span.value[0] <= span.value[1] < float("inf")
