"""The user's sink once per batch id, and a restart that replays a batch: the state and the
query's checkpoint agree (a replayed batch is neither applied nor written twice)."""
from __future__ import annotations

import os
import tempfile

import pandas as pd

from sparkbalance.state.pandas_state import stateful
from sparkbalance.state.pandas_state.sinks import FileSink


def running_count(key, pdfs, state):
    n = sum(len(p) for p in pdfs) + (state.get[0] if state.exists else 0)
    state.update((n,))
    yield pd.DataFrame({"k": [key[0]], "n": [n]})


def _query(spark, src, ck, out, fmt="parquet", name=None):
    df = spark.readStream.schema("k string, v long").option("maxFilesPerTrigger", 1).json(src)
    w = (stateful(df.groupBy("k"), num_partitions=3)
         .applyInPandasWithState(running_count, "k string, n long", "n long", "Append",
                                 "NoTimeout")
         .writeStream.format(fmt).outputMode("append").option("checkpointLocation", ck))
    if name:
        w = w.queryName(name)
    return w, (w.start(out) if out else w.start())


def _file(src, i, keys):
    with open(os.path.join(src, f"{i:03d}.json"), "w") as f:
        f.writelines(f'{{"k": "{k}", "v": 1}}\n' for k in keys)


def test_file_sink_writes_a_batch_id_once(spark):
    out = tempfile.mkdtemp(prefix="sb-sink-")
    sink = FileSink(spark, "parquet", out, {}, None)
    df = spark.createDataFrame([("a", 1)], "k string, n long")
    with open(os.path.join(out, "part-b0000000005-left-by-a-crash.parquet"), "w") as f:
        f.write("partial")
    sink.write(df, 5)          # the uncommitted id's leftovers go first
    sink.write(df, 5)          # a replay of a committed id writes nothing
    sink.write(df, 6)
    assert sorted(spark.read.parquet(out).collect()) == [("a", 1), ("a", 1)]


def test_memory_sink_is_a_table_named_by_the_query(spark):
    base = tempfile.mkdtemp(prefix="sb-mem-")
    src = os.path.join(base, "in")
    os.makedirs(src)
    _file(src, 0, "aab")
    w, q = _query(spark, src, os.path.join(base, "ck"), None, fmt="memory", name="sb_counts")
    try:
        q.processAllAvailable()
        _file(src, 1, "a")
        q.processAllAvailable()
    finally:
        q.stop()
        w.driver.op.close()
    rows = sorted(map(tuple, spark.table("sb_counts").collect()))
    assert rows == [("a", 2), ("a", 3), ("b", 1)]


def test_restart_replaying_a_batch_applies_and_writes_it_once(spark):
    base = tempfile.mkdtemp(prefix="sb-restart-")
    src, ck, out = (os.path.join(base, d) for d in ("in", "ck", "out"))
    os.makedirs(src)
    w, q = _query(spark, src, ck, out)
    try:
        for i, keys in enumerate(["aab", "bc", "a"]):
            _file(src, i, keys)
            q.processAllAvailable()
    finally:
        q.stop()
        w.driver.op.close()
    # A crash after the batch was applied and written but before Spark committed it:
    # Spark replays batch 2 at the restart.
    for name in ("2", ".2.crc"):
        if os.path.exists(os.path.join(ck, "commits", name)):
            os.remove(os.path.join(ck, "commits", name))
    w, q = _query(spark, src, ck, out)
    try:
        q.processAllAvailable()
        _file(src, 3, "cd")
        q.processAllAvailable()
        state = {e[0][0]: e[1][0] for e in w.driver.op.collect_state().values()}
    finally:
        q.stop()
        w.driver.op.close()
    assert state == {"a": 3, "b": 2, "c": 2, "d": 1}
    rows = sorted(map(tuple, spark.read.parquet(out).collect()))
    assert rows == sorted([("a", 2), ("b", 1), ("b", 2), ("c", 1), ("a", 3), ("c", 2),
                           ("d", 1)])


def test_batch_clock_kept_under_a_hadoop_uri_is_reused_by_a_new_driver(spark, tmp_path):
    # a checkpointLocation given as a URI (hdfs://, s3a://; file:// here) keeps the clocks
    # too: a restarted driver resumes the watermark and replays a batch with its own clock
    import datetime as dt
    import types
    from sparkbalance.state.pandas_state.batch_driver import KEEP_CLOCKS, BatchDriver
    uri = "file://" + str(tmp_path / "meta")
    op = types.SimpleNamespace(last_batch_id=None)
    call = types.SimpleNamespace(timeout="NoTimeout")
    df = spark.createDataFrame([(dt.datetime(2020, 1, 1, 0, 0, 30),)], "ts timestamp")
    d = BatchDriver(spark, op, call, None, None, uri, "ts", 10_000)
    clocks = [d.clock_for(df, b) for b in range(KEEP_CLOCKS + 2)]
    d.watermark.current_ms = clocks[-1].next_watermark_ms
    again = BatchDriver(spark, op, call, None, None, uri, "ts", 10_000)
    assert again.watermark.current_ms == clocks[-1].next_watermark_ms > 0
    assert again.clock_for(df, KEEP_CLOCKS + 1) == clocks[-1]
    assert len(again._saved()) == KEEP_CLOCKS
