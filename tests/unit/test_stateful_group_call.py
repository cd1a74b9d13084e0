"""One key's step of the stateful drop-in without Spark: Spark's store rule, timeouts
(data first, then due keys, then the batch without data of an advanced watermark), late
rows, and the watermark's advance rule."""
from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

from sparkbalance.state.pandas_state.arrow_rows import RowConverter, arrow_table
from sparkbalance.state.pandas_state.group_call import TICK, BatchClock, GroupCall
from sparkbalance.state.pandas_state.watermark import WatermarkClock, watermark_column

IN = StructType([StructField("k", StringType()), StructField("ts", TimestampType())])
OUT = StructType([StructField("k", StringType()), StructField("n", LongType()),
                  StructField("timed_out", StringType())])
STATE = StructType([StructField("n", LongType())])


def counter(key, pdfs, state):
    if state.hasTimedOut:
        state.remove()
        yield pd.DataFrame({"k": [key[0]], "n": [-1], "timed_out": ["y"]})
        return
    n = sum(len(p) for p in pdfs) + (state.get[0] if state.exists else 0)
    state.update((n,))
    if state._timeout_conf == "EventTimeTimeout":
        state.setTimeoutTimestamp(max(20_000, state.getCurrentWatermarkMs()))
    elif state._timeout_conf == "ProcessingTimeTimeout":
        state.setTimeoutDuration(1_000)
    yield pd.DataFrame({"k": [key[0]], "n": [n], "timed_out": ["n"]})


def _call(timeout, event_index=None):
    return GroupCall(counter, RowConverter(IN, OUT, "UTC", 10_000), [0], STATE, timeout,
                     event_index)


def _rows(c, outs):
    """The outputs with each frame as its rows (``("r", row)``), through the per-task
    conversion the merge applies (finish_outputs)."""
    done = []
    for o in outs:
        if o[0] == "p":
            (_, (tag, data)), = c.finish_outputs([(None, o)])
            assert tag == "a"
            done.extend(("r", r) for r in zip(*arrow_table([data]).to_pydict().values()))
        else:
            done.append(o)
    return done


def _ts(sec):
    return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=sec)


def test_data_then_processing_time_timeout_at_a_later_batch():
    c = _call("ProcessingTimeTimeout")
    c.clock = BatchClock(10_000)
    e, outs = c(None, [("a", None), ("a", None)])
    assert e == (("a",), (2,), 11_000) and _rows(c, outs) == [("r", ("a", 2, "n")), ("t", 11_000)]
    c.clock = BatchClock(10_500)                     # not due yet
    assert c(e, [TICK]) == (e, [])
    c.clock = BatchClock(12_000)
    e2, outs = c(e, [TICK])
    assert e2 is None and _rows(c, outs) == [("r", ("a", -1, "y")), ("t", -1)]


def test_rows_of_an_expired_key_come_after_its_timeout():
    c = _call("ProcessingTimeTimeout")
    c.clock = BatchClock(50_000)
    e, outs = c((("a",), (5,), 11_000), [("a", None)])
    assert [o[1][2] for o in _rows(c, outs) if o[0] == "r"] == ["y", "n"]      # closed, then new
    assert e == (("a",), (1,), 51_000)


def test_event_time_late_rows_and_the_batch_without_data():
    c = _call("EventTimeTimeout", event_index=1)
    c.clock = BatchClock(0, 15_000, 15_000, 30_000)
    # the row at 15 s is at the watermark: late; the key is new, so nothing runs but the
    # batch without data has nothing to time out either
    assert c(None, [("a", _ts(15))]) == (None, [])
    e, outs = c(None, [("a", _ts(16))])
    # called with data (timeout 20 s), then timed out at the next watermark (30 s)
    assert [o[1][2] for o in _rows(c, outs) if o[0] == "r"] == ["n", "y"] and e is None


def test_a_call_that_changes_nothing_keeps_value_and_old_timeout():
    def idle(key, pdfs, state):
        return []
    c = GroupCall(idle, RowConverter(IN, OUT, "UTC", 10_000), [0], STATE,
                  "ProcessingTimeTimeout", None)
    c.clock = BatchClock(0)
    assert c((("a",), (3,), 99_000), [("a", None)]) == ((("a",), (3,), 99_000), [])


def test_returning_a_frame_instead_of_an_iterable_is_refused():
    c = GroupCall(lambda k, p, s: pd.DataFrame(), RowConverter(IN, OUT, "UTC", 10), [0],
                  STATE, "NoTimeout", None)
    with pytest.raises(TypeError, match="iterable of pandas.DataFrame"):
        c(None, [("a", None)])


def test_many_keys_outputs_become_one_arrow_stream_in_order():
    c = _call("NoTimeout")
    outs = []
    for k in "abc":
        outs += [(k, o) for o in c(None, [(k, None)])[1]]
    done = c.finish_outputs(outs + [("z", ("t", 5))])
    assert [o[0] for _, o in done] == ["a", "t"]
    assert arrow_table([done[0][1][1]]).column("k").to_pylist() == ["a", "b", "c"]


def test_a_frame_of_the_wrong_width_is_refused_as_spark_refuses_it():
    c = GroupCall(lambda k, p, s: iter([pd.DataFrame({"k": ["a"]})]),
                  RowConverter(IN, OUT, "UTC", 10), [0], STATE, "NoTimeout", None)
    with pytest.raises(ValueError, match="expected 3"):
        c(None, [("a", None)])


def test_watermark_rules():
    assert watermark_column([("ts", {"spark.watermarkDelayMs": 5})]) == ("ts", 5)
    w = WatermarkClock(5_000)
    w.advance(None)
    assert w.current_ms == 0
    w.advance(20_000)
    w.advance(1_000)
    assert w.current_ms == 15_000
    with pytest.raises(ValueError, match="delay_ms"):
        WatermarkClock(-1)


# ---------------------------------------------------------------- Arrow chunks per key
def _chunks(rows, index=(0,)):
    """``rows`` of IN as one Arrow batch cut by key (:func:`key_chunks`)."""
    import pyarrow as pa

    from sparkbalance.state.pandas_state.arrow_input import arrow_schema, key_chunks
    sch = arrow_schema(IN)
    cols = list(zip(*rows))
    b = pa.record_batch([pa.array(list(c), type=f.type) for c, f in zip(cols, sch)],
                        schema=sch)
    return list(key_chunks([b.serialize().to_pybytes()], sch, list(index)))


def test_key_chunks_cut_a_batch_by_key_in_row_order_and_weigh_their_rows():
    got = _chunks([("a", _ts(1)), ("b", _ts(2)), ("a", _ts(3)), (None, _ts(4))])
    assert [(k, c.rows) for k, c in got] == [(("a",), 2), (("b",), 1), ((None,), 1)]  # nulls last
    c = _call("NoTimeout")
    assert c.weight([got[0][1], got[1][1], TICK]) == 4


def test_a_key_of_chunks_sees_the_frames_and_state_of_its_rows():
    """The same key's rows as two chunks, and as rows: the same call, frames and state."""
    seen = []

    def record(key, pdfs, state):
        pdfs = list(pdfs)
        seen.append((key, [p.to_dict("list") for p in pdfs], [p.dtypes.tolist() for p in pdfs]))
        yield from counter(key, iter(pdfs), state)

    rows = [("a", _ts(16)), ("a", None), ("a", _ts(17))]
    results = []
    for values in ([c for _, c in _chunks(rows[:2]) + _chunks(rows[2:])], rows):
        c = GroupCall(record, RowConverter(IN, OUT, "UTC", 2), [0], STATE, "NoTimeout", None)
        c.clock = BatchClock(0)
        e, outs = c(None, values)
        results.append((e, _rows(c, outs)))
    assert results[0] == results[1] == ((("a",), (3,), -1), [("r", ("a", 3, "n"))])
    assert repr(seen[0]) == repr(seen[1])
    assert [len(p["k"]) for p in seen[0][1]] == [2, 1]      # maxRecordsPerBatch = 2


def test_late_rows_of_chunks_are_dropped_as_late_rows():
    c = _call("EventTimeTimeout", event_index=1)
    c.clock = BatchClock(0, 15_000, 15_000, 30_000)
    assert c(None, [ch for _, ch in _chunks([("a", _ts(15))])]) == (None, [])
    e, outs = c(None, [ch for _, ch in _chunks([("a", _ts(15)), ("a", _ts(16))])])
    assert [o[1][2] for o in _rows(c, outs) if o[0] == "r"] == ["n", "y"] and e is None


def test_key_chunks_keep_each_keys_row_order_and_one_key_for_nan():
    import pyarrow as pa

    from sparkbalance.state.pandas_state.arrow_input import key_chunks
    from sparkbalance.state.pandas_state.batch_driver import NAN_KEY
    sch = pa.schema([("k", pa.float64()), ("v", pa.int64())])
    b = pa.record_batch([pa.array([2.0, float("nan"), 1.0, 2.0, float("nan"), 1.0]),
                         pa.array([0, 1, 2, 3, 4, 5])], schema=sch)
    got: dict = {}
    for k, c in key_chunks([b.serialize().to_pybytes()], sch, [0]):
        got.setdefault(k, []).extend(
            pa.ipc.read_record_batch(pa.py_buffer(c.data), sch).column("v").to_pylist())
    assert got == {(1.0,): [2, 5], (2.0,): [0, 3], (NAN_KEY,): [1, 4]}


def test_a_task_without_output_frames_passes_only_its_timeout_changes():
    c = GroupCall(lambda k, p, s: iter([pd.DataFrame({"k": [], "n": [], "timed_out": []})]),
                  RowConverter(IN, OUT, "UTC", 10), [0], STATE, "NoTimeout", None)
    outs = [("a", o) for o in c(None, [("a", None)])[1]]
    assert outs == []                          # an empty frame is not an output
    assert c.finish_outputs([]) == []
    assert c.finish_outputs([("z", ("t", 5))]) == [("z", ("t", 5))]


def test_keys_yielding_other_dtypes_convert_as_their_concatenation():
    """One key's ``n`` an int column, another's a float one, a third's objects with a
    None: the task's Arrow stream is Spark's conversion of ``pd.concat`` of them."""
    frames = {"a": pd.DataFrame({"k": ["a"], "n": [1], "timed_out": ["n"]}),
              "b": pd.DataFrame({"k": ["b"], "n": [2.0], "timed_out": ["n"]}),
              "c": pd.DataFrame({"k": ["c"], "n": [3], "timed_out": [None]})}
    c = GroupCall(lambda k, p, s: iter([frames[k[0]]]), RowConverter(IN, OUT, "UTC", 10),
                  [0], STATE, "NoTimeout", None)
    outs = []
    for k in "abc":
        outs += [(k, o) for o in c(None, [(k, None)])[1]]
    (_, (tag, data)), = c.finish_outputs(outs)
    assert tag == "a"
    assert arrow_table([data]).to_pydict() == {"k": ["a", "b", "c"], "n": [1, 2, 3],
                                               "timed_out": ["n", "n", None]}


def test_a_stored_key_is_plain_python_and_a_timeout_call_gets_spark_s_key_type():
    """The stored key is plain Python (cheap to pickle); the timeout call of a key with
    no rows still gets the key as Spark's worker would (a numpy scalar for a number)."""
    import numpy as np
    seen = []

    def f(key, pdfs, state):
        seen.append((key, [len(p) for p in pdfs], state.hasTimedOut))
        if state.hasTimedOut:
            state.remove()
        else:
            state.update((1,))
            state.setTimeoutDuration(10)
        return iter([])

    ins = StructType([StructField("k", LongType()), StructField("ts", TimestampType())])
    c = GroupCall(f, RowConverter(ins, OUT, "UTC", 10), [0], STATE,
                  "ProcessingTimeTimeout", None)
    c.clock = BatchClock(0)
    e, _ = c(None, [(7, None)])
    assert type(e[0][0]) is int and e[0] == (7,)
    c.clock = BatchClock(1_000)
    e, outs = c(e, [TICK])
    assert e is None and outs == [("t", -1)]
    key, sizes, timed_out = seen[-1]
    assert type(key[0]) is np.int64 and key == (7,) and sizes == [0] and timed_out
