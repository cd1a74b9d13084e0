"""The merge task's one conversion of its keys' Arrow chunks (task_frames.prepare_block)
hands each key the same frames, key, state and outputs as the per-key conversion: values,
dtypes, index, None/NaN, maxRecordsPerBatch cuts, late rows, and the per-key fallback of an
integer column holding a null."""
from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from pyspark.sql.types import (BooleanType, DoubleType, LongType, StringType, StructField,
                               StructType, TimestampType)

from sparkbalance.state.pandas_state.arrow_input import arrow_schema, key_chunks
from sparkbalance.state.pandas_state.arrow_rows import RowConverter
from sparkbalance.state.pandas_state.group_call import TICK, BatchClock, GroupCall
from sparkbalance.state.pandas_state.task_frames import KeyFrames, prepare_block

IN = StructType([StructField("k", StringType()), StructField("n", LongType()),
                 StructField("x", DoubleType()), StructField("b", BooleanType()),
                 StructField("ts", TimestampType())])
OUT = StructType([StructField("k", StringType()), StructField("rows", LongType())])
STATE = StructType([StructField("rows", LongType())])


def _ts(sec):
    return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=sec)


def _block(batches_rows):
    """``{key: [RowChunk, ...]}`` of several input batches, as the merge task gets it."""
    sch = arrow_schema(IN)
    block: dict = {}
    for rows in batches_rows:
        cols = list(zip(*rows))
        b = pa.record_batch([pa.array(list(c), type=f.type) for c, f in zip(cols, sch)],
                            schema=sch)
        for k, ch in key_chunks([b.serialize().to_pybytes()], sch, [0]):
            block.setdefault(k, []).append(ch)
    return block


def _run_both(batches_rows, timeout="NoTimeout", event_index=None, clock=BatchClock(0),
              max_records=3, ticks=()):
    seen = {True: [], False: []}
    results = {}
    for prepared in (False, True):
        def record(key, pdfs, state, _seen=seen[prepared]):
            pdfs = list(pdfs)
            _seen.append((key, [type(v) for v in key], [repr(p) for p in pdfs],
                          [p.dtypes.tolist() for p in pdfs], [p.index for p in pdfs],
                          [p.to_dict("list") for p in pdfs]))
            state.update((sum(len(p) for p in pdfs),))
            yield __import__("pandas").DataFrame({"k": [key[0]], "rows": [state.get[0]]})

        c = GroupCall(record, RowConverter(IN, OUT, "UTC", max_records), [0], STATE,
                      timeout, event_index)
        c.clock = clock
        block = _block(batches_rows)
        for k in ticks:
            block.setdefault(k, []).append(TICK)
        weights = {k: c.weight(v) for k, v in block.items()}
        if prepared:
            block = c.prepare_block(block)
            assert {k: c.weight(v) for k, v in block.items()} == weights
        results[prepared] = {k: c(None, v) for k, v in block.items()}
    assert repr(seen[True]) == repr(seen[False])
    assert repr(results[True]) == repr(results[False])
    return seen[True], results[True]


def test_prepared_frames_equal_per_key_frames(monkeypatch):
    conversions = []
    frame = RowConverter.frame
    monkeypatch.setattr(RowConverter, "frame",
                        lambda self, b: conversions.append(b.num_rows) or frame(self, b))
    rows = [("a", 1, 0.5, True, _ts(1)), ("b", 2, float("nan"), False, None),
            ("a", 3, None, True, _ts(3)), (None, 4, 1.0, False, _ts(4))]
    more = [("a", 5, 2.0, False, _ts(5)), ("c", 6, 3.0, True, _ts(6)),
            ("a", 7, 4.0, True, _ts(7)), ("a", 8, 5.0, True, _ts(8))]
    conversions.clear()
    seen, _ = _run_both([rows, more])
    assert conversions[-1] == 8          # the prepared path: one conversion of all rows
    frames_of_a = [s for s in seen if s[0][0] == "a"][0]
    assert [len(d["n"]) for d in frames_of_a[5]] == [3, 2]     # cut at maxRecordsPerBatch
    assert frames_of_a[5][0]["n"] == [1, 3, 5]                   # row order kept


def test_an_integer_column_with_a_null_converts_key_by_key():
    rows = [("a", 1, 0.5, True, _ts(1)), ("b", None, 1.0, None, _ts(2)),
            ("a", 3, 1.5, False, _ts(3))]
    seen, _ = _run_both([rows], max_records=10)
    dtypes = {s[0][0]: s[3][0] for s in seen}
    assert str(dtypes["a"][1]) == "int64" and str(dtypes["b"][1]) == "float64"


def test_late_rows_are_dropped_and_an_all_late_key_times_out_path():
    rows = [("a", 1, 0.5, True, _ts(10)), ("a", 2, 0.5, True, _ts(20)),
            ("b", 3, 0.5, True, _ts(12)), ("c", 4, 0.5, True, None)]
    clock = BatchClock(0, 15_000, 15_000, 15_000)
    seen, results = _run_both([rows], "EventTimeTimeout", 4, clock)
    assert sorted(s[0][0] for s in seen) == ["a", "c"]           # b: all rows late
    assert results[("b",)] == (None, [])


def test_ticks_stay_beside_the_prepared_frames():
    rows = [("a", 1, 0.5, True, _ts(1))]
    _run_both([rows], "ProcessingTimeTimeout", ticks=[("a",), ("z",)])
    c = GroupCall(lambda k, p, s: [], RowConverter(IN, OUT, "UTC", 3), [0], STATE,
                  "NoTimeout", None)
    got = c.prepare_block({**_block([rows]), ("z",): [TICK]})
    assert type(got[("a",)][0]) is KeyFrames and got[("z",)] == [TICK]


def test_keys_of_python_rows_are_left_as_they_are():
    c = GroupCall(lambda k, p, s: [], RowConverter(IN, OUT, "UTC", 3), [0], STATE,
                  "NoTimeout", None)
    block = {("a",): [("a", 1, 0.5, True, None)]}
    assert c.prepare_block(block) == block


@pytest.mark.parametrize("run_rows", [1, 2, 1 << 16])
def test_runs_of_any_size_give_the_same_frames(monkeypatch, run_rows):
    from sparkbalance.state.pandas_state import task_frames
    monkeypatch.setattr(task_frames, "RUN_ROWS", run_rows)
    rows = [(k, i, float(i), i % 2 == 0, _ts(i)) for i, k in enumerate("abcabdaeef")]
    _run_both([rows, rows[3:]])


def test_chunks_a_stream_reader_refuses_are_read_one_by_one(monkeypatch):
    def refuse(*a, **k):
        raise pa.ArrowInvalid("not a stream")
    rows = [("a", 1, 0.5, True, _ts(1)), ("b", 2, 1.0, False, _ts(2)),
            ("a", 3, None, True, _ts(3))]
    _, want = _run_both([rows])
    monkeypatch.setattr(pa.ipc, "open_stream", refuse)
    _, got = _run_both([rows])
    assert repr(got) == repr(want)
