"""Balance records, job descriptions and log lines of a keyed-state operator.

:class:`~sparkbalance.state.operator.KeyedStateOperator` calls into this module at four
points, one line each:

* :func:`labelled` decorates ``process``, ``scale``, ``save_checkpoint`` and the settling
  of a pending migration: every Spark job they run carries a description ("sparkbalance:
  keyed state clicks batch 3", "sparkbalance: migrate 47 keys, 834 B, layout v3 → v4 of
  keyed state clicks"), the caller's own description restored afterwards;
* :func:`batch_description` is the description of the batch's merge job (its own job
  group), naming the migration that rides in it;
* :func:`post_batch` posts one ``"state"`` record per batch (loads under the layout the
  batch ran with, the lower bound, the plan when one was made, and the keys, bytes and
  seconds of the migration that rode in the batch's shuffle) and logs one INFO line per
  plan, a WARNING when the planner found no feasible plan or the controller refused the
  migration (each kind once per operator until a batch needs neither: a stream would
  repeat it every batch, also when the two kinds alternate);
* :func:`post_migration` logs every migration and posts one ``"migration"`` record for a
  migration run on its own (settled before a read of the state or a checkpoint, or
  ``scale``); a riding migration is reported in its batch's record instead, so each
  migration is in exactly one record.

The operator's name in the UI is its ``name`` attribute when set (``op.name = "clicks"``),
else ``keyed_state_<i>`` in creation order of first report. Lower bound (Fang et al. §3):
``max(total / n, largest key or key-group cost)``.
"""
from __future__ import annotations

import contextvars
import functools
import itertools
import logging
import time
import weakref
from typing import Any, Callable

import numpy as np

from sparkbalance.spark.report.balance_log import post
from sparkbalance.spark.session.jobs import DESCRIPTION_PREFIX, next_job_id, operation_jobs
from sparkbalance.spark.report.plan_report import plan_log_line
from sparkbalance.spark.report.hot_keys import hot_keys

__all__ = ["operator_name", "labelled", "batch_description", "post_batch", "post_migration"]

_LOG = logging.getLogger("sparkbalance")
_NAMES: "weakref.WeakKeyDictionary[Any, str]" = weakref.WeakKeyDictionary()
_COUNTER = itertools.count(1)
# Warning kinds already printed per operator, kept until a batch needs neither warning.
_WARNED: "weakref.WeakKeyDictionary[Any, set[str]]" = weakref.WeakKeyDictionary()
# First Spark job id of the running process()/scale() call, for the record's job ids.
_FIRST_JOB: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "sparkbalance_state_first_job", default=None)
# Migrations that rode in the running batch (a list until its record is posted).
_RIDING: contextvars.ContextVar[list | None] = contextvars.ContextVar(
    "sparkbalance_state_riding", default=None)


def operator_name(op: Any) -> str:
    """``op.name`` when set, else a stable ``keyed_state_<i>`` for this operator.

    Examples
    --------
    >>> class Op: name = "clicks"
    >>> operator_name(Op())
    'clicks'
    """
    name = getattr(op, "name", None)
    if name:
        return str(name)
    if op not in _NAMES:
        _NAMES[op] = f"keyed_state_{next(_COUNTER)}"
    return _NAMES[op]


def _unit(layout: Any) -> str:
    return "groups" if hasattr(layout, "num_groups") else "keys"


def _migration_text(op: Any, moves: int, nbytes: float, old: Any, new: Any) -> str:
    return (f"migrate {moves} {_unit(new)}, {nbytes:.0f} B, layout v{old.version} → "
            f"v{new.version} of keyed state {operator_name(op)}")


def batch_description(op: Any, seq: int) -> str:
    """Description of batch ``seq``'s merge job, with the migration riding in it.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> batch_description(NS(name="clicks", _pending=None), 3)
    'sparkbalance: keyed state clicks batch 3'
    """
    text = f"{DESCRIPTION_PREFIX}keyed state {operator_name(op)} batch {seq}"
    p = getattr(op, "_pending", None)
    if p is not None:
        text += ", " + _migration_text(op, p.planned_moves, p.planned_bytes, op._state.layout,
                                       p.layout)
    return text


def _description(op: Any, what: str, args: tuple) -> str:
    name = operator_name(op)
    if what == "batch":
        return f"{DESCRIPTION_PREFIX}keyed state {name} batch {op._seq}"
    if what == "scale":
        return f"{DESCRIPTION_PREFIX}scale keyed state {name} to {args[0]} partitions"
    if what == "settle" and op._pending is not None:
        p = op._pending
        return DESCRIPTION_PREFIX + _migration_text(op, p.planned_moves, p.planned_bytes,
                                                    op._state.layout, p.layout)
    return f"{DESCRIPTION_PREFIX}{what} keyed state {name}"


def labelled(what: str) -> Callable[[Callable], Callable]:
    """Decorate an operator method: its Spark jobs carry a description saying ``what``.

    ``what`` is "batch", "scale", "settle" (a pending migration moved on its own) or any
    other verb ("checkpoint"). Inside another labelled call the outer description stays.

    Examples
    --------
    >>> class Op:
    ...     sc = None
    ...     @labelled("checkpoint")
    ...     def save(self): return "saved"
    >>> Op().save()
    'saved'
    """
    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def run(op: Any, *args: Any, **kwargs: Any) -> Any:
            sc = getattr(op, "sc", None)
            if sc is None:
                return fn(op, *args, **kwargs)
            text = _description(op, what, args)
            label = text[len(DESCRIPTION_PREFIX):]
            token = _FIRST_JOB.set(next_job_id(sc)) if _FIRST_JOB.get() is None else None
            riding = _RIDING.set([]) if what == "batch" and token is not None else None
            try:
                with operation_jobs(sc, label, text):
                    return fn(op, *args, **kwargs)
            finally:
                if riding is not None:
                    _RIDING.reset(riding)
                if token is not None:
                    _FIRST_JOB.reset(token)
        return run
    return decorate


def _job_ids(op: Any) -> list[int]:
    first = _FIRST_JOB.get()
    last = next_job_id(op.sc) if first is not None else None
    return list(range(first, last)) if last is not None else []


def _common(op: Any, kind: str, operation: str, seq: int) -> dict[str, Any]:
    return {"kind": kind, "operation": operation, "operator": operator_name(op), "batch": seq,
            "strategy": op.planner, "planner": getattr(op.strategy, "name", op.planner),
            "key": getattr(op, "key_col", "key"), "job_ids": _job_ids(op)}


def _layout_text(layout: Any) -> str:
    if hasattr(layout, "num_groups"):
        return f"{layout.num_groups} key groups, v{layout.version}"
    return f"routing table {layout.table_size}, v{layout.version}"


def _warn_once(op: Any, kind: str, message: str, *args: Any) -> None:
    # A set per operator, not the last kind: "infeasible" and a refusal can alternate from
    # batch to batch, and remembering only the last would repeat both every other batch.
    seen = _WARNED.setdefault(op, set())
    level = logging.WARNING if kind not in seen else logging.DEBUG
    seen.add(kind)
    _LOG.log(level, message, *args)


def post_batch(op: Any, m: Any, decision: Any) -> dict[str, Any]:
    """Post the record of the batch just recorded in ``op.history`` (and log its plan).

    Parameters
    ----------
    op : the operator (its last ``history`` row is this batch).
    m : the batch's measurement (loads per physical partition, costs).
    decision : the layout decided for the next batch, None if the state stays.

    Examples
    --------
    >>> post_batch(op, m, decision)["kind"]           # doctest: +SKIP
    'state'
    """
    row = op.history[-1]
    loads = np.asarray(m.loads, dtype=np.float64)[np.asarray(m.active)]
    cost = np.asarray(m.cost, dtype=np.float64)
    n = max(int(loads.size), 1)
    rec = _common(op, "state", "batch", row.seq)
    rec.update(batch_id=row.batch_id, num_partitions=int(loads.size),
               loads_before=loads.tolist(),
               lower_bound=max(float(loads.sum()) / n, float(cost.max(initial=0.0))),
               layout=_layout_text(op.layout), table_size=row.table_size,  # used next
               decision=row.decision, seconds=row.batch_seconds, num_keys=row.num_keys,
               state_bytes=row.state_bytes, imbalance_before=row.imbalance_before,
               imbalance_after=row.imbalance_after)
    planned = decision is not None or op._plan_seconds > 0
    after, hot = _after(op, m)
    if after is not None:  # this batch's work under the layout the next batch runs with
        rec.update(loads_after=after.tolist(), avg_after=float(after.mean()),
                   max_after=float(after.max()))
    elif planned:
        avg = float(loads.mean()) if loads.size else 0.0
        rec.update(avg_after=avg, max_after=row.imbalance_after * avg)
    if planned:
        rec.update(plan_seconds=op._plan_seconds)
    if hot:
        rec.update(hot_keys=hot)
    riding = _RIDING.get() or []
    _RIDING.set(None)  # a migration settled later in this call (a checkpoint) posts its own
    if riding:
        # The move rode in this batch's shuffle but was decided (planned) after the batch
        # named by ``moved_for_batch``: the timeline draws it there.
        rec.update(keys_moved=sum(r.keys_moved for r in riding),
                   bytes_moved=sum(r.bytes_moved for r in riding),
                   migration_seconds=sum(r.seconds for r in riding),
                   migrated_to=f"v{riding[-1].layout_version}",
                   moved_for_batch=int(riding[-1].seq))
    if decision is not None:
        rec.update(keys_planned=decision.planned_moves, bytes_planned=decision.planned_bytes)
    rec = post(op.sc, rec)
    name = operator_name(op)
    if planned:
        _LOG.info("%s", plan_log_line(dict(rec, label=f"keyed state {name} batch {row.seq}")))
    j = getattr(op, "_judgement", None)
    if decision is not None and not getattr(decision, "feasible", True):
        _warn_once(op, "infeasible", "sparkbalance: keyed state %s batch %d: planner %s found "
                   "no plan within θ=%s (imbalance %.2f -> %.2f); using the best it found",
                   name, row.seq, op.planner, op.theta, row.imbalance_before,
                   row.imbalance_after)
    elif planned and decision is None and j is not None and j.reason == "does not pay":
        # a plan that would help was refused; "no better plan" is no refusal (INFO above)
        _warn_once(op, j.reason, "sparkbalance: keyed state %s batch %d: migration refused "
                   "(%s: imbalance %.2f, planned %.2f, predicted saving %.3g s vs cost %.3g s)",
                   name, row.seq, j.reason, j.imbalance, j.imbalance_planned, j.saving_s,
                   j.cost_s)
    else:
        _WARNED.pop(op, None)
    return rec


def _after(op: Any, m: Any) -> tuple[np.ndarray | None, list[dict[str, Any]]]:
    """This batch's loads under ``op.layout`` (the layout used next: after the plan, or the
    same layout when nothing moves) on the partitions it ran on, and its hot keys (table
    layouts) or hot key groups with their partition before and after; (None, []) when the
    next layout has another partition set (``scale``)."""
    try:
        layout, active = op.layout, np.asarray(m.active)
        cost = np.asarray(m.cost, dtype=np.float64)
        P = int(np.asarray(m.loads).size)
        if getattr(layout, "num_physical", P) != P:
            return None, []
        total = float(cost.sum())
        if m.keys is not None and m.where is not None:  # table layout: per key
            if layout.num_partitions != active.size:
                return None, []
            where = np.asarray(layout.fn.assign(m.keys), dtype=np.int64)
            after = np.bincount(where, weights=cost, minlength=P)[active]
            return after, hot_keys(m.keys, cost, cost, total, np.asarray(m.where), where)
        g2p = np.asarray(layout.group_to_partition(), dtype=np.int64)  # key groups
        if g2p.size != cost.size:
            return None, []
        after = np.bincount(g2p, weights=cost, minlength=P)[active]
        before = _before_groups(op, cost.size)
        groups = np.array([f"group {g}" for g in range(cost.size)], dtype=object)
        return after, hot_keys(groups, cost, cost, total, before, g2p)
    except Exception as exc:  # a report must never fail the batch
        _LOG.debug("no loads after for the batch record: %r", exc)
        return None, []


def _before_groups(op: Any, m: int) -> np.ndarray:
    """Where each key group ran this batch: the state's layout when it still holds the old
    one, else the next layout (nothing moved)."""
    state = getattr(getattr(op, "_at", None), "state", None)
    lay = getattr(state, "layout", None) or op.layout
    g2p = np.asarray(lay.group_to_partition(), dtype=np.int64)
    return g2p if g2p.size == m else np.full(m, -1)


def post_migration(op: Any, rec: Any) -> Any:
    """Post the record of a finished migration (a ``MigrationRecord``); returns ``rec``.

    Examples
    --------
    >>> post_migration(op, op.migrations[-1]).keys_moved     # doctest: +SKIP
    47
    """
    out = _common(op, "migration", "scale" if rec.reason == "scale" else "migrate", rec.seq)
    riding = _RIDING.get()
    if riding is not None:  # rode in the running batch: its record carries it
        riding.append(rec)
        _log_migration(op, rec, None)
        return rec
    out.update(num_partitions=rec.num_partitions_after,
               num_partitions_before=rec.num_partitions_before, reason=rec.reason,
               keys_moved=rec.keys_moved, bytes_moved=rec.bytes_moved,
               planned_bytes=rec.planned_bytes, migration_seconds=rec.seconds,
               frames_touched=rec.frames_touched, layout=f"v{rec.layout_version}",
               time=time.time())
    posted = post(op.sc, out)
    _log_migration(op, rec, posted.get("job_ids"))
    return rec


def _log_migration(op: Any, rec: Any, job_ids: list[int] | None) -> None:
    jobs = "" if job_ids is None else f", jobs {job_ids}"
    _LOG.info("%s", f"{DESCRIPTION_PREFIX}keyed state {operator_name(op)}: moved "
              f"{rec.keys_moved} {_unit(op._state.layout)}, {rec.bytes_moved:.0f} B "
              f"({rec.reason}) to layout v{rec.layout_version} in {rec.seconds:.3g} s{jobs}")
