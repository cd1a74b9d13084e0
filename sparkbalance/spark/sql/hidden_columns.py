"""A user's grouped-map function over balanced groups, never seeing the helper columns.

Balanced groups are grouped by ``(pid, *keys)`` (:mod:`sparkbalance.spark.sql.grouped`):
the partition id :data:`~sparkbalance.spark.sql.route.PID_COL` and the helper column of each
expression key ride along in every frame. The wrappers here drop them from every frame and
``pid`` from the grouping key tuple of the two- and three-argument forms, keeping the
function's arity and type hints (Spark picks the form, and the iterator forms, from them).
"""
from __future__ import annotations

import inspect
import typing
from typing import Any, Callable

from sparkbalance.spark.sql.route import PID_COL

__all__ = ["hidden_columns", "pandas_dropper", "arrow_dropper", "wrap_grouped",
           "wrap_cogrouped", "has_arrow_api", "need_arrow"]


def hidden_columns(keys: Any) -> tuple[str, ...]:
    """The columns of placed rows that plain Spark's function would not see: the
    partition id, and the helper column of each expression key. Plain Spark passes a
    grouping expression's value in the key tuple only (its frames are the DataFrame's own
    columns, ``FlatMapGroupsInPandas`` over ``Project(keys ++ child.output)``); the helper
    column holds that same value, so the key tuple needs no change beyond dropping ``pid``. ``keys``: the
    :class:`~sparkbalance.spark.sql.key_columns.KeyColumns` of the grouping, or None."""
    hidden = keys.hidden if keys is not None else []
    return (PID_COL, *hidden)


def pandas_dropper(names: tuple[str, ...]) -> Callable[[Any], Any]:
    drop = list(names)

    def dropped(pdf: Any) -> Any:
        return pdf.drop(columns=drop)
    return dropped


def arrow_dropper(names: tuple[str, ...]) -> Callable[[Any], Any]:
    drop = frozenset(names)

    def dropped(table: Any) -> Any:
        # Table and RecordBatch both have .select(indices); keeps the user's column order.
        return table.select([i for i, n in enumerate(table.schema.names) if n not in drop])
    return dropped


def _arity(func: Callable) -> int:
    # The Python worker decides the form by exactly this count (pyspark worker.py:
    # len(inspect.getfullargspec(func).args)); the wrapper must take the same number.
    return len(inspect.getfullargspec(func).args)


def _hints(func: Callable, names: list[str]) -> dict[str, Any]:
    """The user's type hints renamed to the wrapper's parameters (Spark infers the iterator
    forms from them), or none when the user gave none."""
    try:
        hints = typing.get_type_hints(func)
    except Exception:  # unresolvable string hints: Spark would see the raw ones too
        hints = dict(getattr(func, "__annotations__", {}))
    if not hints:
        return {}
    params = inspect.getfullargspec(func).args
    out = {new: hints[old] for old, new in zip(params, names) if old in hints}
    if "return" in hints:
        out["return"] = hints["return"]
    return out


def wrap_grouped(func: Callable, drop: Callable[[Any], Any]) -> Callable:
    """``func`` over frames without the helper column and keys without ``pid``."""
    n = _arity(func)
    if n not in (1, 2):
        raise ValueError(f"func takes {n} positional arguments; expected 1 (data) or 2 "
                         "(key, data), as GroupedData.applyInPandas/applyInArrow")
    iterator = _is_iterator(func)
    if n == 2 and iterator:
        def call(key, data):
            return func(key[1:], (drop(b) for b in data))
    elif n == 2:
        def call(key, data):
            return func(key[1:], drop(data))
    elif iterator:
        def call(data):
            return func(drop(b) for b in data)
    else:
        def call(data):
            return func(drop(data))
    call.__annotations__ = _hints(func, ["key", "data"] if n == 2 else ["data"])
    call.__name__ = getattr(func, "__name__", "func")
    return call


def _is_iterator(func: Callable) -> bool:
    try:
        hints = typing.get_type_hints(func)
    except Exception:
        return False
    params = inspect.getfullargspec(func).args
    data = hints.get(params[-1]) if params else None
    name = getattr(data, "_name", getattr(data, "__name__", None))
    return name == "Iterator"


def wrap_cogrouped(func: Callable, drop_left: Callable[[Any], Any],
                    drop_right: Callable[[Any], Any]) -> Callable:
    """``func`` over each side's frame without that side's helper columns."""
    n = _arity(func)
    if n == 3:
        def call(key, left, right):
            return func(key[1:], drop_left(left), drop_right(right))
    elif n == 2:
        def call(left, right):
            return func(drop_left(left), drop_right(right))
    else:
        raise ValueError(f"func takes {n} positional arguments; expected 2 (left, right) or "
                         "3 (key, left, right), as PandasCogroupedOps.applyInPandas")
    call.__name__ = getattr(func, "__name__", "func")
    return call


def has_arrow_api() -> bool:
    """Whether this PySpark has ``GroupedData.applyInArrow`` (Spark 4.0 and later).

    Examples
    --------
    >>> isinstance(has_arrow_api(), bool)                                   # doctest: +SKIP
    True
    """
    from pyspark.sql import GroupedData
    return hasattr(GroupedData, "applyInArrow")


def need_arrow() -> None:
    if not has_arrow_api():
        import pyspark
        raise NotImplementedError(f"applyInArrow needs PySpark >= 4.0; this is "
                                  f"{pyspark.__version__} (use applyInPandas)")
