"""Whether splitting a window's hot keys can pay, decided from the one statistics pass.

Plain Spark computes a window partition in one task, so its slowest task holds the hottest
key's rows plus its share of the rest: ``c_max + (N - c_max) / n``. The split evens the
tasks out to about ``N / n`` but adds a stage of its own (the per-range summaries), a few
hidden columns and the halo copies. It pays when the slowest task shrinks a lot and the
hot key is large enough that its task's time outweighs that fixed cost:

* ``gain = (c_max + (N - c_max) / n) / (N / n) >= MIN_GAIN`` (1.5: one key holding 4 % of
  the rows over 16 partitions is the limit; below it AQE-free hashing is already within
  1.5x of the mean), and
* ``c_max >= MIN_HOT_ROWS`` rows (below it one task sorts and scans the key in well under
  the ~0.2 s an extra stage costs on a local machine, measured by
  ``integration/benchmarks/bench_windows.py``).

Otherwise the columns run as plain Spark runs them (one exchange, hash placement, AQE), with
one INFO line on the ``sparkbalance.window`` logger saying why. The session setting
``spark.sparkbalance.window.split`` overrides the rule: ``auto`` (default), ``always``
(split every hot key: tests exercise the split on small data), ``never``.

Examples
--------
>>> decide(np.array([60_000.0, 30.0]), 200_000.0, 16, "auto")
(True, 'hot key holds 60000 rows; the slowest task shrinks 5.5x')
>>> decide(np.array([300.0, 30.0]), 1_000.0, 4, "auto")[0]
False
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["MIN_GAIN", "MIN_HOT_ROWS", "SPLIT_CONF", "MODES", "split_mode", "decide"]

#: Smallest shrink of the slowest task worth the split's own stage.
MIN_GAIN = 1.5
#: Fewest rows of the hottest key worth splitting (see the module docstring).
MIN_HOT_ROWS = 50_000
#: Session setting that overrides the rule.
SPLIT_CONF = "spark.sparkbalance.window.split"
MODES = ("auto", "always", "never")


def split_mode(df: Any) -> str:
    """The session's ``spark.sparkbalance.window.split`` (``auto`` when unset)."""
    try:
        mode = df.sparkSession.conf.get(SPLIT_CONF, "auto")
    except Exception:  # a session without this conf API: the default
        mode = "auto"
    mode = str(mode or "auto").strip().lower()
    if mode not in MODES:
        raise ValueError(f"{SPLIT_CONF}={mode!r}; expected one of {', '.join(MODES)}")
    return mode


def decide(hot_counts: np.ndarray, total: float, num_partitions: int, mode: str
           ) -> tuple[bool, str]:
    """(split?, why): ``hot_counts`` the rows of the hot keys, heaviest first."""
    if mode == "never":
        return False, f"{SPLIT_CONF}=never"
    if len(hot_counts) == 0:
        return False, "no key holds more than half a partition's mean rows"
    n, top = int(num_partitions), float(hot_counts[0])
    mean = max(total / n, 1.0)
    gain = (top + max(0.0, total - top) / n) / mean
    why = f"hot key holds {top:.0f} rows; the slowest task shrinks {gain:.1f}x"
    if mode == "always":
        return True, why
    if gain < MIN_GAIN:
        return False, why + f" (< {MIN_GAIN}x: the split's own stage would cost more)"
    if top < MIN_HOT_ROWS:
        return False, why + f" (fewer than {MIN_HOT_ROWS} rows: one task is quicker)"
    return True, why
