"""Window functions under the session-wide mode: ``df.withColumn(name, f.over(w))`` and
``df.withColumns({...})`` go through :func:`sparkbalance.with_window_columns` when a
window's partition key is skewed enough to pay.

A window partition is computed by one task, so a hot partition key makes one slow task
whatever the placement of the other keys; ``with_window_columns`` cuts a hot key into
ranges of the window's order and corrects each range's result, exactly. The hooks here
decide whether to hand a call to it:

* **only calls with a window column**: each column is read as a window function
  (:func:`sparkbalance.spark.window.spec.window_column`); a call without one reaches Spark
  at once and records no decision (``withColumn`` is the most common DataFrame call);
* **the check**: for each distinct ``PARTITION BY`` of the call's windows (a window
  without one is a single key holding every row) the bounded sample of :mod:`.check`
  predicts the slowest task plain Spark gives that window over an even split,
  :func:`sparkbalance.spark.enable.check.split_gain`; the call goes through
  ``with_window_columns`` when the best such gain is at least ``1 + check.minGain``,
  else it is Spark's own result. ``with_window_columns`` then measures each window's keys
  itself and may still compute a window as Spark does (too few rows to pay for its extra
  stage; ``spark.sparkbalance.window.split``): either way the result is
  ``df.withColumns(columns)``'s, row for row and column for column.

``select`` is left to Spark: a window there may sit inside a larger expression
(``F.rank().over(w) + 1``), carry a name Spark makes up, or stand beside ``*`` and
aggregates, and rewriting a projection into ``withColumns`` plus a projection would have to
reproduce Spark's naming and star expansion exactly; write the window with ``withColumn``
(or ``withColumns``) to have it balanced.

Examples
--------
>>> import sparkbalance as sb
>>> sb.enable(spark)                                                 # doctest: +SKIP
>>> w = Window.partitionBy("user").orderBy("ts")                     # doctest: +SKIP
>>> df.withColumn("rn", F.row_number().over(w))                      # doctest: +SKIP
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from sparkbalance.spark.enable import check
from sparkbalance.spark.enable.hooks import (EnableDecision, _busy, _from_user, _names, _on,
                                             _record)
from sparkbalance.spark.session import conf

__all__ = ["window_partitions", "window_hooks"]


def window_partitions(columns: Mapping[str, Any]) -> list[tuple] | None:
    """The distinct ``PARTITION BY`` expressions of the window columns among ``columns``
    (first seen first; ``()`` for a window without one), or None when no column is a
    window function sparkbalance can read.

    Examples
    --------
    >>> w = Window.partitionBy("user").orderBy("ts")                        # doctest: +SKIP
    >>> window_partitions({"rn": F.row_number().over(w), "x": F.col("v") + 1})  # doctest: +SKIP
    [(Column<'user'>,)]
    """
    from sparkbalance.spark.window.spec import window_column
    seen: dict[tuple[str, ...], tuple] = {}
    for c in columns.values():
        try:
            wc = window_column(c)
        except Exception:  # a Column this PySpark cannot take apart: Spark's own call
            wc = None
        if wc is not None:
            seen.setdefault(tuple(str(p) for p in wc.partition), tuple(wc.partition))
    return list(seen.values()) or None


def _window_call(df: Any, call: str, columns: dict[str, Any], plain: Any) -> Any:
    """Spark's result ``plain`` or ``with_window_columns``'s, as the check decides."""
    parts = window_partitions(columns)
    if parts is None:
        return plain
    from pyspark.sql import functions as F

    from sparkbalance.spark.sql import hash_columns as sqlhash
    from sparkbalance.spark.sql.key_columns import key_columns
    n = conf.default_partitions(df)
    first = _names(parts[0]) or ("<no PARTITION BY>",)
    if check.has_shuffle(df):
        _record(EnableDecision(call, first, n, False, None, 0,
                               "input is a shuffle's output: even a sample would cost a full "
                               "pass"))
        return plain
    rows = conf.resolve(df, "check.sample_rows")
    min_gain = conf.resolve(df, "check.min_gain")
    best: tuple[float, tuple[str, ...], int] | None = None
    for part in parts:
        keys = _names(part) or ("<no PARTITION BY>",)
        try:
            kc = key_columns(df, list(part) or [F.lit(0)])
            sqlhash.check_key_columns(kc.df, kc.names)
        except (TypeError, ValueError):
            continue        # a key the split cannot place: with_window_columns runs it plain
        try:
            got = check.sample_dataframe(kc.df, kc.names, n, rows)
        except Exception as exc:  # the check is an optimisation: never the reason a job fails
            _record(EnableDecision(call, keys, n, False, None, 0,
                                   f"check failed: {exc!r:.200}"))
            return plain
        if got.skipped is not None:   # one input: every window's keys come from it
            _record(EnableDecision(call, keys, n, False, None, 0,
                                   check.skipped_reason(got.skipped)))
            return plain
        if got.rows < check.MIN_SAMPLE_ROWS:
            continue
        gain = check.split_gain(got.counts, got.homes, got.rows, n)
        if best is None or gain > best[0]:
            best = (gain, keys, got.rows)
    if best is None:
        _record(EnableDecision(call, first, n, False, None, 0,
                               "no window key the check could sample and place"))
        return plain
    gain, keys, sampled = best
    if gain < 1.0 + min_gain:
        _record(EnableDecision(call, keys, n, False, gain, sampled,
                               f"gain below 1 + {min_gain:g}"))
        return plain
    from sparkbalance.spark.window.windows import with_window_columns
    out = with_window_columns(df, n, **columns)
    _record(EnableDecision(call, keys, n, True, gain, sampled,
                           f"gain >= 1 + {min_gain:g}: with_window_columns"))
    return out


def window_hooks(originals: dict[str, Callable]) -> dict[str, Callable]:
    """Hooks of ``DataFrame.withColumn`` and ``withColumns``."""
    orig_with_column, orig_with_columns = originals["withColumn"], originals["withColumns"]

    def withColumn(self: Any, colName: Any, col: Any) -> Any:
        plain = orig_with_column(self, colName, col)    # Spark's analysis (and errors) first
        if not (isinstance(colName, str) and _from_user() and _on(self)):
            return plain
        with _busy():
            return _window_call(self, "DataFrame.withColumn", {colName: col}, plain)

    def withColumns(self: Any, *colsMap: Any) -> Any:
        plain = orig_with_columns(self, *colsMap)
        if not (len(colsMap) == 1 and isinstance(colsMap[0], dict) and colsMap[0]
                and all(isinstance(k, str) for k in colsMap[0]) and _from_user()
                and _on(self)):
            return plain
        with _busy():
            return _window_call(self, "DataFrame.withColumns", dict(colsMap[0]), plain)

    return {"withColumn": withColumn, "withColumns": withColumns}
