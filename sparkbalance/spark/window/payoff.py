"""Whether splitting a window's hot keys can pay, decided from the statistics.

Plain Spark computes a window partition in one task, so its slowest task holds the hottest
key's rows plus its share of the rest, ``T = c + (N - c) / n``, while the job's ``N`` rows
need at least ``N / P`` on ``P`` cores: a CPU-bound window takes about ``max(T, N / P)``.
The split evens the tasks out, so it saves the hot task's **excess** over the even share,
``T - N / P``, but it costs work of its own, spread over the same cores: the statistics
pass reads every row, the map stage computes each row's hot index, segment, halo targets
and partition, the summaries read the hot keys' rows again, and the window stage sorts on
more keys and carries a few hidden columns. Both are counted in *row-equivalents* (one:
the time plain Spark spends on one row: exchange, sort, window):

* ``excess = c + (N - c) / n - N / P`` (``c (1 - 1/n)`` when there is a core per partition)
* ``cost = OVERHEAD_PER_ROW * N / P + FIXED_ROWS``, ``P`` the cores the job runs on (at most
  ``n``), fitted from ``--metrics`` of ``integration/benchmarks/bench_windows.py`` (the
  memory case: a whole-partition sum, lag and a 21-row average; rows of ~100 bytes, which
  do not spill, on ``local-cluster[4,1,512]``; 3*10^5 and 6*10^5 rows, keys of 30 % and
  90 %): the split's task CPU over plain Spark's per row, +0.25 to +0.5 (the upper end
  taken), and its CPU outside the tasks, +1.4 to +5.8 s a call whatever the rows (the
  driver's planning, and the JIT of a plan of ~44 operators in every JVM), about 4.5 s:
  over 2 cores, ~160,000 rows of plain Spark's work on the kilobyte rows of the
  memory-bound set-up (8.2 s of task CPU over 6*10^5 rows where it does not spill).

When the hot key's rows do not fit the execution memory of the task holding them
(:mod:`sparkbalance.spark.window.memory`: its rows times their estimated bytes against the
executor's memory pool over the tasks it runs at once), plain Spark's hot task also writes
its rows to spill files and reads them back (its sort's and its window's buffer):
``SPILL_PER_ROW`` row-equivalents a spilled row are added to the excess (the split's ranges
hold at most about a mean partition each and fit where plain Spark's cold partitions fit).

The split is taken when ``excess >= cost``. What the query does per row after the window
(a UDF, a write, a wait on I/O) runs in the same task: CPU work there raises plain Spark's
and the split's work alike, but time the task spends waiting is paid serially by plain
Spark's hot task only, so with enough cores for every partition the excess is a lower
bound and a split the rule refuses may still have paid (``always`` takes it).

Otherwise the columns run as plain Spark runs them (one exchange, hash placement, AQE), with
one INFO line on the ``sparkbalance.window`` logger saying why. The session setting
``spark.sparkbalance.window.split`` overrides the rule: ``auto`` (default), ``always``
(split every hot key: tests exercise the split on small data), ``never``.

Examples
--------
>>> decide(np.array([300_000.0, 30.0]), 1_000_000.0, 16, "auto", cores=16)[0]
True
>>> decide(np.array([900_000.0, 30.0]), 1_000_000.0, 16, "auto", cores=2)
(False, 'hot key holds 900000 rows, its task 406250 more than an even share of 2 cores; the split costs ~410000 row-equivalents')
>>> decide(np.array([900_000.0, 30.0]), 1_000_000.0, 16, "auto", cores=2,
...        bytes_per_row=500.0, memory=128 * 2**20)[0]
True
"""
from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from sparkbalance.spark.session import conf
from sparkbalance.spark.window.memory import spill_rows

__all__ = ["OVERHEAD_PER_ROW", "FIXED_ROWS", "SPILL_PER_ROW", "SPLIT_CONF", "CORES_CONF", "MODES", "split_mode",
           "cores",
           "split_cost", "decide"]

#: The split's extra work per input row, in row-equivalents (plain Spark's work per row):
#: its task CPU over plain Spark's, ``--metrics`` of the memory case (module docstring).
OVERHEAD_PER_ROW = 0.5
#: The split's cost per call, in row-equivalents: its CPU outside the tasks (planning and
#: compiling its larger plan in every JVM; the statistics jobs' and summaries' stages).
FIXED_ROWS = 160_000.0
#: Plain Spark's extra work per hot row its task cannot hold in memory, in row-equivalents:
#: the row serialised, compressed and written to a spill file, then read back (about what
#: its shuffle write and read cost it, a share of the one row-equivalent).
SPILL_PER_ROW = 1.0
#: Session setting that overrides the rule (registered in
#: :data:`sparkbalance.spark.session.conf.KEYS` as ``window.split``).
SPLIT_CONF = conf.CONF_WINDOW_SPLIT
#: Session setting naming the cores the rule assumes (an int >= 1), instead of the slots
#: the session reports capped by this machine's cores on a local master: e.g. ``16`` on
#: ``local[16]`` taken as the 16-core cluster it emulates (``window.cores``).
CORES_CONF = conf.CONF_WINDOW_CORES
MODES = conf.WINDOW_MODES


def split_mode(df: Any) -> str:
    """The session's ``spark.sparkbalance.window.split`` (``auto`` when unset); a bad value
    is a ValueError naming the key, as every ``spark.sparkbalance.*`` setting's."""
    return conf.resolve(df, "window.split")


def cores(df: Any, num_partitions: int) -> int:
    """Cores the window's tasks run on, at most ``num_partitions``: :data:`CORES_CONF` when
    set, else the session's default parallelism (its executors' cores), capped by this
    machine's cores for a ``local`` or ``local-cluster`` master (its threads or executors
    share them); ``num_partitions`` when the session does not say (Spark Connect)."""
    n = max(1, int(num_partitions))
    named = conf.read(df, "window.cores")   # a bad value fails here, naming its key
    if named is not None:
        return min(n, named)
    try:
        spark = df.sparkSession
        master = str(spark.conf.get("spark.master", "") or "")
    except Exception:
        return n
    try:
        slots = int(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect: no SparkContext
        slots = _slots_of(master) or n
    if master.startswith("local"):
        slots = min(slots, _machine_cores())
    return max(1, min(n, slots))


def _slots_of(master: str) -> int | None:
    m = re.fullmatch(r"local\[(\d+)(?:,\d+)?\]", master)
    if m:
        return int(m.group(1))
    m = re.fullmatch(r"local-cluster\[(\d+),\s*(\d+),\s*\d+\]", master)
    if m:
        return int(m.group(1)) * int(m.group(2))
    return None


def _machine_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def split_cost(total: float, num_cores: int) -> float:
    """The split's own cost in row-equivalents (module docstring).

    Examples
    --------
    >>> split_cost(1_000_000.0, 2)
    410000.0
    """
    return OVERHEAD_PER_ROW * float(total) / max(1, int(num_cores)) + FIXED_ROWS


def decide(hot_counts: np.ndarray, total: float, num_partitions: int, mode: str,
           cores: int | None = None, bound: bool = False, bytes_per_row: float | None = None,
           memory: float | None = None) -> tuple[bool, str]:
    """(split?, why): ``hot_counts`` the rows of the hot keys, heaviest first (with
    ``bound``, upper bounds of them: the first look's); ``cores`` the cores the tasks run
    on (default ``num_partitions``); ``bytes_per_row`` and ``memory`` (the bytes a task can
    hold), when known, charge plain Spark the hot key's spill."""
    if mode == "never":
        return False, f"{SPLIT_CONF}=never"
    if len(hot_counts) == 0:
        return False, ("no key holds more than half a partition's mean rows" if not bound else
                       "no key can hold more than half a partition's mean rows")
    n = max(1, int(num_partitions))
    p = max(1, min(n, n if cores is None else int(cores)))
    top, total = float(hot_counts[0]), float(total)
    spill = spill_rows(top, bytes_per_row, memory)
    excess = top + (total - top) / n - total / p + SPILL_PER_ROW * spill
    cost = split_cost(total, p)
    holds = "holds at most" if bound else "holds"
    spills = f" (spilling ~{spill:.0f} rows)" if spill > 0 else ""
    why = (f"hot key {holds} {top:.0f} rows{spills}, its task {excess:.0f} more than an even "
           f"share of {p} core{'s' if p > 1 else ''}; the split costs ~{cost:.0f} "
           "row-equivalents")
    if mode == "always" or excess >= cost:
        return True, why
    return False, why
