"""Durable checkpoints of the keyed state: resume, corruption, exactly-once streaming."""
from __future__ import annotations

import json
import operator
from pathlib import Path

import pytest

from sparkbalance.state.durability.manifest import MANIFEST, CheckpointError
from sparkbalance.state.operator import KeyedStateOperator
from sparkbalance.bench.shifting import batch_records, shifting_zipf_counts


def _stream(n, seed=11):
    return [batch_records(k, c, seed=t) for t, (k, c) in enumerate(
        shifting_zipf_counts(40, 3, n, z=1.1, records_per_batch=160, f=2.0, seed=seed))]


def _op(sc, d, planner="mixed", **kw):
    return KeyedStateOperator(sc, 3, update=operator.add, initial=0, planner=planner,
                              theta=0.1, checkpoint_dir=d, **kw, trigger="paper")


@pytest.mark.parametrize("planner,hadoop", [("mixed", False), ("ssm", False), ("ssm", True)])
def test_restart_mid_stream_gives_the_same_final_state(sc, tmp_path, planner, hadoop):
    """hadoop: the checkpoint directory as a URI, through Hadoop's FileSystem (the path
    HDFS and S3 take; file:// is the one that runs here)."""
    d = f"file://{tmp_path}/ck" if hadoop else tmp_path
    batches = _stream(10)
    ref: dict = {}
    for b in batches:
        for k, v in b:
            ref[k] = ref.get(k, 0) + v
    first = _op(sc, d, planner)
    for t, b in enumerate(batches[:5]):
        first.process(sc.parallelize(b, 2), batch_id=t)
    layout, version = first.layout, first.version
    assert sum(h.rebalanced for h in first.history) >= 1   # a moved layout is checkpointed
    first.close()
    if hadoop:
        assert (tmp_path / "ck" / MANIFEST).exists()
    second = _op(sc, d, planner)                              # a new operator resumes
    assert second.layout == layout and second.version == version
    assert second.last_batch_id == 4
    for t, b in enumerate(batches[5:], start=5):
        second.process(sc.parallelize(b, 2), batch_id=t)
    assert second.collect_state() == ref
    second.close()


def _committed(sc, tmp_path):
    op = _op(sc, tmp_path)
    for t, b in enumerate(_stream(2)):
        op.process(sc.parallelize(b, 2), batch_id=t)
    op.close()
    return json.loads((tmp_path / MANIFEST).read_text())


def test_corrupt_manifest_names_the_file(sc, tmp_path):
    _committed(sc, tmp_path)
    (tmp_path / MANIFEST).write_text("{truncated")
    with pytest.raises(CheckpointError, match=r"manifest\.json: not a valid checkpoint"):
        _op(sc, tmp_path)


def test_corrupt_state_files_are_an_error_not_an_empty_state(sc, tmp_path):
    man = _committed(sc, tmp_path)
    state = tmp_path / man["state_dir"]
    parts = sorted(p for p in state.iterdir() if p.name.startswith("part-"))
    parts[0].write_bytes(b"not a sequence file")
    with pytest.raises(CheckpointError, match=man["state_dir"]):
        _op(sc, tmp_path)


def test_missing_state_and_tampered_layout_and_mismatch(sc, tmp_path):
    man = _committed(sc, tmp_path)
    with pytest.raises(CheckpointError, match="planner='mixed'; this operator has planner='ssm'"):
        _op(sc, tmp_path, planner="ssm")
    with pytest.raises(CheckpointError, match="num_partitions=3"):
        KeyedStateOperator(sc, 4, update=operator.add, initial=0, planner="mixed",
                           checkpoint_dir=tmp_path)
    layout = tmp_path / man["layout_file"]
    layout.write_bytes(layout.read_bytes() + b"x")
    with pytest.raises(CheckpointError, match="checksum"):
        _op(sc, tmp_path)
    (tmp_path / man["state_dir"] / "_SUCCESS").unlink()
    with pytest.raises(CheckpointError, match="_SUCCESS"):
        _op(sc, tmp_path)


def test_foreach_batch_under_writestream_is_exactly_once_across_restart(spark, tmp_path):
    """File source + availableNow; a crash between our commit and Spark's is replayed by
    Spark and skipped by the operator."""
    src, qck, sck = tmp_path / "in", tmp_path / "query", tmp_path / "state"
    src.mkdir()
    files = [[{"key": f"k{(i * 7 + j) % 9}", "value": 1 + (j % 3)} for j in range(30)]
             for i in range(5)]
    ref: dict = {}
    for rows in files:
        for r in rows:
            ref[r["key"]] = ref.get(r["key"], 0) + r["value"]

    def write(i):
        (src / f"f{i}.json").write_text("\n".join(json.dumps(r) for r in files[i]))

    def run(op):
        q = (spark.readStream.schema("key STRING, value LONG").option("maxFilesPerTrigger", 1)
             .json(str(src)).writeStream.foreachBatch(op.foreach_batch)
             .option("checkpointLocation", str(qck)).trigger(availableNow=True).start())
        q.awaitTermination(300)
        assert q.exception() is None

    for i in range(3):
        write(i)
    op = KeyedStateOperator(spark, 2, update=operator.add, initial=0, planner="mixed",
                            checkpoint_dir=sck)
    run(op)
    assert op.last_batch_id == 2
    op.close()
    # crash simulation: Spark did not record the commit of batch 2, our checkpoint did
    for f in ("2", ".2.crc"):
        (qck / "commits" / f).unlink(missing_ok=True)
    for i in range(3, 5):
        write(i)
    op2 = KeyedStateOperator(spark, 2, update=operator.add, initial=0, planner="mixed",
                             checkpoint_dir=sck)
    run(op2)
    assert op2.last_batch_id == 4
    assert op2.collect_state() == ref
    applied = [h.batch_id for h in op2.history]
    assert applied == [3, 4]        # batch 2 was replayed by Spark and skipped
    op2.close()


@pytest.mark.parametrize("scheme", ["file", "s3a"])
def test_hadoop_store_commits_atomically_and_reports_missing_files(sc, tmp_path, scheme):
    """The Hadoop store over file://; "s3a" takes the object-store branch (one create with
    overwrite instead of a rename) on the same local file system."""
    from sparkbalance.state.durability import manifest as ck
    from sparkbalance.state.durability.store import HadoopStore
    st = HadoopStore(sc, f"file://{tmp_path}/h")
    st.scheme = scheme
    st.mkdirs()
    st.write_atomic("a.bin", b"\x00one")
    st.write_atomic("a.bin", b"two")                 # replaces
    assert st.read_bytes("a.bin") == b"two" and st.exists("a.bin")
    assert st.list() == ["a.bin"]                     # no temp file left behind
    with pytest.raises(OSError, match="FileNotFound|does not exist"):
        st.read_bytes("missing.bin")
    st.remove("a.bin")
    assert not st.exists("a.bin") and ck.read_manifest(st) is None


def _reference(batches):
    """Plain Python: the state after the last batch and each batch's outputs."""
    ref: dict = {}
    outs = []
    for b in batches:
        for k, v in b:
            ref[k] = ref.get(k, 0) + v
        outs.append({k: ref[k] for k, _ in b})
    return ref, outs


@pytest.mark.parametrize("planner", ["mixed", "ssm"])
def test_a_pending_migration_is_saved_unmoved_and_moved_by_the_resume(sc, tmp_path, planner):
    """Decide a migration, checkpoint, crash, resume: the resumed operator moves it in its
    first batch's shuffle, and state and outputs stay those of plain Python."""
    from sparkbalance.state.durability import manifest as mf
    batches = _stream(12)
    ref, outs = _reference(batches)
    first = _op(sc, tmp_path, planner)
    t = 0
    while not first.pending_migration:
        assert t < 8, "no batch decided a migration"
        assert dict(first.process(sc.parallelize(batches[t], 2), batch_id=t).collect()) \
            == outs[t]
        t += 1
    man = mf.read_manifest(tmp_path)
    assert man.format == mf.FORMAT >= 4 and man.pending_file is not None
    assert man.layout_version < first.version          # saved unmoved, under the old layout
    assert man.pending_seq == t - 1
    layout, moved_before = first.layout, len(first.migrations)
    first._lease.release()                              # a crash: nothing else is closed
    second = _op(sc, tmp_path, planner)
    assert second.pending_migration and second.layout == layout
    for s, b in enumerate(batches[t:], start=t):
        assert dict(second.process(sc.parallelize(b, 2), batch_id=s).collect()) == outs[s]
        if s == t:                                      # moved by the first batch's shuffle
            assert second.migrations and second.migrations[0].seq == t - 1
    assert second.collect_state() == ref
    assert moved_before == len(first.migrations)        # the crashed one never moved it
    second.close()
    first._cache.close(first._state.rdd)


def _jobs_per_batch(sc, op, batches):
    from sparkbalance.spark.session.jobs import sparkbalance_job_group
    tracker = sc.statusTracker()
    jobs, decided = [], []
    for t, b in enumerate(batches):
        outer = f"count-{id(op)}-{t}"
        inner = f"sparkbalance-state-{id(op)}-{t}"
        # groups are named by id(op), which a later operator may reuse once this one is
        # collected: count only the jobs this batch adds
        before = set(tracker.getJobIdsForGroup(outer)) | set(tracker.getJobIdsForGroup(inner))
        with sparkbalance_job_group(sc, outer):
            op.process(sc.parallelize(b, 2), batch_id=t)
        after = set(tracker.getJobIdsForGroup(outer)) | set(tracker.getJobIdsForGroup(inner))
        jobs.append(len(after - before))
        decided.append(op.pending_migration)
    op.close()
    return jobs, decided


def test_a_deciding_batch_with_checkpoint_every_1_runs_no_extra_job(sc, tmp_path):
    """A save commits a decided migration unmoved: with ``checkpoint_every=1`` a batch
    that decides (and one that carries) a migration runs as many jobs, its save's
    included, as the same batch of an operator that never migrates."""
    batches = _stream(6)
    jobs, decided = _jobs_per_batch(sc, _op(sc, tmp_path / "a", truncate_every=100), batches)
    quiet, never = _jobs_per_batch(sc, _op(sc, tmp_path / "b", "none", truncate_every=100),
                                   batches)
    assert any(decided) and not any(never), (decided, never)
    assert jobs == quiet, list(zip(decided, jobs, quiet))


def test_a_committing_batch_writes_its_state_files_in_its_merge_job(sc, tmp_path,
                                                                    monkeypatch):
    """With ``checkpoint_every=1`` the merge job writes the commit's state files (the
    commit writes none: one job a batch fewer) and the resumed state is exact; a failed
    write in the merge job falls back to the commit's own write."""
    from sparkbalance.state import merge_job
    from sparkbalance.state.durability import checkpoint as ck
    batches = _stream(4)
    ref: dict = {}
    for b in batches:
        for k, v in b:
            ref[k] = ref.get(k, 0) + v
    op = _op(sc, tmp_path)
    written, orig = [], ck._write_state
    monkeypatch.setattr(ck, "_write_state", lambda *a: written.append(a[1]) or orig(*a))
    for t, b in enumerate(batches[:3]):
        op.process(sc.parallelize(b, 2), batch_id=t)
    assert written == []
    # the merge job's write fails: the batch still commits, through the commit's write
    monkeypatch.setattr(merge_job, "write_selected",
                        lambda *a, **k: (_ for _ in ()).throw(OSError("no room")))
    op.process(sc.parallelize(batches[3], 2), batch_id=3)
    assert len(written) == 1 and op.collect_state() == ref
    op.close()
    again = _op(sc, tmp_path)
    assert again.collect_state() == ref and again.last_batch_id == 3
    again.close()


def test_an_unchanged_layout_is_named_again_and_only_the_manifest_is_synced(
        sc, tmp_path, monkeypatch):
    """A commit whose layout is the last commit's names that layout file again (no new
    copy); of a batch's small files only the manifest is synced (the files it names are
    checked by digest when read back); the resume reads the shared file."""
    import os
    from sparkbalance.state.durability import store as st
    synced = []
    real = os.fsync
    monkeypatch.setattr(st.os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    batches = _stream(4)
    op = _op(sc, tmp_path, "none")
    files = set()
    for t, b in enumerate(batches[:3]):
        n = len(synced)
        op.process(sc.parallelize(b, 2), batch_id=t)
        assert len(synced) - n == 1                      # the manifest alone
        files.add(json.loads((tmp_path / MANIFEST).read_text())["layout_file"])
    assert len(files) == 1 and (tmp_path / files.pop()).exists()
    assert len([p for p in tmp_path.iterdir() if p.name.startswith("layout-")]) == 1
    op.close()
    again = _op(sc, tmp_path, "none")
    again.process(sc.parallelize(batches[3], 2), batch_id=3)
    ref: dict = {}
    for b in batches:
        for k, v in b:
            ref[k] = ref.get(k, 0) + v
    assert again.collect_state() == ref
    again.close()
