"""Keyed-state defects found by a hostile probe: NaN-like keys are refused before any
state changes (on ``process``, ``foreach_batch`` and a DataFrame batch), a replay of batch
``b`` returns ``b``'s outputs or None whatever came between (also over a restart), and a
corrupt outputs file is named as the outputs file."""
from __future__ import annotations

import operator
from decimal import Decimal

import numpy as np
import pytest

from sparkbalance.state.durability.manifest import read_manifest
from sparkbalance.state.operator import KeyedStateOperator

NAN = float("nan")
GOOD = [("a", 1), ("b", 2), ("a", 3)]

#: (key, where the NaN is): every NaN-like key the keyed state must refuse
NAN_KEYS = [
    (NAN, "key"), (np.float64("nan"), "key"), (np.float32("nan"), "key"),
    (np.float16("nan"), "key"), (Decimal("NaN"), "key"), (Decimal("sNaN"), "key"),
    ((1, NAN), r"key\[1\]"), (("x", (2, Decimal("NaN"))), r"key\[1\]\[1\]"),
    ((np.float32("nan"), "y"), r"key\[0\]"),
]


def _op(sc, **kw):
    return KeyedStateOperator(sc, 2, update=operator.add, initial=0, planner="none", **kw)


def test_nan_like_keys_are_refused_by_process_and_foreach_batch(sc):
    op = _op(sc)
    op.process(sc.parallelize(GOOD, 2), batch_id=0).collect()
    before = op.collect_state()
    for key, at in NAN_KEYS:
        batch = sc.parallelize(GOOD + [(key, 5)] + GOOD, 2)
        for call in (lambda: op.process(batch, batch_id=1),
                     lambda: op.foreach_batch(batch, 1), lambda: op.process(batch)):
            with pytest.raises(Exception, match=rf"batch record .* has a NaN key \(a NaN at "
                                                rf"{at}\); the keyed state needs keys equal"):
                call()
        assert op.collect_state() == before, key        # intact: nothing applied
        assert op.last_batch_id == 0 and len(op.history) == 1
    assert sorted(op.process(sc.parallelize(GOOD, 2), batch_id=1).collect()) == [
        ("a", 8), ("b", 4)]                                # the stream goes on
    op.close()


def test_nan_keys_of_a_dataframe_batch_are_refused(spark, sc):
    from pyspark.sql import types as T
    op = _op(spark)
    op.process(spark.createDataFrame(GOOD, ["key", "value"]), batch_id=0)
    before = op.collect_state()
    floats = spark.createDataFrame([(1.0, 1), (NAN, 2)], T.StructType([
        T.StructField("key", T.FloatType()), T.StructField("value", T.LongType())]))
    structs = spark.createDataFrame([((1, 2.0), 1), ((1, NAN), 2)], T.StructType([
        T.StructField("key", T.StructType([T.StructField("i", T.LongType()),
                                           T.StructField("x", T.DoubleType())])),
        T.StructField("value", T.LongType())]))
    for df, at in ((floats, "key"), (structs, r"key\[1\]")):
        with pytest.raises(Exception, match=rf"has a NaN key \(a NaN at {at}\)"):
            op.foreach_batch(df, 1)
        assert op.collect_state() == before and op.last_batch_id == 0
    op.close()


def test_a_replay_returns_its_own_batch_outputs_never_an_id_less_call_s(sc, tmp_path):
    b, c = [("a", 1), ("b", 1)], [("c", 7)]
    for ck in (None, tmp_path / "ck"):
        op = _op(sc, checkpoint_dir=ck)
        assert sorted(op.process(sc.parallelize(b, 2), batch_id=20).collect()) == [
            ("a", 1), ("b", 1)]
        assert sorted(op.process(sc.parallelize(c, 2)).collect()) == [("c", 7)]
        assert sorted(op.last_outputs().collect()) == [("c", 7)]     # the last batch's
        again = op.process(sc.parallelize(b, 2), batch_id=20)         # a replay of 20
        assert sorted(again.collect()) == [("a", 1), ("b", 1)]
        assert op.process(sc.parallelize(b, 2), batch_id=19) is None  # older: none
        assert op.collect_state() == {"a": 1, "b": 1, "c": 7}        # applied once
        if ck is None:
            op.close()
            continue
        op._lease.release()                              # a crash: nothing else is closed
        resumed = _op(sc, checkpoint_dir=ck)
        assert sorted(resumed.process(sc.parallelize(b, 2), batch_id=20).collect()) == [
            ("a", 1), ("b", 1)]                          # read back from the checkpoint
        resumed.process(sc.parallelize(c, 2))            # id-less after the restart
        assert sorted(resumed.process(sc.parallelize(b, 2), batch_id=20).collect()) == [
            ("a", 1), ("b", 1)]
        assert resumed.collect_state() == {"a": 1, "b": 1, "c": 14}
        resumed.close()
        op._cache.close(op._state.rdd)


def test_a_corrupt_outputs_file_is_named_as_the_outputs_file(sc, tmp_path):
    op = _op(sc, checkpoint_dir=tmp_path)
    op.process(sc.parallelize(GOOD, 2), batch_id=0).collect()
    op._lease.release()                                  # a crash before the delivery
    man = read_manifest(tmp_path)
    outputs = tmp_path / man.outputs_dir
    # one byte of an output's key inside a frame (the file's framing stays readable)
    part, at = next((p, p.read_bytes().find(b"\x8c\x01a")) for p in outputs.iterdir()
                    if p.name.startswith("part-") and b"\x8c\x01a" in p.read_bytes())
    data = bytearray(part.read_bytes())
    data[at + 2] = ord("c")                              # key "a" reads as "c"
    part.write_bytes(bytes(data))
    (outputs / f".{part.name}.crc").unlink(missing_ok=True)
    resumed = _op(sc, checkpoint_dir=tmp_path)           # the state is intact: resumes
    assert resumed.collect_state() == {"a": 4, "b": 2}
    with pytest.raises(Exception, match=rf"{part.name}: checksum .* \(the outputs file is "
                                        r"corrupt\)") as got:
        resumed.process(sc.parallelize(GOOD, 2), batch_id=0).collect()
    assert "state file" not in str(got.value)
    resumed.close()
    op._cache.close(op._state.rdd)


def test_state_copies_on_disk_are_as_the_docs_say(sc, tmp_path):
    """Two copies of the state (the commit's and the previous one's, which the last
    batch's outputs may recompute from), three while the caller still holds the outputs
    of the batch before the last during a call; never more."""
    batches = [[(k % (5 + t), 1) for k in range(40)] for t in range(6)]

    def state_dirs():
        return sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("state-"))

    op = _op(sc, checkpoint_dir=tmp_path)
    for t, b in enumerate(batches):
        # the caller holds the previous batch's outputs (``out``) during this call
        out = op.process(sc.parallelize(b, 2), batch_id=t)
        out.collect()
        assert len(state_dirs()) <= 3, state_dirs()
    del out
    for t, b in enumerate(batches, start=len(batches)):
        op.process(sc.parallelize(b, 2), batch_id=t).collect()   # dropped at once
        assert len(state_dirs()) <= 2, state_dirs()
    op.close()
