"""Spark-free tests of the keyed-state logic: window fold, blocks, layouts, controller,
checkpoint manifests."""
from __future__ import annotations

import json
import operator
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkbalance.routing.table import RoutingTable
from sparkbalance.state.durability import manifest as ck
from sparkbalance.state.frames.blocks import group_block, merge_blocks
from sparkbalance.state.control.controller import Controller
from sparkbalance.state.control.planners import initial_layout, state_planners, state_strategy
from sparkbalance.state.inputs import check_pairs
from sparkbalance.state.control.layout import GroupLayout, TableLayout
from sparkbalance.bench.shifting import batch_records, shifting_zipf_counts
from sparkbalance.state.streaming import already_applied, check_batch_id
from sparkbalance.state.frames.window import StateFold, check_window


# ----------------------------------------------------------------------------- window
def test_unbounded_fold_is_a_running_state():
    f = StateFold(update=operator.add, initial=0)
    e = None
    for seq, vals in enumerate([[1, 2], [3], [4]]):
        e, out = f.apply(e, vals, seq)
    assert e[0] == 10 and out == [10] and e[2] is None


@given(st.lists(st.lists(st.integers(-5, 5), max_size=4), min_size=1, max_size=12),
       st.integers(1, 4))
def test_window_state_is_the_fold_of_the_last_w_batches(batches, w):
    f = StateFold(update=operator.add, initial=0, window=w)
    e = None
    for seq, vals in enumerate(batches):
        if vals:
            e, _ = f.apply(e, vals, seq)
        elif e is not None:
            e = f.expire(e, seq)
    t = len(batches) - 1
    window = [v for vals in batches[max(0, t - w + 1):] for v in vals]
    if window:
        assert e is not None and e[0] == sum(window)
    else:
        assert e is None


def test_initial_is_copied_per_key_and_callables_are_factories():
    f = StateFold(update=lambda s, v: s + [v], initial=[])
    a, _ = f.apply(None, [1], 0)
    b, _ = f.apply(None, [2], 0)
    assert a[0] == [1] and b[0] == [2]
    g = StateFold(update=lambda s, v: s + [v], initial=list)
    assert g.apply(None, [3], 0)[0][0] == [3]


def test_update_values_outputs_and_deletion():
    f = StateFold(update_values=lambda s, vs: (None if sum(vs) < 0 else s + sum(vs),
                                               [("n", len(vs))]), initial=0)
    e, out = f.apply(None, [1, 2], 0)
    assert e[0] == 3 and out == [("n", 2)]
    e, out = f.apply(e, [-9], 1)
    assert e is None


def test_bad_fold_arguments():
    with pytest.raises(ValueError, match="exactly one"):
        StateFold()
    with pytest.raises(ValueError, match="exactly one"):
        StateFold(update=operator.add, update_values=lambda s, v: (s, []))
    with pytest.raises(TypeError, match="update=3"):
        StateFold(update=3)
    with pytest.raises(TypeError, match="window='x'"):
        check_window("x")
    f = StateFold(update_values=lambda s, v: s, initial=0)
    with pytest.raises(TypeError, match="pair"):
        f.apply(None, [1], 0)


def test_state_size_hook_is_used_for_memory():
    f = StateFold(update=operator.add, initial=0, state_size=lambda s: 8 * s)
    e, _ = f.apply(None, [2, 3], 0)
    assert e[1] == 40.0


# ----------------------------------------------------------------------------- blocks
def test_check_pairs_rejects_bad_records():
    with pytest.raises(TypeError, match="key None"):
        list(check_pairs([(None, 1)]))
    with pytest.raises(ValueError, match="1 fields"):
        list(check_pairs([("a",)]))
    with pytest.raises(TypeError, match="expected a \\(key, value\\) pair"):
        list(check_pairs(["ab"]))


def test_merge_blocks_updates_state_outputs_and_stats():
    f = StateFold(update=operator.add, initial=0)
    state = {"a": [1, 10.0, None], "z": [5, 10.0, None]}
    [batch] = group_block([("a", 2), ("b", 1), ("a", 3)])
    new, out, stats = merge_blocks(1, state, batch, f, seq=4)
    assert {k: e[0] for k, e in new.items()} == {"a": 6, "b": 1, "z": 5}
    assert sorted(out) == [("a", 6), ("b", 1)]
    pid, keys, cost, mem, nk = stats
    assert pid == 1 and nk == 3
    assert dict(zip(keys, cost.tolist())) == {"a": 2.0, "b": 1.0, "z": 0.0}



# ----------------------------------------------------------------------------- layouts
def test_group_layout_after_plan_keeps_owners_physical_partition():
    lay = GroupLayout.initial(2, num_groups=8)           # [0,4) on 0, [4,8) on 1
    grown = lay.after_plan(np.array([0, 3, 6, 8]), np.array([0, 1, 5]))
    assert grown.phys.tolist() == [0, 1, 2] and grown.num_physical == 3
    assert grown.version == 1
    shrunk = GroupLayout(3, 3, 8, np.array([0, 2, 5, 8]), np.array([0, 1, 2])).after_plan(
        np.array([0, 4, 8]), np.array([0, 2]))
    assert shrunk.phys.tolist() == [0, 2] and shrunk.num_physical == 3   # no relabel move
    assert pickle.loads(pickle.dumps(shrunk)) == shrunk


def test_group_layout_validates():
    with pytest.raises(ValueError, match="phys"):
        GroupLayout(2, 2, 4, np.array([0, 2, 4]), np.array([0, 0]))
    with pytest.raises(ValueError, match="num_physical"):
        TableLayout(4, 3)


# ----------------------------------------------------------------------------- controller
def _stats_table(loads_per_pid):
    out = []
    k = 0
    for pid, costs in enumerate(loads_per_pid):
        keys = list(range(k, k + len(costs)))
        k += len(costs)
        out.append((pid, keys, np.array(costs, float), np.ones(len(costs)), len(costs)))
    return out


def test_controller_measures_and_triggers_on_theta():
    c = Controller("mixed", theta=0.1)
    lay = initial_layout("mixed", 2)
    m = c.measure(_stats_table([[5.0, 5.0], [1.0, 1.0]]), lay)
    assert m.imbalance == pytest.approx(10 / 6)
    assert c.should_rebalance(m)
    m2 = c.measure(_stats_table([[3.0], [3.0]]), lay)
    assert not c.should_rebalance(m2)
    assert not Controller("none").should_rebalance(m)


def test_controller_plans_a_better_table():
    from sparkbalance.routing.hash import home_partitions
    keys = np.arange(40)
    home = home_partitions(keys, 2)
    cost = np.where(home == 0, 5.0, 1.0)
    stats = [(p, keys[home == p].tolist(), cost[home == p], np.ones((home == p).sum()),
              int((home == p).sum())) for p in (0, 1)]
    c = Controller("mixed", theta=0.05)
    lay = initial_layout("mixed", 2)
    m = c.measure(stats, lay)
    d = c.plan(m, lay)
    assert d.imbalance_after < m.imbalance and d.layout.version == 1 and d.table_size > 0


def test_controller_plans_groups_with_ssm():
    c = Controller("ssm", theta=0.1)
    lay = initial_layout("ssm", 2, num_groups=8)
    gc = np.array([4, 4, 4, 4, 1, 1, 1, 1], float)
    stats = [(0, None, gc, np.ones(8), 8)]
    m = c.measure(stats, lay)
    d = c.plan(m, lay)
    assert d.imbalance_after < m.imbalance and d.layout.kind == "groups"


def test_time_weighted_costs_follow_partition_seconds():
    c = Controller("mixed", theta=0.1)
    lay = initial_layout("mixed", 2)
    m = c.measure(_stats_table([[2.0], [2.0]]), lay, partition_seconds=np.array([4.0, 1.0]))
    assert m.loads.tolist() == [4.0, 1.0] and m.imbalance == pytest.approx(1.6)


def test_planner_names_come_from_the_registry():
    assert state_strategy("SSM").name == "keygroups" and state_strategy("none").kind == "hash"
    assert state_planners() == ["hash", "mixed", "mixedbf", "mintable", "minmig", "readj",
                                "keygroups", "mtm", "correlation", "correlation-pairwise"]
    with pytest.raises(ValueError, match="planner='fast'; expected one of"):
        state_strategy("fast")
    with pytest.raises(TypeError):
        state_strategy(None)
    with pytest.raises(ValueError, match="planner='pkg' splits keys"):
        Controller("pkg")
    assert Controller("SSM").name == "ssm" and Controller("SSM").strategy.name == "keygroups"
    assert Controller("mtm").planner is None and initial_layout("mtm", 2).kind == "groups"


def test_unknown_planner_parameters_are_refused_not_dropped():
    with pytest.raises(TypeError, match="unknown parameter 'thetaa'"):
        Controller("mixed", planner_params={"thetaa": 0.1})
    c = Controller("mixed", planner_params={"compact": True})
    assert c.params == {"compact": True}


# ----------------------------------------------------------------------------- checkpoint
def _manifest(**kw):
    base = dict(seq=3, last_batch_id=2, num_partitions=2, num_physical=2, planner="mixed",
                window=None, layout_kind="table", layout_version=1, layout_file="layout.pkl",
                layout_sha256="0" * 64, state_dir="state-00000003", num_keys=5,
                state_bytes=10.0, num_groups=256)
    base.update(kw)
    return ck.Manifest(**base)


def test_manifest_round_trip_and_layout_checksum(tmp_path):
    lay = TableLayout(2, 2, RoutingTable({"a": 1}, version=1))
    name, sha = ck.write_layout(tmp_path, ck.new_token(3), lay)
    m = _manifest(layout_file=name, layout_sha256=sha)
    ck.write_manifest(tmp_path, m)
    assert ck.read_manifest(tmp_path) == m
    text = (tmp_path / ck.MANIFEST).read_text()
    (tmp_path / ck.MANIFEST).write_text(text.replace('"num_keys": 5', '"num_keys": 6'))
    with pytest.raises(ck.CheckpointError, match=r"manifest\.json: checksum .* was changed"):
        ck.read_manifest(tmp_path)
    ck.write_manifest(tmp_path, m)
    assert ck.read_layout(tmp_path, m) == lay
    (tmp_path / name).write_bytes(b"garbage")
    with pytest.raises(ck.CheckpointError, match=f"{name}.*checksum"):
        ck.read_layout(tmp_path, m)


@pytest.mark.parametrize("content,match", [
    ("{not json", "not a valid checkpoint manifest"),
    ("[1, 2]", "expected a JSON object"),
    (json.dumps({"seq": 1, "format": ck.FORMAT}), "missing field"),
    (json.dumps({"seq": 1, "format": 1}),
     f"format 1; this sparkbalance reads format {ck.FORMAT}"),
])
def test_corrupt_manifest_is_a_clear_error(tmp_path, content, match):
    (tmp_path / ck.MANIFEST).write_text(content)
    with pytest.raises(ck.CheckpointError, match=match) as e:
        ck.read_manifest(tmp_path)
    assert "manifest.json" in str(e.value)


def test_mismatched_settings_are_refused(tmp_path):
    m = _manifest()
    with pytest.raises(ck.CheckpointError, match="planner='mixed'; this operator has "
                                                 "planner='ssm'"):
        ck.check_compatible(tmp_path, m, {"planner": "ssm"})
    with pytest.raises(ck.CheckpointError, match="_SUCCESS"):
        ck.check_compatible(tmp_path, m, {"planner": "mixed"})


def test_no_checkpoint_yet(tmp_path):
    assert ck.read_manifest(tmp_path) is None


# ----------------------------------------------------------------------------- streaming
def test_batch_ids():
    assert check_batch_id(np.int64(3)) == 3
    with pytest.raises(TypeError):
        check_batch_id("1")
    with pytest.raises(ValueError, match="batch_id=-2"):
        check_batch_id(-2)
    assert already_applied(2, 5) and not already_applied(6, 5)


# ----------------------------------------------------------------------------- stream
def test_shifting_stream_shifts_the_hot_partition():
    from sparkbalance.routing.hash import home_partitions
    loads = []
    for keys, counts in shifting_zipf_counts(200, 4, 6, records_per_batch=4000, f=2.0,
                                             seed=2):
        loads.append(np.bincount(home_partitions(keys, 4), weights=counts, minlength=4))
    diffs = [np.abs(a - b).sum() for a, b in zip(loads, loads[1:])]
    assert min(diffs) > 0.05 * 4000
    assert len(batch_records(np.array([1, 2]), np.array([3, 4]))) == 7


def test_store_for_picks_local_or_hadoop_and_rejects_bad_dirs(tmp_path):
    from sparkbalance.state.durability.store import LocalStore, store_for
    st = store_for(None, str(tmp_path / "c"))
    assert isinstance(st, LocalStore)
    st.mkdirs()
    st.write_atomic("m.json", b"1")
    st.write_atomic("m.json", b"2")
    assert st.read_bytes("m.json") == b"2" and st.list() == ["m.json"]
    st.remove("m.json")
    assert not st.exists("m.json")
    with pytest.raises(ValueError, match="Hadoop URI; it needs a SparkContext"):
        store_for(None, "hdfs://namenode/ck")
    with pytest.raises(TypeError, match="expected a path or a URI"):
        store_for(None, 5)


def test_cost_from_partition_seconds_uses_the_mean_rate_where_unmeasured():
    from sparkbalance.stats.timeweights import cost_from_partition_seconds
    # partition 1: 2 s over 4 records; partition 2 has no time (NaN) -> mean 4 s / 8 rec
    c = cost_from_partition_seconds([1.0, 3.0, 4.0], [0, 1, 2], [0.0, 4.0, 4.0],
                                    [2.0, 2.0, np.nan])
    assert c.tolist() == [0.5, 1.5, 2.0]
    with pytest.raises(ValueError, match="where has ids"):
        cost_from_partition_seconds([1.0], [3], [1.0], [1.0])


def test_a_format_3_manifest_still_reads(tmp_path):
    """A manifest as format 3 wrote it (no pending-migration fields, its checksum over
    the format-3 body) is read back, without a pending migration."""
    import dataclasses
    import hashlib
    m = _manifest()
    d = {k: v for k, v in dataclasses.asdict(m).items() if not k.startswith("pending_")}
    d["format"] = 3
    d["checksum"] = hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()
    (tmp_path / ck.MANIFEST).write_text(json.dumps(d))
    got = ck.read_manifest(tmp_path)
    assert got.format == 3 and got.pending_file is None and got.seq == m.seq
    assert ck.read_pending(tmp_path, got, None) is None


def test_pending_migration_round_trip_and_refusals(tmp_path):
    from sparkbalance.state.control.controller import Decision
    old = TableLayout(2, 2, RoutingTable({"a": 1}, version=1))
    new = TableLayout(2, 2, RoutingTable({"a": 0, "b": 1}, version=2))
    d = Decision(new, 1.0, 2, 30.0, 0.01, True, 2, frozenset({"a", "b"}))
    name, sha = ck.write_pending(tmp_path, ck.new_token(3), d)
    m = _manifest(pending_file=name, pending_sha256=sha, pending_seq=2)
    ck.write_manifest(tmp_path, m)
    got = ck.read_manifest(tmp_path)
    assert got == m and name in got.files and name.startswith(ck.PREFIXES)
    assert ck.read_pending(tmp_path, got, old) == d
    with pytest.raises(ck.CheckpointError, match=r"version > 2"):
        ck.read_pending(tmp_path, got, new)           # not newer than the state's layout
    (tmp_path / name).write_bytes(b"garbage")
    with pytest.raises(ck.CheckpointError, match=f"{name}: checksum"):
        ck.read_pending(tmp_path, got, old)
