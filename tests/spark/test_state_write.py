"""The state frames a batch commits, written in the JVM (bridge ``StateWrite``): the same
digests, counts and frames brought back as the Python writer's, read back by both readers."""
from __future__ import annotations

import pytest

from sparkbalance.state.durability import state_files as sf
from sparkbalance.state.durability.store import store_for
from sparkbalance.state.frames import format as fr
from sparkbalance.state.frames.rdds import built_rdd, frame_ops


@pytest.fixture(autouse=True)
def _needs_writer(sc):
    if not frame_ops(sc).writes:
        pytest.skip("the bridge jar has no StateWrite")


def _frames(sc, parts=3):
    """A frames RDD over a Java RDD (as a merged batch is): per partition state frames of
    several sizes (one of 300 kB, over the 10-frame batches), statistics and outputs
    frames, and one partition without state frames."""
    per = []
    for pid in range(parts):
        fs = [] if pid == 1 else [fr.data_frame(fr.TAG_STATE, {"k": i, "pid": pid}, group=i,
                                                 nkeys=1, nbytes=8.0) for i in range(23)]
        if pid == 2:
            fs.append(fr.data_frame(fr.TAG_STATE, b"x" * 300_000, group=99))
        fs += [fr.data_frame(fr.TAG_STATS, (pid, None, [], [], 0, 0.0)),
               fr.data_frame(fr.TAG_OUTPUTS, [("k", pid)])]
        per.append(fs)
    py = sc.parallelize(range(parts), parts).flatMap(lambda p: per[p])
    from pyspark.serializers import NoOpSerializer
    jrdd = py._reserialize(NoOpSerializer())._jrdd
    return built_rdd(jrdd, sc), per


def test_jvm_writer_matches_the_python_writer(sc, tmp_path, monkeypatch):
    rdd, per = _frames(sc)
    store = store_for(sc, str(tmp_path))
    store.mkdirs()
    keep = (fr.TAG_STATS, fr.TAG_OUTPUTS)
    jvm_table, jvm_back = sf.write_selected(store, "state-jvm", rdd, fr.TAG_STATE, keep, 3)
    ops = frame_ops(sc)
    monkeypatch.setattr(ops, "writes", False)
    py_table, py_back = sf.write_selected(store, "state-py", rdd, fr.TAG_STATE, keep, 3)
    # the same frames written and brought back (the files' bytes differ: pickle opcodes)
    assert {p: v[1:] for p, v in jvm_table.items()} == {p: v[1:] for p, v in py_table.items()}
    assert jvm_back == py_back == [[f for f in fs if f[0] in keep] for fs in per]
    monkeypatch.setattr(ops, "writes", True)
    want = [[f for f in fs if f[0] == fr.TAG_STATE] for fs in per]
    for name, table in (("state-jvm", jvm_table), ("state-py", py_table)):
        shuffled = sf.read_frames(sc, store, name, table, 3).glom().collect()
        narrow = sf.read_parts(sc, store, name, table, 3).glom().collect()
        assert sorted(map(sorted, shuffled)) == sorted(map(sorted, want))
        assert narrow == want                      # partition i from part file i, in order


def test_a_changed_byte_of_a_jvm_written_file_is_named(sc, tmp_path):
    rdd, _ = _frames(sc)
    store = store_for(sc, str(tmp_path))
    store.mkdirs()
    table, _ = sf.write_selected(store, "state-jvm", rdd, fr.TAG_STATE, (fr.TAG_STATS,), 3)
    part = tmp_path / "state-jvm" / "part-00002"
    data = bytearray(part.read_bytes())
    data[-200] ^= 0xFF
    part.write_bytes(bytes(data))
    with pytest.raises(Exception, match="part-00002"):
        sf.read_parts(sc, store, "state-jvm", table, 3).collect()
