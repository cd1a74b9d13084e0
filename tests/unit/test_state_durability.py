"""Durability without Spark: the lease protocol, the store's exclusive create and sizes,
refusal of files without a manifest, cleanup that spares a resumed state's files, frame
digests, rollback snapshots and the replay policy."""
from __future__ import annotations

import json
import threading

import pytest

from sparkbalance.state.durability import manifest as ck
from sparkbalance.state.durability.lease import LEASE, Lease, LeaseError
from sparkbalance.state.durability.rollback import Snapshot
from sparkbalance.state.ledger import Ledger
from sparkbalance.state.durability.state_files import check_files, frames_digest, part_name
from sparkbalance.state.durability.store import LocalStore, error_cause
from sparkbalance.state.streaming import ReplayError, check_on_replay, replayed


class Clock:
    def __init__(self, t=1000.0):
        self.t = t

    def __call__(self):
        return self.t


# ----------------------------------------------------------------------------- lease
def test_second_owner_is_refused_until_release(tmp_path):
    st = LocalStore(tmp_path)
    a, b = Lease(st, 30.0), Lease(st, 30.0)
    a.acquire()
    rec = json.loads((tmp_path / LEASE).read_text())
    assert rec["owner"] == a.owner and rec["timeout"] == 30.0
    with pytest.raises(LeaseError, match=r"in use by operator .* last heartbeat .* stale after "
                                         r"30 s; one operator per checkpoint_dir"):
        b.acquire()
    a.check()
    a.release()
    assert not (tmp_path / LEASE).exists()
    b.acquire()
    with pytest.raises(LeaseError, match="holds no lease"):
        a.check()
    b.release()


def test_stale_lease_is_taken_over_and_the_old_owner_is_fenced(tmp_path):
    st = LocalStore(tmp_path)
    clock = Clock()
    old = Lease(st, 10.0, clock=clock)
    old.acquire()
    old._stop.set()                         # a driver that died: no more heartbeats
    new = Lease(st, 10.0, clock=clock)
    clock.t += 5
    with pytest.raises(LeaseError):
        new.acquire()                        # 5 s < 10 s: still live
    clock.t += 6
    new.acquire()                            # 11 s: stale, taken over
    assert json.loads((tmp_path / LEASE).read_text())["owner"] == new.owner
    with pytest.raises(LeaseError, match="taken over"):
        old.check()                          # the paused old owner must not commit
    old.heartbeat()                          # and its heartbeat does not steal it back
    assert json.loads((tmp_path / LEASE).read_text())["owner"] == new.owner
    assert [p.name for p in tmp_path.iterdir()] == [LEASE]
    new.release()


def test_heartbeat_keeps_the_lease_fresh(tmp_path):
    st = LocalStore(tmp_path)
    lease = Lease(st, 0.3)
    lease.acquire()
    first = json.loads((tmp_path / LEASE).read_text())["heartbeat"]
    threading.Event().wait(0.5)
    assert json.loads((tmp_path / LEASE).read_text())["heartbeat"] > first
    with pytest.raises(LeaseError):
        Lease(st, 0.3).acquire()
    lease.release()


def test_only_one_of_many_concurrent_starters_wins(tmp_path):
    st = LocalStore(tmp_path)
    leases = [Lease(st, 30.0) for _ in range(8)]
    won, errors = [], []

    def go(lease):
        try:
            lease.acquire()
            won.append(lease)
        except LeaseError as e:
            errors.append(e)

    threads = [threading.Thread(target=go, args=(x,)) for x in leases]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1 and len(errors) == 7
    won[0].release()


def test_garbage_lease_is_an_error_not_taken_over(tmp_path):
    (tmp_path / LEASE).write_text("{oops")
    with pytest.raises(LeaseError, match=r"lease\.json: not a valid lease file"):
        Lease(LocalStore(tmp_path)).acquire()


def test_lease_timeout_is_validated(tmp_path):
    with pytest.raises(ValueError, match=r"lease_timeout=0; expected seconds > 0"):
        Lease(LocalStore(tmp_path), 0)


# ----------------------------------------------------------------------------- store
def test_local_store_exclusive_create_rename_and_sizes(tmp_path):
    st = LocalStore(tmp_path)
    assert st.create_exclusive("x", b"one") and not st.create_exclusive("x", b"two")
    assert st.read_bytes("x") == b"one"
    assert st.rename("x", "y") and not st.rename("x", "z")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "part-00000").write_bytes(b"12345")
    (tmp_path / "d" / "_SUCCESS").write_bytes(b"")
    (tmp_path / "d" / ".part-00000.crc").write_bytes(b"c")
    assert st.sizes("d") == {"part-00000": 5} and st.sizes("nope") == {}
    assert sorted(st.list()) == ["d", "y"]


def test_error_cause_finds_the_python_error_in_a_task_trace():
    trace = ("Job aborted due to stage failure\nTraceback (most recent call last):\n"
             '  File "x.py", line 1\nValueError: /ck/state-x/part-00001: checksum abc\n'
             "\tat org.apache.spark.Foo.bar(Foo.scala:1)")
    assert error_cause(RuntimeError(trace)) == "ValueError: /ck/state-x/part-00001: checksum abc"
    assert error_cause(PermissionError(13, "Permission denied")).startswith("PermissionError")


# ----------------------------------------------------------------------------- checkpoint files
def test_files_of_a_later_save_without_manifest_are_refused(tmp_path):
    ck.check_unmanaged(tmp_path)                       # empty: fine
    (tmp_path / f"state-{ck.new_token(0)}").mkdir()    # the empty first commit: fine
    (tmp_path / "notes.txt").write_text("mine")        # foreign files are not ours
    ck.check_unmanaged(tmp_path)
    name = f"layout-{ck.new_token(7)}.pkl"
    (tmp_path / name).write_bytes(b"x")
    with pytest.raises(ck.CheckpointError, match=rf"holds checkpoint files \({name}\) but no "
                                                 r"manifest\.json; refusing"):
        ck.check_unmanaged(tmp_path)


def test_clean_stale_spares_the_commit_and_the_resumed_files(tmp_path):
    tok = [ck.new_token(i) for i in range(4)]
    for t in tok:
        (tmp_path / f"state-{t}").mkdir()
        (tmp_path / f"layout-{t}.pkl").write_bytes(b"x")
    (tmp_path / f"outputs-{tok[3]}").mkdir()
    (tmp_path / LEASE).write_text("{}")
    (tmp_path / "other").write_text("keep")
    m = ck.Manifest(seq=3, last_batch_id=2, num_partitions=2, num_physical=2, planner="mixed",
                    window=None, layout_kind="table", layout_version=1,
                    layout_file=f"layout-{tok[3]}.pkl", layout_sha256="0" * 64,
                    state_dir=f"state-{tok[3]}", num_keys=0, state_bytes=0.0, num_groups=4,
                    outputs_dir=f"outputs-{tok[3]}", outputs_seq=2)
    ck.clean_stale(tmp_path, m, keep=[f"state-{tok[1]}"])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [LEASE, "other", f"state-{tok[1]}", f"state-{tok[3]}", f"layout-{tok[3]}.pkl",
         f"outputs-{tok[3]}"])


def test_check_files_names_a_truncated_or_missing_part(tmp_path):
    d = tmp_path / "state-x"
    d.mkdir()
    (d / part_name(0)).write_bytes(b"abcdef")
    table = {part_name(0): [6, "d", 1], part_name(1): [3, "d", 1]}
    with pytest.raises(ValueError, match=r"state-x/part-00001: missing"):
        check_files(LocalStore(tmp_path), "state-x", table)
    (d / part_name(1)).write_bytes(b"ab")
    with pytest.raises(ValueError, match=r"state-x/part-00001: 2 bytes; the manifest records 3 "
                                         r"\(the file is truncated"):
        check_files(LocalStore(tmp_path), "state-x", table)


def test_frames_digest_is_order_free_and_byte_exact():
    a = [b"S\x00\x01", b"S\x00\x02", b""]
    assert frames_digest(a) == frames_digest(a[::-1])
    assert frames_digest(a)[1] == 3
    assert frames_digest(a) != frames_digest([b"S\x00\x01", b"S\x00\x03", b""])
    assert frames_digest(a) != frames_digest(a + [b""])


# ----------------------------------------------------------------------------- rollback, replay
def test_snapshot_restores_fields_lists_in_place_and_releases_new_rdds():
    class FakeRDD:
        _jrdd = None

        def __init__(self):
            self.released = False

        def unpersist(self):
            self.released = True

    class Cache:
        def __init__(self, held):
            self._held, self._pinned = list(held), None

    class Op:
        pass

    old, new = FakeRDD(), FakeRDD()
    op = Op()
    ledger = Ledger()
    ledger.history.append("b0")
    op.seq, op.history, op._cache = 1, ledger.history, Cache([old])
    hist = op.history
    snap = Snapshot.take(op.seq, ledger.mark(), cache=op._cache)
    op.seq = 2
    op.history.append("b1")
    op._cache._held.append(new)
    op._cache._pinned = new
    op.seq = snap.position
    ledger.restore(snap.records)
    op._cache = snap.restore_cache(op._cache)
    assert op.seq == 1 and op.history == ["b0"] and op.history is hist
    assert op._cache._held == [old] and op._cache._pinned is None
    assert new.released and not old.released


def test_replay_policy():
    assert check_on_replay("skip") == "skip"
    with pytest.raises(ValueError, match="on_replay='again'; expected one of skip, error"):
        check_on_replay("again")
    assert replayed(4, 4, "skip", lambda: "out4") == "out4"
    assert replayed(1, 4, "skip", lambda: "out4") is None
    with pytest.raises(ReplayError, match="batch_id=4 was applied already"):
        replayed(4, 4, "error", lambda: "out4")


# ----------------------------------------------------------------------------- cache loans
class _FakeRDD:
    def __init__(self):
        self.cached = True

    def unpersist(self):
        self.cached = False


class _FakeSC:
    def __init__(self, checkpoint_dir=None):
        self.dir = checkpoint_dir

    def getCheckpointDir(self):
        return self.dir


def test_a_truncation_keeps_lent_local_checkpoints_until_the_last_borrower_goes():
    import gc

    from sparkbalance.state.frames.caching import BatchCache

    class Outputs:
        pass

    cache = BatchCache(_FakeSC(), None)
    anchor, carried = _FakeRDD(), _FakeRDD()
    cache.pin(anchor)
    cache.keep_until_truncation(carried)
    a, b = cache.lend(Outputs()), cache.lend(Outputs())
    cache.begin(_FakeRDD(), truncated=True)        # the next truncation releases both
    cache.end()
    assert anchor.cached and carried.cached         # two outputs RDDs still read them
    del a
    gc.collect()
    assert anchor.cached and carried.cached
    del b
    gc.collect()
    assert not anchor.cached and not carried.cached
    # a reliable checkpoint directory: nothing is lent, the truncation releases at once
    cache = BatchCache(_FakeSC("/ck"), None)
    anchor = _FakeRDD()
    cache.pin(anchor)
    keep = cache.lend(Outputs())
    cache.begin(_FakeRDD(), truncated=True)
    cache.end()
    assert not anchor.cached and keep is not None


# ----------------------------------------------------------------------------- outputs file
def test_outputs_on_the_driver_are_written_as_one_checked_file(tmp_path):
    """Outputs frames the merge job brought back are committed from the driver (one
    pickle, no job) and read back checked: a changed byte is named, never replayed."""
    from sparkbalance.state.durability import checkpoint as cp
    from sparkbalance.state.frames import format as fr
    st = LocalStore(tmp_path)
    frames = [fr.data_frame(fr.TAG_OUTPUTS, [("a", 1)]), fr.data_frame(fr.TAG_OUTPUTS, [])]
    tok = ck.new_token(3)
    out = cp._outputs_fields(st, tok, cp.BatchOutputs(2, 7, collected=frames), None)
    assert out["outputs_dir"] == f"outputs-{tok}.pkl" and out["outputs_batch_id"] == 7
    entry = out["outputs_files"][cp.OUTPUTS_PICKLE]
    assert entry[0] == (tmp_path / out["outputs_dir"]).stat().st_size and entry[2] == 2
    assert cp._read_collected(st, out["outputs_dir"], entry) == frames
    # committed already: the next manifest names the same file, nothing is rewritten
    man = ck.Manifest(seq=3, last_batch_id=7, num_partitions=2, num_physical=2,
                      planner="mixed", window=None, layout_kind="table", layout_version=0,
                      layout_file="l", layout_sha256="s", state_dir="d", num_keys=1,
                      state_bytes=1.0, num_groups=4, **out)
    assert cp._outputs_fields(st, ck.new_token(4), cp.BatchOutputs(2, 7), man) == out
    assert man.files >= {out["outputs_dir"]}
    data = bytearray((tmp_path / out["outputs_dir"]).read_bytes())
    data[-3] ^= 0xFF
    (tmp_path / out["outputs_dir"]).write_bytes(bytes(data))
    with pytest.raises(ck.CheckpointError, match=r"outputs-.*\.pkl: .*\(the outputs file "
                                                 r"is corrupt\)"):
        cp._read_collected(st, out["outputs_dir"], entry)
