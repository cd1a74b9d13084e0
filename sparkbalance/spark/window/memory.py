"""Whether a hot key's window fits a task's execution memory, and what spilling costs.

Spark's ``WindowExec`` buffers a window partition's whole group before it computes a frame
that is not a plain running one, and its sort buffers the task's rows: a hot key's rows
held by one task that do not fit the task's execution memory are written to a spill file
and read back. The unified memory manager gives execution and storage together
``(heap - 300 MiB) * spark.memory.fraction`` of an executor's heap, shared by the tasks it
runs at once; one task may take up to the whole pool when it runs alone, at least
``1 / (2 * running tasks)`` of it (Spark's ``ExecutionMemoryPool``). The hot task of a
window is the last one running, so on a local master (one JVM, every task one pool) it ends
with the whole pool, on a cluster with its executor's pool over the executor's cores.

:func:`spill_rows` counts the rows plain Spark's hot task writes out when the key does not
fit: :data:`BUFFERS` times the key's rows, as the sort before the window and the window's
own buffer each fill the memory, write their rows to a spill file and merge them back
(``bench_windows.py --memory-bound --metrics``: a key of 1.8*10^5 rows of ~1.1 KiB in a
127 MiB pool spilled 500 MiB, ~2.4 times its bytes). It is charged to plain Spark by
:func:`sparkbalance.spark.window.payoff.decide`; the split's ranges hold at most about a
mean partition each and fit where the hot key did not.

Examples
--------
>>> spill_rows(1_000_000.0, 400.0, 200 * 2**20)
2000000.0
>>> spill_rows(1_000.0, 400.0, 200 * 2**20)
0.0
"""
from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["RESERVED_BYTES", "BUFFERS", "task_memory", "plan_size", "row_bytes", "spill_rows",
           "parse_bytes"]

#: Heap the unified memory manager keeps out of its pool (Spark's ``RESERVED_SYSTEM_MEMORY``).
RESERVED_BYTES = 300 * 2 ** 20
#: Buffers of a window task that spill a key past memory: the sort's and the window's.
BUFFERS = 2
_UNITS = {"": 1, "b": 1, "k": 2 ** 10, "m": 2 ** 20, "g": 2 ** 30, "t": 2 ** 40}


def parse_bytes(text: str, default_unit: str = "m") -> int | None:
    """Bytes of a JVM memory setting (``"512m"``, ``"1g"``, ``"2048"`` in MiB), None if it
    is not one.

    Examples
    --------
    >>> parse_bytes("1g"), parse_bytes("512m"), parse_bytes("300"), parse_bytes("lots")
    (1073741824, 536870912, 314572800, None)
    """
    m = re.fullmatch(r"\s*(\d+)\s*([bkmgt]?)b?\s*", str(text).lower())
    if not m:
        return None
    return int(m.group(1)) * _UNITS[m.group(2) or default_unit]


def task_memory(df: Any) -> float | None:
    """Bytes of execution memory the window's hot task can hold (module docstring); None
    where the session does not say (Spark Connect, an unreadable setting)."""
    try:
        spark = df.sparkSession
        get = spark.conf.get
        master = str(get("spark.master", "") or "")
        fraction = float(get("spark.memory.fraction", "0.6") or 0.6)
        if master.startswith("local") and not master.startswith("local-cluster"):
            heap = parse_bytes(get("spark.driver.memory", "1g") or "1g")
            per_task = 1
        else:
            heap = parse_bytes(get("spark.executor.memory", "1g") or "1g")
            m = re.fullmatch(r"local-cluster\[\d+,\s*(\d+),\s*\d+\]", master)
            per_task = int(m.group(1)) if m else int(get("spark.executor.cores", "1") or 1)
    except Exception:
        return None
    if heap is None:
        return None
    return max(0.0, (heap - RESERVED_BYTES) * fraction / max(1, per_task))


def plan_size(d: Any) -> tuple[float | None, float | None]:
    """``(rows, bytes per row)`` of ``d`` from one read of its optimized plan's statistics
    (no job; ``(None, None)`` without a plan, as under Spark Connect).

    Rows: the plan's row count where it knows one (a cached, materialized relation; a
    range), else its size in bytes over Spark's estimated row width (None when the size is
    not finite). Bytes per row, as a task buffers it (an ``UnsafeRow``: a null word, 8 bytes
    a field, the variable-length values): the larger of the plan's size over its row count
    and the schema's default sizes."""
    try:
        schema = d._jdf.schema()
        default = float(schema.defaultSize())
        width = 8.0 * (1 + len(schema.fields())) + default
        st = d._jdf.queryExecution().optimizedPlan().stats()
        size = float(str(st.sizeInBytes()))
        rc = st.rowCount()
        known = float(str(rc.get())) if rc.isDefined() else None  # a Scala BigInt
    except Exception:   # Spark Connect (no _jdf), or a plan without statistics
        return None, None
    if known is not None:
        if known > 0:
            width = max(width, size / known)
        return max(1.0, known), width
    if not math.isfinite(size) or size >= 2.0 ** 62:
        return None, width
    return max(1.0, size / (8.0 + default)), width


def row_bytes(d: Any) -> float | None:
    """Estimated bytes of one of ``d``'s rows as a task buffers it (:func:`plan_size`)."""
    return plan_size(d)[1]


def spill_rows(hot_rows: float, bytes_per_row: float | None, memory: float | None) -> float:
    """Rows plain Spark's hot task writes to disk and reads back: :data:`BUFFERS` times the
    key's rows when its bytes exceed ``memory``, else none (none when either is unknown)."""
    if not bytes_per_row or memory is None:
        return 0.0
    return BUFFERS * float(hot_rows) if float(hot_rows) * bytes_per_row > memory else 0.0
