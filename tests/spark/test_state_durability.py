"""Crash tests for every checkpoint write path, one owner per directory, exactly-once
``process()`` with kept outputs, and corruption that is refused with a clear error.

A crash is simulated by raising at one step of the save (the store's steps are
monkeypatched); the exception is a ``BaseException`` (like a kill, nothing catches it), so
the half-written files stay behind as after a real crash. After every crash the directory
must resume the previous commit exactly (read back with ``restore_checkpoint``), and the
operator in memory must not be advanced (a retry applies the batch exactly once)."""
from __future__ import annotations

import gc
import operator
import shutil
import subprocess
import time

import pytest
from pyspark import StorageLevel

from sparkbalance.state.durability import checkpoint as ck
from sparkbalance.state.durability import manifest as mf
from sparkbalance.state import merge_job
from sparkbalance.state.durability.checkpoint import restore_checkpoint
from sparkbalance.state.durability.manifest import MANIFEST, CheckpointError
from sparkbalance.state.frames.rdds import frame_ops
from sparkbalance.state.durability.lease import LeaseError
from sparkbalance.state.operator import KeyedStateOperator
from sparkbalance.bench.shifting import batch_records, shifting_zipf_counts
from sparkbalance.state.durability.store import store_for
from sparkbalance.state.streaming import ReplayError


class Crash(BaseException):
    """A simulated kill at one step of a save."""


STEPS = ["_write_state", "_write_outputs", "write_layout", "write_manifest", "clean_stale"]


def _stream(n, seed=5):
    return [batch_records(k, c, seed=t) for t, (k, c) in enumerate(
        shifting_zipf_counts(30, 3, n, z=1.1, records_per_batch=90, f=2.0, seed=seed))]


def _ref(batches):
    """Plain Python: the state after each batch and each batch's outputs."""
    state, states, outs = {}, [], []
    for b in batches:
        touched = set()
        for k, v in b:
            state[k] = state.get(k, 0) + v
            touched.add(k)
        states.append(dict(state))
        outs.append({k: state[k] for k in touched})
    return states, outs


def _op(sc, d, planner="mixed", **kw):
    return KeyedStateOperator(sc, 3, update=operator.add, initial=0, planner=planner,
                              theta=0.05, checkpoint_dir=d, **kw)


def _on_disk(sc, d, planner="mixed", n=3):
    """The committed checkpoint of ``d`` read back (no operator, no lease)."""
    got = restore_checkpoint(store_for(sc, d), frame_ops(sc), planner=planner, window=None,
                             num_partitions=n, storage_level=StorageLevel.MEMORY_AND_DISK)
    state = got.state.collect()
    got.state.rdd.unpersist()
    return got, state


def _crash_at(monkeypatch, step):
    def boom(*a, **k):
        raise Crash(step)
    monkeypatch.setattr(ck, step, boom)
    if step == "_write_state":     # a batch's commit: its merge job writes the state
        monkeypatch.setattr(merge_job, "write_selected", boom)


@pytest.mark.parametrize("planner", ["mixed", "ssm"])
def test_crash_at_every_step_of_a_batch_commit(sc, tmp_path, monkeypatch, planner):
    batches = _stream(len(STEPS) + 2)
    states, outs = _ref(batches)
    op = _op(sc, tmp_path, planner)
    op.process(sc.parallelize(batches[0], 2), batch_id=0)
    for t, step in enumerate(STEPS, start=1):
        with monkeypatch.context() as m:
            _crash_at(m, step)
            with pytest.raises(Crash):
                op.process(sc.parallelize(batches[t], 2), batch_id=t)
        # not advanced in memory: same state, same last batch id, no record
        assert op.last_batch_id == t - 1 and len(op.history) == t
        assert op.collect_state() == states[t - 1]
        got, state = _on_disk(sc, tmp_path, planner)
        if step == "clean_stale":          # crashed after the commit: the new one is in force
            assert (got.last_batch_id, state) == (t, states[t])
        else:                              # before it: the previous commit, exactly
            assert (got.last_batch_id, state) == (t - 1, states[t - 1])
        # the retry on the same object applies the batch exactly once
        out = op.process(sc.parallelize(batches[t], 2), batch_id=t)
        assert dict(out.collect()) == outs[t]
        assert op.collect_state() == states[t]
    t = len(STEPS) + 1
    op.process(sc.parallelize(batches[t], 2), batch_id=t)
    # A commit keeps the state files that outputs RDDs still referenced may recompute
    # from (see FileLoans): none once they are gone, at the next commit.
    del out
    gc.collect()
    op.save_checkpoint()
    names = [p.name for p in tmp_path.iterdir()]
    pending = ["pending"] if op.pending_migration else []   # a decided move, saved unmoved
    assert sorted(n.split("-")[0] for n in names if n.startswith(mf.PREFIXES)) == [
        "layout", "outputs", *pending, "state"]          # the crashes' leftovers are cleaned
    op.close()
    again = _op(sc, tmp_path, planner)
    assert again.collect_state() == states[t] and again.last_batch_id == t
    assert dict(again.last_outputs().collect()) == outs[t]
    again.close()


def test_crash_during_scale_and_manual_save_keeps_the_previous_commit(sc, tmp_path,
                                                                      monkeypatch):
    batches = _stream(3)
    states, _ = _ref(batches)
    op = _op(sc, tmp_path, "ssm")
    for t, b in enumerate(batches[:2]):
        op.process(sc.parallelize(b, 2), batch_id=t)
    layout = op.layout
    for step in ("_write_state", "write_layout", "write_manifest"):   # outputs: committed
        with monkeypatch.context() as m:
            _crash_at(m, step)
            with pytest.raises(Crash):
                op.scale(4)
            assert op.layout == layout and op.num_partitions == 3
            assert op.collect_state() == states[1]
            got, state = _on_disk(sc, tmp_path, "ssm")
            assert (got.seq, got.last_batch_id, state) == (2, 1, states[1])
            with pytest.raises(Crash):
                op.save_checkpoint()               # a second save at the same seq
            got, state = _on_disk(sc, tmp_path, "ssm")
            assert (got.seq, state) == (2, states[1])
    op.scale(4)
    op.save_checkpoint()                           # same seq again: a new name, no loss
    op.close()
    got, state = _on_disk(sc, tmp_path, "ssm", n=4)
    assert state == states[1] and got.last_batch_id == 1
    again = KeyedStateOperator(
        sc, 4, update=operator.add, initial=0, planner="ssm", theta=0.05,
        checkpoint_dir=tmp_path)
    again.process(sc.parallelize(batches[2], 2), batch_id=2)
    assert again.collect_state() == states[2]
    again.close()


def test_missing_manifest_is_refused_and_nothing_is_overwritten(sc, tmp_path):
    batches = _stream(2)
    op = _op(sc, tmp_path)
    for t, b in enumerate(batches):
        op.process(sc.parallelize(b, 2), batch_id=t)
    op.close()
    (tmp_path / MANIFEST).unlink()
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(CheckpointError, match=r"holds checkpoint files .* but no manifest\.json"
                                              r"; refusing to start an empty state"):
        _op(sc, tmp_path)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    _op(sc, tmp_path / "fresh").close()            # an empty directory starts fine


def test_one_operator_per_directory(sc, tmp_path):
    states, _ = _ref(_stream(2))
    a = _op(sc, tmp_path / "a", lease_timeout=1.5)
    with pytest.raises(LeaseError, match=r"checkpoint_dir .*a is in use by operator"):
        _op(sc, tmp_path / "a")
    b = _op(sc, tmp_path / "b")                    # another directory: independent
    batches = _stream(2)
    a.process(sc.parallelize(batches[0], 2), batch_id=0)
    b.process(sc.parallelize(batches[1], 2), batch_id=0)
    b.close()
    # a "crashed" owner: its heartbeat stops; after the timeout the lease is taken over
    a._lease._stop.set()
    time.sleep(2.0)
    c = _op(sc, tmp_path / "a")
    assert c.collect_state() == states[0] and c.last_batch_id == 0
    with pytest.raises(LeaseError, match="taken over"):
        a.process(sc.parallelize(batches[1], 2), batch_id=1)   # fenced, not committed
    assert a.last_batch_id == 0
    c.process(sc.parallelize(batches[1], 2), batch_id=1)
    assert c.collect_state() == states[1]
    c.close()
    a.close()
    d = _op(sc, tmp_path / "a")                    # close() released the lease
    assert d.collect_state() == states[1]
    d.close()


def test_process_is_exactly_once_and_keeps_the_last_outputs_over_a_restart(sc, tmp_path):
    batches = _stream(4)
    states, outs = _ref(batches)
    op = _op(sc, tmp_path)
    for t, b in enumerate(batches[:3]):
        op.process(sc.parallelize(b, 2), batch_id=t)
    assert op.process(sc.parallelize(batches[1], 2), batch_id=1) is None   # older: skipped
    assert op.collect_state() == states[2]
    op.close()                                     # a crash before outputs were delivered
    again = _op(sc, tmp_path)
    assert dict(again.last_outputs().collect()) == outs[2]
    assert dict(again.process(sc.parallelize(batches[2], 2), batch_id=2).collect()) == outs[2]
    assert again.foreach_batch(sc.parallelize(batches[2], 2), 2) is not None
    assert again.collect_state() == states[2] and len(again.history) == 0
    again.close()
    strict = _op(sc, tmp_path, on_replay="error")
    with pytest.raises(ReplayError, match="batch_id=2 was applied already"):
        strict.process(sc.parallelize(batches[2], 2), batch_id=2)
    assert dict(strict.process(sc.parallelize(batches[3], 2), batch_id=3).collect()) == outs[3]
    outputs = [p.name for p in tmp_path.iterdir() if p.name.startswith("outputs-")]
    assert len(outputs) == 1                        # batch 2's were dropped at batch 3's commit
    strict.close()


def test_resumed_state_files_stay_while_the_state_reads_them(sc, tmp_path):
    # Whether batch 1 decides a migration depends on measured time (payoff trigger). A
    # save used to move such a migration first, cutting the state's lineage, so the
    # resumed files were (rightly) cleaned and this test failed; a save now keeps the
    # move pending, so the state reads the resumed files until the truncation either way.
    batches = _stream(4)
    states, _ = _ref(batches)
    op = _op(sc, tmp_path, truncate_every=3)
    op.process(sc.parallelize(batches[0], 2), batch_id=0)
    op.close()
    again = _op(sc, tmp_path, truncate_every=3)   # resumed at seq 1
    resumed = again._resumed[0]
    again.process(sc.parallelize(batches[1], 2), batch_id=1)   # seq 1: no truncation
    assert (tmp_path / resumed).exists()
    for rdd in again._resumed[1], *again._state.cached:
        rdd.unpersist()                            # like a lost executor: recompute from files
    assert again.collect_state() == states[1]
    again.process(sc.parallelize(batches[2], 2), batch_id=2)   # seq 2: lineage truncated
    again.process(sc.parallelize(batches[3], 2), batch_id=3)
    assert not (tmp_path / resumed).exists()       # no longer read: cleaned
    assert again.collect_state() == states[3]
    again.close()


def _committed(sc, d, n=2):
    op = _op(sc, d)
    for t, b in enumerate(_stream(n)):
        op.process(sc.parallelize(b, 2), batch_id=t)
    op.close()
    return mf.read_manifest(d)


def test_changed_byte_and_truncated_part_file_are_named(sc, tmp_path):
    man = _committed(sc, tmp_path)
    state = tmp_path / man.state_dir
    part = max((p for p in state.iterdir() if p.name.startswith("part-")),
               key=lambda p: p.stat().st_size)
    data = bytearray(part.read_bytes())
    saved = bytes(data)
    data[len(data) // 2] ^= 0x01                   # one bit, same length
    part.write_bytes(bytes(data))
    (state / f".{part.name}.crc").unlink(missing_ok=True)   # as on HDFS or S3: no .crc
    with pytest.raises(CheckpointError, match=rf"{part.name}: checksum .* the state file is "
                                              "corrupt|" + part.name):
        _op(sc, tmp_path)
    part.write_bytes(saved[:-7])                   # truncated
    with pytest.raises(CheckpointError, match=rf"{part.name}: {len(saved) - 7} bytes; the "
                                              rf"manifest records {len(saved)}"):
        _op(sc, tmp_path)
    part.write_bytes(saved)
    _op(sc, tmp_path).close()                      # the intact file resumes


def _chattr(flag, path):
    if shutil.which("chattr") is None:
        return False
    return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0


def test_read_only_directory_fails_the_batch_and_a_retry_applies_it_once(sc, tmp_path):
    batches = _stream(2)
    states, outs = _ref(batches)
    d = tmp_path / "ck"
    op = _op(sc, d)
    op.process(sc.parallelize(batches[0], 2), batch_id=0)
    if not _chattr("+i", d):                       # root ignores chmod; immutable does not
        op.close()
        pytest.skip("chattr +i not permitted here")
    try:
        with pytest.raises(CheckpointError, match=rf"cannot write the checkpoint to {d} "
                                                  r"\(.*\); the previous commit"):
            op.process(sc.parallelize(batches[1], 2), batch_id=1)
        assert op.last_batch_id == 0 and op.collect_state() == states[0]
    finally:
        _chattr("-i", d)
    out = op.process(sc.parallelize(batches[1], 2), batch_id=1)
    assert dict(out.collect()) == outs[1] and op.collect_state() == states[1]
    op.close()
    _chattr("+i", d)
    try:
        with pytest.raises(CheckpointError, match=r"cannot write the lease file"):
            _op(sc, d)
    finally:
        _chattr("-i", d)


def test_full_directory_fails_the_batch_with_the_directory_named(sc, tmp_path):
    d = tmp_path / "full"
    d.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(d)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        op = KeyedStateOperator(sc, 2, update=operator.add, initial="", planner="mixed",
                                checkpoint_dir=d)
        big = [(f"k{i}", "x" * 4000) for i in range(200)]   # ~800 kB of state
        with pytest.raises(CheckpointError, match=rf"cannot write the checkpoint to {d} "):
            op.process(sc.parallelize(big, 2), batch_id=0)
        assert op.last_batch_id is None and op.collect_state() == {}
        subprocess.run(["mount", "-o", "remount,size=16m", str(d)], check=True)
        op.process(sc.parallelize(big, 2), batch_id=0)
        assert op.collect_state() == dict(big)
        op.close()
    finally:
        subprocess.run(["umount", "-l", str(d)], capture_output=True)
