"""The outputs' concatenation (arrow_rows.concat_frames) equals ``pd.concat(...,
ignore_index=True)`` on any run of frames: same columns and dtypes (its column-wise path),
columns in another order or of another dtype, None/NaN, object and datetime columns
(``pd.concat``'s path)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkbalance.state.pandas_state.arrow_rows import concat_frames

_COLUMNS = {
    "i": st.lists(st.integers(-2**40, 2**40), min_size=1, max_size=3).map(
        lambda v: np.array(v, dtype=np.int64)),
    "f": st.lists(st.one_of(st.floats(allow_nan=True), st.just(float("nan"))),
                  min_size=1, max_size=3).map(lambda v: np.array(v, dtype=np.float64)),
    "o": st.lists(st.one_of(st.none(), st.text(max_size=3)), min_size=1, max_size=3),
    "b": st.lists(st.booleans(), min_size=1, max_size=3),
    "t": st.lists(st.integers(0, 2**32), min_size=1, max_size=3).map(
        lambda v: pd.to_datetime(v, unit="s")),
}


@st.composite
def _frame(draw):
    kinds = draw(st.sampled_from(["ifo", "ifo", "ifo", "oif", "ib", "it", "iffo"]))
    n = draw(st.integers(1, 3))
    cols = {}
    for i, k in enumerate(kinds):
        v = list(draw(_COLUMNS[k]))
        cols[f"c{i}" if kinds != "oif" else ["c1", "c2", "c0"][i]] = (v * n)[:n]
    if kinds == "iffo":      # a duplicate column name
        return pd.DataFrame([list(r) for r in zip(*cols.values())],
                            columns=["c0", "c1", "c1", "c2"][:len(cols)])
    return pd.DataFrame(cols)


@settings(max_examples=150, deadline=None)
@given(st.lists(_frame(), min_size=2, max_size=6))
@pytest.mark.filterwarnings("ignore:The behavior of DataFrame concatenation:FutureWarning")
def test_concat_frames_equals_pd_concat(frames):
    try:
        want = pd.concat(frames, ignore_index=True)
    except Exception as e:      # e.g. duplicate names in one frame only: the same error
        with pytest.raises(type(e)):
            concat_frames(frames)
        return
    got = concat_frames(frames)
    pd.testing.assert_frame_equal(got, want)
    assert list(got.columns) == list(want.columns)


def test_concat_frames_one_dtype_path():
    frames = [pd.DataFrame({"k": [i], "n": [float(i)], "s": [str(i)]}) for i in range(50)]
    got = concat_frames(frames)
    pd.testing.assert_frame_equal(got, pd.concat(frames, ignore_index=True))
    assert got.index.equals(pd.RangeIndex(50))


def test_to_arrow_by_position_when_the_columns_are_the_schemas_equals_by_name():
    """A run whose columns are the output schema's names in its order is converted
    without selecting them by name; the Arrow stream is the same as by name, and frames
    in another column order are still matched by name."""
    pa = pytest.importorskip("pyarrow")
    pytest.importorskip("pyspark.sql.conversion")
    from pyspark.sql.conversion import PandasToArrowConversion
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

    from sparkbalance.state.pandas_state.arrow_rows import RowConverter, arrow_table
    out = StructType([StructField("k", StringType()), StructField("n", LongType()),
                      StructField("x", DoubleType())])
    conv = RowConverter(out, out, "UTC", 10_000)
    runs = [
        [pd.DataFrame({"k": ["a"], "n": [1], "x": [0.5]}),
         pd.DataFrame({"k": [None], "n": [2], "x": [float("nan")]})],
        [pd.DataFrame({"n": [3], "x": [1.5], "k": ["b"]})],            # by name
        [pd.DataFrame({"k": ["c"], "n": [4], "x": [2.0]}),
         pd.DataFrame({"x": [3.0], "k": ["d"], "n": [5]})],            # mixed: pd.concat
    ]
    for frames in runs:
        got = arrow_table([conv.to_arrow(frames)])
        want = PandasToArrowConversion.convert(
            pd.concat(frames, ignore_index=True), out, timezone="UTC", safecheck=True,
            arrow_cast=True, assign_cols_by_name=True)
        assert got.equals(pa.Table.from_batches([want]))


@st.composite
def _frames_alike(draw):
    """Frames built alike (the usual function's output: one dict of the same column
    types per key), sometimes one of them with a column of another dtype or built in
    another block layout."""
    kinds = draw(st.sampled_from(["ii", "io", "iof", "ifi", "oi", "ib", "it"]))
    frames = []
    for _ in range(draw(st.integers(2, 6))):
        n = draw(st.integers(1, 3))
        frames.append(pd.DataFrame({f"c{i}": (list(draw(_COLUMNS[k])) * n)[:n]
                                    for i, k in enumerate(kinds)}))
    odd = draw(st.sampled_from([None, "dtype", "layout"]))
    if odd == "dtype":           # an int, bool or time column as objects in one frame
        frames[-1] = frames[-1].assign(c0=frames[-1]["c0"].astype(object))
    elif odd == "layout":        # same columns and dtypes, one block per column
        f = frames[-1]
        frames[-1] = pd.concat([f[[c]] for c in f.columns], axis=1)
    return frames


@settings(max_examples=150, deadline=None)
@given(_frames_alike())
def test_concat_frames_of_frames_built_alike_equals_pd_concat(frames):
    """The block-at-a-time path (frames sharing their block layout) and its fall-backs
    give ``pd.concat``'s frame: values, dtypes, None/NaN, a fresh RangeIndex."""
    got = concat_frames(frames)
    want = pd.concat(frames, ignore_index=True)
    pd.testing.assert_frame_equal(got, want)
    assert list(got.columns) == list(want.columns)
    assert got.index.equals(pd.RangeIndex(len(want)))
