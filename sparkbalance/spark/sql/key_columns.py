"""Key arguments of the DataFrame adapters: column names or ``Column`` objects.

``sb.repartition(df, 8, F.col("user"))`` and ``sb.group_by(df, F.lower("user"))`` take what
``df.repartition`` and ``df.groupBy`` take. A simple column reference becomes its name; an
expression is computed once into a hidden helper column (``__sb_key<i>``) that the routing
keys on, and that the adapter drops again (``group_by`` renames it to the name Spark would
give the grouping expression, so the output columns equal plain Spark's).

Examples
--------
>>> kc = key_columns(df, [F.col("k") % 3])       # doctest: +SKIP
>>> kc.names, kc.hidden, kc.output                 # doctest: +SKIP
(['__sb_key0'], ['__sb_key0'], ['(k % 3)'])
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, Sequence

from sparkbalance.spark.sql import hash_columns as sqlhash

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

__all__ = ["KeyColumns", "key_columns", "HIDDEN_PREFIX"]

#: Prefix of the helper columns holding computed keys.
HIDDEN_PREFIX = "__sb_key"


class KeyColumns(NamedTuple):
    """Key columns resolved against a DataFrame."""

    #: The DataFrame with the helper columns of expression keys added.
    df: "DataFrame"
    #: Column names to key on, one per key argument (in ``df``).
    names: list[str]
    #: Helper columns added to ``df`` (to drop after the placement).
    hidden: list[str]
    #: The name plain Spark gives each key in a ``groupBy`` output.
    output: list[str]

    def rename(self, out: "DataFrame") -> "DataFrame":
        """``out`` with the helper key columns renamed as plain Spark names the keys."""
        for hidden, name in zip(self.names, self.output):
            if hidden != name and hidden in self.hidden:
                out = out.withColumnRenamed(hidden, name)
        return out


def _is_column(c: Any) -> bool:
    from pyspark.sql import Column
    if isinstance(c, Column):
        return True
    try:  # Spark Connect's Column on PySpark 3.5 is a class of its own
        from pyspark.sql.connect.column import Column as ConnectColumn
    except Exception:  # pragma: no cover - connect extras not installed
        return False
    return isinstance(c, ConnectColumn)


def _simple_name(df: "DataFrame", c: Any) -> tuple[str, bool]:
    """Spark's output name of ``c`` and whether ``c`` merely references that column."""
    sel = df.select(c)  # analysis only, no job
    name = sel.columns[0]
    if name not in df.columns:
        return name, False
    try:
        same = sel.sameSemantics(df.select(sqlhash.column_ref(df, name)))
    except Exception:  # noqa: BLE001 - an unanalysable comparison: treat as expression
        same = False
    return name, bool(same)


def key_columns(df: "DataFrame", cols: Sequence[Any]) -> KeyColumns:
    """Resolve key arguments (names or ``Column`` objects) to column names of a DataFrame.

    Parameters
    ----------
    df : the DataFrame.
    cols : column names (str) or ``Column`` objects (references or expressions).

    Returns
    -------
    KeyColumns
        ``df`` with a helper column per expression key, the names to key on, the helper
        columns added, and plain Spark's output name of each key.

    Examples
    --------
    >>> key_columns(df, ["k", F.col("v")]).names     # doctest: +SKIP
    ['k', 'v']
    """
    names: list[str] = []
    hidden: list[str] = []
    output: list[str] = []
    for i, c in enumerate(cols):
        if isinstance(c, str):
            names.append(c)
            output.append(c)
            continue
        if not _is_column(c):
            raise TypeError(f"key {c!r:.60} of type {type(c).__name__}; expected a column name "
                            "(str) or a pyspark.sql.Column")
        name, simple = _simple_name(df, c)
        if simple:
            names.append(name)
        else:
            helper = f"{HIDDEN_PREFIX}{i}"
            df = df.withColumn(helper, c)
            names.append(helper)
            hidden.append(helper)
        output.append(name)
    return KeyColumns(df, names, hidden, output)
