"""Property tests of the windows' payoff rule with memory and cores
(:mod:`sparkbalance.spark.window.payoff`, :mod:`sparkbalance.spark.window.memory`)."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from sparkbalance.spark.window.memory import BUFFERS, parse_bytes, spill_rows, task_memory
from sparkbalance.spark.window.payoff import SPILL_PER_ROW, decide

totals = st.floats(1e3, 1e9)
shares = st.floats(0.0, 1.0)
parts = st.integers(1, 512)
cores_ = st.integers(1, 512)
widths = st.floats(8.0, 1e5)
mems = st.floats(0.0, 2.0 ** 40)


def _split(top, total, n, p, width=None, mem=None):
    return decide(np.array([top]), total, n, "auto", cores=p, bytes_per_row=width,
                  memory=mem)[0]


@settings(max_examples=300, deadline=None)
@given(totals, shares, parts, cores_, widths, mems, st.floats(0.0, 1.0))
def test_less_memory_never_turns_a_split_into_plain(total, share, n, p, width, mem, cut):
    top = share * total
    if _split(top, total, n, p, width, mem):
        assert _split(top, total, n, p, width, mem * cut)


@settings(max_examples=300, deadline=None)
@given(totals, shares, parts, cores_, widths)
def test_a_window_that_fits_is_judged_as_without_memory(total, share, n, p, width):
    top = share * total
    fits = top * width   # exactly the hot key's bytes: nothing past the memory
    assert _split(top, total, n, p, width, fits) == _split(top, total, n, p)
    assert _split(top, total, n, p, None, 1.0) == _split(top, total, n, p)   # width unknown
    assert _split(top, total, n, p, width, None) == _split(top, total, n, p)  # memory unknown


@settings(max_examples=300, deadline=None)
@given(totals, shares, parts, cores_, cores_, st.one_of(st.none(), mems))
def test_more_cores_never_turn_a_split_into_plain(total, share, n, p, q, mem):
    top = share * total
    lo, hi = min(p, q), max(p, q)
    if _split(top, total, n, lo, 100.0, mem):
        assert _split(top, total, n, hi, 100.0, mem)


@settings(max_examples=300, deadline=None)
@given(totals, shares, shares, parts, cores_, st.one_of(st.none(), mems))
def test_a_heavier_hot_key_never_turns_a_split_into_plain(total, a, b, n, p, mem):
    lo, hi = sorted((a * total, b * total))
    if _split(lo, total, n, p, 100.0, mem):
        assert _split(hi, total, n, p, 100.0, mem)


@settings(max_examples=200, deadline=None)
@given(st.floats(0.0, 1e9), st.one_of(st.none(), widths), st.one_of(st.none(), mems))
def test_spilled_rows_are_at_most_the_hot_rows(rows, width, mem):
    s = spill_rows(rows, width, mem)
    assert s in (0.0, BUFFERS * rows)   # the sort's and the window's buffer, or none
    assert (s > 0) == (width is not None and mem is not None and rows * width > mem)
    if width is None or mem is None:
        assert s == 0.0


def test_the_spill_is_charged_to_plain_spark_and_named():
    # 90 % of 10^6 rows on 2 cores does not pay when it fits (the split's work cannot spread)
    rows = 1_000_000.0
    assert not _split(0.9 * rows, rows, 16, 2)
    # rows of 500 bytes in a task of 128 MiB: the key's 430 MiB spill (twice), which pays
    ok, why = decide(np.array([0.9 * rows]), rows, 16, "auto", cores=2, bytes_per_row=500.0,
                     memory=128 * 2 ** 20)
    assert ok and "spilling ~1800000 rows" in why
    # ... but not a key that fits
    assert not _split(0.9 * rows, rows, 16, 2, 100.0, 128 * 2 ** 20)
    assert SPILL_PER_ROW > 0


def test_memory_settings_are_read_as_the_jvm_spells_them():
    assert parse_bytes("512m") == 512 * 2 ** 20 and parse_bytes("2G") == 2 * 2 ** 30
    assert parse_bytes("1024") == 2 ** 30 and parse_bytes("1gb") == 2 ** 30
    assert parse_bytes("") is None and parse_bytes("-1g") is None

    class Conf:
        def __init__(self, values):
            self.values = values

        def get(self, key, default=None):
            return self.values.get(key, default)

    class Session:
        def __init__(self, values):
            self.conf = Conf(values)

    class Df:
        def __init__(self, values):
            self.sparkSession = Session(values)

    mib = 2 ** 20
    # local-cluster[4,1,512]: each executor's pool, one task slot each
    got = task_memory(Df({"spark.master": "local-cluster[4,1,512]",
                          "spark.executor.memory": "512m"}))
    assert got == (512 - 300) * mib * 0.6
    # two slots share an executor's pool
    assert task_memory(Df({"spark.master": "local-cluster[2,2,1024]",
                           "spark.executor.memory": "1024m"})) == (1024 - 300) * mib * 0.6 / 2
    # local: one JVM, the hot task ends alone with the driver's whole pool
    assert task_memory(Df({"spark.master": "local[16]", "spark.driver.memory": "3g",
                           "spark.memory.fraction": "0.5"})) == (3072 - 300) * mib * 0.5
    assert task_memory(Df({"spark.master": "yarn", "spark.executor.memory": "4g",
                           "spark.executor.cores": "4"})) == (4096 - 300) * mib * 0.6 / 4
    assert task_memory(object()) is None   # no session to ask (Spark Connect's plan-less)
