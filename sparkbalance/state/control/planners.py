"""Which planners the keyed state runs, and the layout a fresh operator has.

Planner names come from the strategy registry (:mod:`sparkbalance.strategies`): the keyed
state runs the strategies of kinds :data:`STATE_KINDS` (one partition per key); a split
strategy (a key on several partitions) has no single home for its state and is refused.

Pure (no pyspark).
"""
from __future__ import annotations

from typing import Any

from sparkbalance import strategies
from sparkbalance.planning.checks import check_real
from sparkbalance.routing.base import check_num_partitions
from sparkbalance.routing.table import RoutingTable
from sparkbalance.state.control.layout import GroupLayout, TableLayout
from sparkbalance.state.control.payoff import TRIGGERS

__all__ = ["STATE_KINDS", "state_strategy",
           "state_planners", "check_theta", "check_trigger", "initial_layout"]

#: Layout kinds the keyed state can hold: one partition per key.
STATE_KINDS: tuple[str, ...] = ("hash", "table", "keygroups")


def state_planners() -> list[str]:
    """Registry names the keyed state accepts (the state-only ``"mtm"`` and
    ``"correlation"`` included; aliases ``"none"`` and ``"ssm"`` are accepted too).

    Examples
    --------
    >>> state_planners()[:2]
    ['hash', 'mixed']
    """
    return [n for n in strategies.available(state=True) if _runs_state(strategies.get(n))]


def _runs_state(spec: strategies.Strategy) -> bool:
    """One partition per key and a planner to re-plan with (or plain hash)."""
    return spec.kind in STATE_KINDS and (spec.kind == "hash" or spec.planner is not None)


def state_strategy(planner: Any) -> strategies.Strategy:
    """The registry record of ``planner`` (case-insensitive; aliases ``none`` → hash,
    ``ssm`` → keygroups) if the keyed state can run it.

    Examples
    --------
    >>> state_strategy("SSM").name, state_strategy("none").kind
    ('keygroups', 'hash')
    >>> state_strategy("pkg")
    Traceback (most recent call last):
    ...
    ValueError: planner='pkg' splits keys over several partitions (kind 'split'); the keyed state keeps each key on one partition: expected one of hash, mixed, mixedbf, mintable, minmig, readj, keygroups, mtm, correlation, correlation-pairwise (or the aliases none, ssm)
    """
    valid = f"{', '.join(state_planners())} (or the aliases none, ssm)"
    if not isinstance(planner, str):
        raise TypeError(f"planner={planner!r}; expected one of {valid}")
    try:
        spec = strategies.get(planner)
    except ValueError:
        raise ValueError(f"planner={planner!r}; expected one of {valid}") from None
    if spec.kind in STATE_KINDS and not _runs_state(spec):
        raise ValueError(f"planner={planner!r} fits a one-off partition function and has no "
                         f"planner to re-plan the keyed state with: expected one of {valid}")
    if spec.kind not in STATE_KINDS:
        raise ValueError(f"planner={planner!r} splits keys over several partitions (kind "
                         f"{spec.kind!r}); the keyed state keeps each key on one partition: "
                         f"expected one of {valid}")
    return spec


def check_theta(theta: Any) -> float:
    """θ_max of the keyed state, checked as the planners check it (a finite number >= 0)."""
    return check_real(theta, "theta")


def check_trigger(trigger: object) -> str:
    """Validate ``trigger`` (one of :data:`~sparkbalance.state.control.payoff.TRIGGERS`)."""
    if not isinstance(trigger, str) or trigger.lower() not in TRIGGERS:
        raise ValueError(f"trigger={trigger!r}; expected one of {', '.join(TRIGGERS)}")
    return trigger.lower()


def initial_layout(planner: str, num_partitions: int, num_groups: int | None = None
                   ) -> TableLayout | GroupLayout:
    """Layout of a fresh operator: plain hash (empty table) or equal key-group intervals.

    Examples
    --------
    >>> initial_layout("ssm", 2, 8).kind, initial_layout("mixed", 2).kind
    ('groups', 'table')
    """
    n = check_num_partitions(num_partitions)
    if state_strategy(planner).kind == "keygroups":
        return GroupLayout.initial(n, num_groups)
    return TableLayout(n, n, RoutingTable())
