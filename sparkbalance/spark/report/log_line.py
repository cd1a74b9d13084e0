"""The INFO line of a balance record: what planned, imbalance before -> after, the hot key,
and :func:`log_info`, which makes sure a user who asked for those lines sees them.

Why :func:`log_info`: a script that sets ``logging.getLogger("sparkbalance").setLevel(
logging.INFO)`` but configures no handler (no ``logging.basicConfig``) gets Python's
last-resort handler, which prints WARNING and above only: the plan lines vanished while the
keyed-state controller's first line of each kind (a WARNING) did appear. When the logger is
enabled for INFO and no handler would receive the record, :func:`log_info` writes it to
stderr itself; with any handler configured, logging is left to it.

Examples
--------
>>> plan_log_line({"operation": "pkg", "strategy": "pkg", "planner": "PKGPartitioner"})
'sparkbalance: pkg: pkg (PKGPartitioner), loads not measured when planned (no key statistics), table 0'
"""
from __future__ import annotations

import logging
import sys
from typing import Any

from sparkbalance.spark.session.jobs import DESCRIPTION_PREFIX

__all__ = ["plan_log_line", "log_info"]

_FORMAT = logging.Formatter("%(levelname)s %(name)s: %(message)s")


def log_info(logger: logging.Logger, msg: str, *args: Any) -> None:
    """``logger.info(msg, *args)``, also shown (on stderr) when the user enabled INFO on
    ``logger`` or a parent but configured no handler, where Python would drop it.

    Examples
    --------
    >>> log = logging.getLogger("sparkbalance.doctest")
    >>> log.propagate = False
    >>> log_info(log, "plan %d", 1)          # WARNING, the default: nothing
    >>> log.setLevel(logging.INFO)
    >>> log_info(log, "plan %d", 2)          # INFO asked for, no handler: stderr  # doctest: +SKIP
    INFO sparkbalance.doctest: plan 2
    """
    if not logger.isEnabledFor(logging.INFO):
        return
    if logger.hasHandlers():
        logger.info(msg, *args)
        return
    handler = logging.StreamHandler(sys.stderr)   # the stderr of now (a test may swap it)
    handler.setFormatter(_FORMAT)
    handler.handle(logger.makeRecord(logger.name, logging.INFO, "(sparkbalance)", 0, msg,
                                     args, None))


def _ratio(peak: Any, mean: Any) -> float | None:
    return float(peak) / float(mean) if peak is not None and mean else None


def plan_log_line(rec: dict[str, Any]) -> str:
    """The INFO line of a plan record: strategy, imbalance before -> after, LB, table size,
    keys rerouted or moved, seconds, Spark jobs.

    Examples
    --------
    >>> plan_log_line({"operation": "repartition", "label": "repartition(k, 2, mixed)",
    ...                "strategy": "mixed", "planner": "RoutingTablePartitioner",
    ...                "max_before": 8.0, "avg_before": 5.0, "max_after": 6.0, "avg_after": 5.0,
    ...                "lower_bound": 6.0, "table_size": 3, "plan_seconds": 0.002})
    'sparkbalance: repartition(k, 2, mixed): mixed (RoutingTablePartitioner), imbalance 1.60 -> 1.20 (LB 1.20), table 3, plan 0.002 s'
    """
    def fmt(x: float | None) -> str:
        return "?" if x is None else f"{x:.2f}"

    mean = rec.get("avg_after") or rec.get("avg_before")
    parts = [f"{rec.get('strategy')} ({rec.get('planner')})"]
    if rec.get("max_before") is None and rec.get("max_after") is None:
        parts.append("loads not measured when planned (no key statistics)")
    else:
        est = " estimated" if rec.get("loads_after_estimated") else (
            f" measured ({rec.get('loads_unit')})" if rec.get("loads_measured") else "")
        parts.append(f"imbalance {fmt(_ratio(rec.get('max_before'), rec.get('avg_before')))} -> "
                     f"{fmt(_ratio(rec.get('max_after'), rec.get('avg_after')))}{est} "
                     f"(LB {fmt(_ratio(rec.get('lower_bound'), mean))})")
    hot = rec.get("hot_keys") or []
    if hot and hot[0].get("share") is not None:
        h = hot[0]
        where = h.get("after")
        where = ("+".join(sorted(where, key=int)) if isinstance(where, dict) else where)
        parts.append(f"hot key {h['key']!r} {100 * h['share']:.1f}% p{h.get('before')} -> "
                     f"p{where}")
    parts.append(f"table {rec.get('table_size', 0)}")
    if rec.get("keys_rerouted") is not None:
        parts.append(f"{rec['keys_rerouted']} keys rerouted")
    if rec.get("keys_moved") is not None:
        parts.append(f"{rec['keys_moved']} keys / {rec.get('bytes_moved', 0):.0f} B moved")
    if rec.get("plan_seconds") is not None:
        parts.append(f"plan {rec['plan_seconds']:.3g} s")
    if rec.get("seconds") is not None:
        parts.append(f"{rec['seconds']:.3g} s in all")
    if rec.get("job_ids"):
        parts.append(f"jobs {rec['job_ids']}")
    label = rec.get("label") or rec.get("operation")
    return f"{DESCRIPTION_PREFIX}{label}: " + ", ".join(parts)
