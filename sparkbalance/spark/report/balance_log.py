"""Balance records: a bounded in-process log, pushed to the Spark plugin when it is loaded.

Every balanced operation (an RDD or DataFrame plan, a keyed-state batch, a migration) is
one *record*, a flat JSON-able dict. :func:`post` appends it to the process-wide
:func:`balance_log` and, when the session runs ``io.sparkbalance.bridge.BalancePlugin``
(see :func:`sparkbalance.configure`), sends it to the driver JVM in **one** py4j call. The
plugin turns the records into metrics (``/metrics/json``, Prometheus), the Spark UI's
"Balance" tab and listener events in the event log (the History Server shows the same tab). Without the jar
or the plugin the records stay in the Python log and nothing fails.

Record fields (all optional except ``kind``; loads in the planner's cost unit):

==================  ====================================================================
``id``              assigned by the log: increasing in posting order, unique per process
``time``            epoch seconds (assigned when absent)
``kind``            ``"rdd"``, ``"dataframe"``, ``"state"`` (a keyed-state batch) or
                    ``"migration"``
``operation``       what ran, e.g. ``"repartition"``, ``"group_by"``, ``"batch"``
``key``             the key column(s) or key description
``strategy``        registry name (``"mixed"``, ``"ssm"``, ...); ``planner``: its planner
``num_partitions``  n
``loads_before``    per-partition loads before the plan (for a batch: as it ran)
``loads_after``     per-partition loads under the new plan
``max_before`` ...  ``max_/avg_before``, ``max_/avg_after``: filled from the loads if absent
``lower_bound``     the best max load any plan can reach (LB)
``table_size``      routing-table entries; ``layout``: key-group layout, e.g. ``"v4"``
``keys_moved``      keys migrated; ``bytes_moved``: their state bytes
``plan_seconds``    planning time (a record with it counts as a plan)
``migration_seconds``  migration time (a record with it or ``keys_moved > 0`` counts as a
                    migration; report each migration in exactly one record)
``job_ids``         Spark job ids the operation ran
``operator``        keyed-state operator name: its records form the per-batch timeline
``batch``           batch number within the operator
``description``     the job description the operation's jobs carried
``label``           the operation as its jobs name it, e.g. ``"repartition(user_id, 64,
                    mixed)"``; ``seconds``: the whole call
==================  ====================================================================

Other keys are kept and shown in the record's JSON (e.g. ``keys_rerouted`` of a plan with
``current=``, ``decision`` and ``imbalance_before/after`` of a keyed-state batch). The
operations post through :mod:`sparkbalance.spark.report.plan_report` (RDD and DataFrame plans) and
:mod:`sparkbalance.state.control.report` (keyed-state batches and migrations).
"""

from __future__ import annotations

import collections
import itertools
import json
import logging
import math
import threading
import time
from typing import Any, Iterator, Mapping

from sparkbalance.spark.session.bridge import PLUGIN_CLASS

__all__ = [
    "PLUGIN_CLASS",
    "DEFAULT_MAX_RECORDS",
    "RECORD_KINDS",
    "BalanceLog",
    "push",
    "balance_log",
    "post",
    "plugin_active",
    ]

_LOG = logging.getLogger(__name__)

#: Records kept by the log; the same default as the plugin's ``spark.sparkbalance.ui.maxRecords``
#: (a few thousand: a long stream cannot exhaust driver memory).
DEFAULT_MAX_RECORDS = 3000
#: Valid values of a record's ``kind``.
RECORD_KINDS = ("rdd", "dataframe", "state", "migration")


def _clean(value: Any) -> Any:
    """A JSON-able copy: numpy scalars/arrays to Python, tuples to lists, NaN/inf to None."""
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    tolist = getattr(value, "tolist", None)  # numpy scalar or array, without importing numpy
    if callable(tolist):
        return _clean(tolist())
    raise TypeError(f"record value {value!r} of type {type(value).__name__} is not JSON-able; "
                    f"expected str, number, bool, None, list or dict")


def _summarise(rec: dict[str, Any]) -> None:
    """Fill ``max_/avg_before|after`` from the loads when absent (one pass over n values)."""
    for which in ("before", "after"):
        loads = [x for x in rec.get(f"loads_{which}") or () if x is not None]
        if loads:
            rec.setdefault(f"max_{which}", max(loads))
            rec.setdefault(f"avg_{which}", sum(loads) / len(loads))


class BalanceLog:
    """Bounded, thread-safe log of balance records (the oldest are dropped first).

    Parameters
    ----------
    max_records : int
        Records kept, >= 1.

    Examples
    --------
    >>> log = BalanceLog(max_records=2)
    >>> for n in (4, 8, 16):
    ...     _ = log.append({"kind": "rdd", "num_partitions": n, "loads_before": [3, 1]})
    >>> [r["num_partitions"] for r in log.records()], log.records()[-1]["max_before"]
    ([8, 16], 3)
    """

    def __init__(self, max_records: int = DEFAULT_MAX_RECORDS) -> None:
        if int(max_records) < 1:
            raise ValueError(f"max_records={max_records}; expected >= 1")
        self._records: collections.deque[dict[str, Any]] = collections.deque(
            maxlen=int(max_records))
        self._ids = itertools.count()  # never reset: ids stay unique in the plugin's store
        self._lock = threading.Lock()

    @property
    def max_records(self) -> int:
        return int(self._records.maxlen or 0)

    def append(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """Validate, complete (``id``, ``time``, max/avg) and store a copy; return it."""
        rec = _clean(dict(record))
        kind = rec.get("kind")
        if kind not in RECORD_KINDS:
            raise ValueError(f"record kind={kind!r}; expected one of {RECORD_KINDS}")
        rec.setdefault("time", time.time())
        _summarise(rec)
        with self._lock:
            rec["id"] = next(self._ids)
            self._records.append(rec)
        return rec

    def records(self, kind: str | None = None, operator: str | None = None
                ) -> list[dict[str, Any]]:
        """Stored records, oldest first, optionally of one ``kind`` and/or ``operator``."""
        with self._lock:
            out = list(self._records)
        return [r for r in out if (kind is None or r.get("kind") == kind)
                and (operator is None or r.get("operator") == operator)]

    def last(self) -> dict[str, Any] | None:
        with self._lock:
            return self._records[-1] if self._records else None

    def clear(self) -> None:
        with self._lock:
            self._records.clear()

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.records())


_BALANCE_LOG = BalanceLog()


def balance_log() -> BalanceLog:
    """The process-wide log every sparkbalance operation posts to.

    Examples
    --------
    >>> balance_log().max_records
    3000
    """
    return _BALANCE_LOG


class _Push:
    """The JVM's ``BalancePlugin.post`` member for one SparkContext, looked up once.

    py4j resolves ``jvm.io.sparkbalance...`` one name per round trip; keeping the bound
    member makes each record exactly one call.
    """

    lock = threading.Lock()
    jsc: Any = None
    member: Any = None  # None: the plugin is not running in that context


def _context(spark: Any) -> Any:
    try:
        return getattr(spark, "sparkContext", spark)
    except Exception:  # Spark Connect sessions have no SparkContext
        return None


def _member(spark: Any) -> Any:
    sc = _context(spark)
    jsc = getattr(sc, "_jsc", None)
    if jsc is None:
        return None
    with _Push.lock:
        if _Push.jsc is not jsc:
            _Push.jsc, _Push.member = jsc, None
            wanted = False
            try:
                wanted = PLUGIN_CLASS in str(sc.getConf().get("spark.plugins", ""))
                if wanted:
                    cls = sc._jvm.io.sparkbalance.bridge.BalancePlugin
                    if cls.isActive():
                        _Push.member = cls.post
            except Exception as exc:  # jar absent: py4j gives a JavaPackage, calls fail
                _LOG.debug("balance plugin not reachable: %s", exc)
            if wanted and _Push.member is None:  # asked for, not running: say so once
                _LOG.warning("sparkbalance: spark.plugins names %s but it is not running "
                             "(bridge jar not on the driver class path?); balance records "
                             "stay in sparkbalance.balance_log() only", PLUGIN_CLASS)
        return _Push.member


def plugin_active(spark: Any) -> bool:
    """True when ``spark`` runs :data:`PLUGIN_CLASS` (records then reach the Spark UI).

    Examples
    --------
    >>> plugin_active(None)
    False
    """
    return _member(spark) is not None


def post(spark: Any, record: Mapping[str, Any]) -> dict[str, Any]:
    """Log one balance record and push it to the Spark plugin when that is loaded.

    Appends to :func:`balance_log` (always), then, if ``spark`` (a SparkSession or
    SparkContext) runs :data:`PLUGIN_CLASS`, sends the record as one JSON string in a
    single py4j call. Otherwise nothing else happens: no error (one WARNING per
    SparkContext when ``spark.plugins`` names the plugin but it is not running).

    Parameters
    ----------
    spark : SparkSession, SparkContext or None
    record : mapping
        Fields as in the module docstring; ``kind`` is required.

    Returns
    -------
    dict
        The stored record (with ``id``, ``time`` and max/avg loads filled in).

    Examples
    --------
    >>> rec = post(None, {"kind": "rdd", "operation": "partition_by", "num_partitions": 2,
    ...                   "loads_before": [9.0, 1.0], "loads_after": [5.0, 5.0],
    ...                   "lower_bound": 5.0, "plan_seconds": 0.002})
    >>> rec["max_before"], rec["avg_after"], balance_log().last() is rec
    (9.0, 5.0, True)
    """
    rec = balance_log().append(record)
    push(spark, rec)
    return rec


def push(spark: Any, rec: dict[str, Any]) -> None:
    """Send the stored record ``rec`` to the Balance plugin when it runs (again, under the
    same ``id``, after its loads were measured: the tab's row is replaced)."""
    member = _member(spark) if spark is not None else None
    if member is not None:
        try:
            if member(json.dumps(rec, allow_nan=False)) < 0:  # context stopped meanwhile
                with _Push.lock:
                    _Push.jsc = _Push.member = None
        except Exception as exc:  # the UI must never break the user's job
            _LOG.debug("could not push balance record %s: %s", rec["id"], exc)

