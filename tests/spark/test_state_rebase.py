"""A committed state is based on its checkpoint files: lineage of one batch, whatever came before.

With a ``checkpoint_dir`` (and the bridge jar), every commit rebases the state on the part
files it just wrote: partition ``i`` reads the cached block while it exists, else part
file ``i`` (``StateFiles.rebase``). A lost block then costs one file, not a recomputation
of every batch since the last lineage cut (measured before: about 22 batches after a lost
executor with ``truncate_every=100``). The files a state or an outputs RDD handed out may
read stay until nothing references them.
"""
from __future__ import annotations

import gc
import operator

import pytest

from sparkbalance.state.frames.rdds import frame_ops
from sparkbalance.state.durability.manifest import read_manifest
from sparkbalance.state.operator import KeyedStateOperator
from sparkbalance.bench.shifting import batch_records, shifting_zipf_counts
from sparkbalance.state.durability.store import store_for

N_PARTS = 3


@pytest.fixture(autouse=True)
def _needs_bridge(sc):
    if not frame_ops(sc).jvm:
        pytest.skip("the bridge jar is not on spark.jars")


def _stream(n, seed=11):
    return [batch_records(k, c, seed=t) for t, (k, c) in enumerate(
        shifting_zipf_counts(120, N_PARTS, n, z=1.1, records_per_batch=360, f=2.0,
                             seed=seed))]


def _lines(op) -> int:
    return len(op._state.rdd._jrdd.rdd().toDebugString().splitlines())


@pytest.fixture
def drop_blocks(sc):
    """``drop()`` unpersists every RDD cached since the test began: what a lost executor
    does to its blocks (RDDs of other tests' fixtures are left alone)."""
    before = set(sc._jsc.getPersistentRDDs().keys())

    def drop() -> None:
        for rid, rdd in dict(sc._jsc.getPersistentRDDs()).items():
            if rid not in before:
                rdd.unpersist(True)
    return drop


def _state_dirs(d) -> set[str]:
    return {p.name for p in d.iterdir() if p.name.startswith("state-")}


def test_lineage_stays_one_batch_and_survives_losing_every_block(sc, tmp_path, drop_blocks):
    # truncate_every=100: no truncation would cut the chain in these batches (and none
    # is made: the commits rebase the state)
    batches = _stream(10)
    op = KeyedStateOperator(sc, N_PARTS, update=operator.add, initial=0, planner="mixed",
                            theta=0.02, trigger="paper", truncate_every=100,
                            checkpoint_dir=tmp_path)
    ref: dict = {}
    refs, outs, lines = [], [], []
    for t, b in enumerate(batches):
        for k, v in b:
            ref[k] = ref.get(k, 0) + v
        refs.append({k: ref[k] for k, _ in b})
        outs.append(op.process(sc.parallelize(b, 2), batch_id=t))
        lines.append(_lines(op))
    assert sum(h.rebalanced for h in op.history) >= len(batches) // 2
    # the state's lineage is the read of the last commit's files, every batch
    assert max(lines) <= 6, lines
    man = read_manifest(store_for(sc, tmp_path))
    assert op._base_dir == man.state_dir
    drop_blocks()
    # every cached block gone: the state comes back from the last commit's files, the
    # outputs of an early and of the last batch from their batch and the files before
    assert op.collect_state() == ref
    for t in (2, len(batches) - 1):
        assert dict(outs[t].collect()) == refs[t]
    # more batches after the loss stay exact
    for k, v in batches[0]:
        ref[k] = ref.get(k, 0) + v
    op.process(sc.parallelize(batches[0], 2), batch_id=len(batches))
    assert op.collect_state() == ref
    op.close()


def test_files_stay_while_an_outputs_rdd_may_read_them(sc, tmp_path, drop_blocks):
    batches = _stream(6)
    op = KeyedStateOperator(sc, N_PARTS, update=operator.add, initial=0, planner="mixed",
                            theta=0.02, trigger="paper", checkpoint_dir=tmp_path)
    kept = op.process(sc.parallelize(batches[0], 2), batch_id=0)
    want = dict(kept.collect())
    read_by_kept = op._files.names()
    assert len(read_by_kept) == 1
    for t in range(1, len(batches)):
        op.process(sc.parallelize(batches[t], 2), batch_id=t)
    gc.collect()
    dirs = _state_dirs(tmp_path)
    assert set(read_by_kept) <= dirs            # batch 0's outputs may still read it
    drop_blocks()
    assert dict(kept.collect()) == want
    del kept
    gc.collect()
    op.process(sc.parallelize(batches[0], 2), batch_id=len(batches))
    dirs = _state_dirs(tmp_path)
    assert not set(read_by_kept) & dirs, dirs   # released: removed by the next commit
    man = read_manifest(store_for(sc, tmp_path))
    # the commit's files, and those of the previous one that the last outputs may read
    assert len(dirs) <= 2 and man.state_dir in dirs, dirs
    op.close()


def test_a_changed_state_file_is_refused_when_read_back(sc, tmp_path, drop_blocks):
    batches = _stream(3)
    op = KeyedStateOperator(sc, N_PARTS, update=operator.add, initial=0, planner="mixed",
                            checkpoint_dir=tmp_path)
    for t, b in enumerate(batches):
        op.process(sc.parallelize(b, 2), batch_id=t)
    man = read_manifest(store_for(sc, tmp_path))
    part = tmp_path / man.state_dir / "part-00001"
    data = bytearray(part.read_bytes())
    data[-3] ^= 0xFF
    part.write_bytes(bytes(data))
    (tmp_path / man.state_dir / ".part-00001.crc").unlink(missing_ok=True)
    drop_blocks()
    with pytest.raises(Exception, match="corrupt|checksum|part-00001"):
        op.collect_state()
    op.close()


def test_cached_blocks_read_back_from_disk_are_the_state(sc, tmp_path):
    """The rebased state reads cached blocks that are deserialised on the way (on disk
    here; on another executor, where the class tag they were stored with decides the
    serializer, in ``integration/test_state_cluster.py``)."""
    from pyspark import StorageLevel

    batches = _stream(4)
    op = KeyedStateOperator(sc, N_PARTS, update=operator.add, initial=0, planner="mixed",
                            theta=0.02, trigger="paper", checkpoint_dir=tmp_path)
    op._level = op._cache.level = StorageLevel.DISK_ONLY
    ref: dict = {}
    for t, b in enumerate(batches):
        for k, v in b:
            ref[k] = ref.get(k, 0) + v
        op.process(sc.parallelize(b, 2), batch_id=t)
    assert op._state.anchor.getStorageLevel() == StorageLevel.DISK_ONLY
    assert op.collect_state() == ref
    op.close()
