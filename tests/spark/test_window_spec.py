"""window_column reads the same fields from a window Column on whichever PySpark runs.

Classic PySpark 4 is read from its ColumnNode tree, classic 3.5 from its Catalyst
expression, Spark Connect from its expression tree: each function kind must come out with
the same name, arguments, literals, distinct flag, partitioning, ordering and frame, so the
split that follows is the same on every line. No query is run: only Columns are built.
"""
from __future__ import annotations

import pytest
from pyspark.sql import Window, functions as F

from sparkbalance.spark.window.spec import Frame, window_column

NAMES = ["row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag",
         "lead", "sum", "sum_distinct", "count", "count_distinct", "min", "max", "avg", "mean",
         "first", "last_ignorenulls", "rows", "rows_running", "range"]


def _cases() -> dict:
    """name: (column, function, argument Columns, literals, distinct, frame); built inside a
    test, where the session exists (classic Window needs one)."""
    W = Window.partitionBy("k").orderBy("t")
    return {
        "row_number": (F.row_number().over(W), "row_number", [], (), False, None),
        "rank": (F.rank().over(W), "rank", [], (), False, None),
        "dense_rank": (F.dense_rank().over(W), "dense_rank", [], (), False, None),
        "percent_rank": (F.percent_rank().over(W), "percent_rank", [], (), False, None),
        "cume_dist": (F.cume_dist().over(W), "cume_dist", [], (), False, None),
        "ntile": (F.ntile(3).over(W), "ntile", [F.lit(3)], (3,), False, None),
        "lag": (F.lag("x").over(W), "lag", [F.col("x"), F.lit(1), F.lit(None), F.lit(False)],
                (None, 1, None, False), False, None),
        "lead": (F.lead("x", 2, 0).over(W), "lead",
                 [F.col("x"), F.lit(2), F.lit(0), F.lit(False)], (None, 2, 0, False), False, None),
        "sum": (F.sum("x").over(W), "sum", [F.col("x")], (None,), False, None),
        "sum_distinct": (F.sum_distinct(F.col("x")).over(W), "sum", [F.col("x")], (None,), True,
                         None),
        "count": (F.count("x").over(W), "count", [F.col("x")], (None,), False, None),
        "count_distinct": (F.count_distinct("x").over(W), "count", [F.col("x")], (None,), True,
                           None),
        "min": (F.min("x").over(W), "min", [F.col("x")], (None,), False, None),
        "max": (F.max("x").over(W), "max", [F.col("x")], (None,), False, None),
        "avg": (F.avg("x").over(W), "avg", [F.col("x")], (None,), False, None),
        "mean": (F.mean("x").over(W), "avg", [F.col("x")], (None,), False, None),
        "first": (F.first("x").over(W), "first", [F.col("x"), F.lit(False)], (None, False), False,
                  None),
        "last_ignorenulls": (F.last("x", True).over(W), "last", [F.col("x"), F.lit(True)],
                             (None, True), False, None),
        "rows": (F.sum("x").over(W.rowsBetween(-2, 1)), "sum", [F.col("x")], (None,), False,
                 Frame("rows", -2, 1)),
        "rows_running": (F.max("x").over(W.rowsBetween(Window.unboundedPreceding,
                                                       Window.currentRow)),
                         "max", [F.col("x")], (None,), False, Frame("rows", None, 0)),
        "range": (F.min("x").over(W.rangeBetween(-5, Window.unboundedFollowing)), "min",
                  [F.col("x")], (None,), False, Frame("range", -5, None)),
    }


@pytest.mark.parametrize("name", NAMES)
def test_window_column_reads_each_function_kind(spark, name):
    col, function, args, literals, distinct, frame = _cases()[name]
    wc = window_column(col)
    assert wc is not None, f"{name}: {col} was not read as a window column"
    assert (wc.function, wc.literals, wc.distinct, wc.frame) == (function, literals, distinct,
                                                                  frame)
    assert [str(a) for a in wc.args] == [str(a) for a in args]
    assert [str(p) for p in wc.partition] == [str(F.col("k"))]
    assert [(str(k.expr), k.ascending, k.nulls_first) for k in wc.order] == [
        (str(F.col("t")), True, True)]
    assert wc.text == str(col)
    # The function Column re-applies over another spec, as the split does.
    assert " OVER (" in str(wc.fn.over(Window.partitionBy("k2").orderBy("t")))


def test_window_column_reads_sort_directions_and_partition_expressions(spark):
    w = Window.partitionBy("k", F.col("j") + 1).orderBy(F.col("t").desc(),
                                                        F.col("u").asc_nulls_last())
    wc = window_column(F.sum("x").over(w))
    assert [str(p) for p in wc.partition] == [str(F.col("k")), str(F.col("j") + 1)]
    assert [(k.ascending, k.nulls_first) for k in wc.order] == [(False, False), (True, False)]
    assert window_column(F.sum("x").over(Window.partitionBy("k"))).order == ()


def test_window_column_is_none_for_a_column_that_is_not_a_window(spark):
    assert window_column(F.col("x") + 1) is None
    assert window_column(F.sum("x")) is None
