"""Spark 4's ``transformWithStateInPandas`` arm of ``bench_stateful.py``: the same running
count per key, with the same I/O-like wait per record, written as a ``StatefulProcessor``
over one value state (Spark runs it on its RocksDB state store, which the operator needs).

``available()`` says why the arm cannot run (PySpark 3.5, no protobuf) or returns None;
``grouped_count(grouped, work_us)`` is the streaming DataFrame of ``(k, n)`` rows;
``state_store(spark)`` sets the state store the operator needs for the query it wraps and
puts the session's setting back after.
"""
from __future__ import annotations

import contextlib
import time

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
PROVIDER = "spark.sql.streaming.stateStore.providerClass"


def available() -> str | None:
    """None when ``transformWithStateInPandas`` can run here, else why not."""
    try:
        from pyspark.sql.pandas.group_ops import PandasGroupedOpsMixin
        import google.protobuf  # noqa: F401  (the operator's state client speaks protobuf)
    except ImportError as e:
        return f"transformWithStateInPandas needs PySpark 4 with protobuf: {e}"
    if not hasattr(PandasGroupedOpsMixin, "transformWithStateInPandas"):
        return "transformWithStateInPandas needs PySpark 4.0 or later"
    return None


def grouped_count(grouped, work_us: float):
    """``grouped.transformWithStateInPandas`` of a running count per key: one output row
    ``(k, n)`` per key and batch, ``work_us`` of slept wait per record."""
    import pandas as pd
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class RunningCount(StatefulProcessor):
        def init(self, handle) -> None:
            self.n = handle.getValueState("n", "n long")

        def handleInputRows(self, key, rows, timerValues):
            n = sum(len(p) for p in rows)
            if work_us:
                time.sleep(n * work_us * 1e-6)          # I/O-like work per record
            total = (self.n.get()[0] if self.n.exists() else 0) + n
            self.n.update((total,))
            yield pd.DataFrame({"k": [key[0]], "n": [total]})

        def close(self) -> None:
            pass

    return grouped.transformWithStateInPandas(RunningCount(), "k long, n long", "Update",
                                              "None")


@contextlib.contextmanager
def state_store(spark):
    """The RocksDB state store for the queries started inside; the session's own setting
    (or none) restored after."""
    before = spark.conf.get(PROVIDER, None)
    spark.conf.set(PROVIDER, ROCKSDB)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(PROVIDER)
        else:
            spark.conf.set(PROVIDER, before)
