"""Strategy registry: a name ("hash", "mixed", "pkg", ...) -> a fitted partition function.

Pure (no pyspark). The Spark adapters gather :class:`~sparkbalance.stats.KeyStats` when the
strategy needs them and call :func:`fit`. Each entry names its fitter lazily as
``"module:function"`` so that importing the registry stays cheap; a fitter has the shape::

    fit(stats: KeyStats | None, num_partitions: int, *,
        current: PartitionFunction | None = None, **params) -> PartitionFunction
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from .routing.base import PartitionFunction
    from .stats.keystats import KeyStats

__all__ = ["StrategySpec", "fit", "get", "available", "KEY_GROUPING", "SPLITTING"]


@dataclass(frozen=True)
class StrategySpec:
    """One strategy: its fitter, whether it needs key statistics, whether it splits keys."""

    name: str
    fitter: str
    needs_stats: bool
    splits_keys: bool
    doc: str = ""

    def load(self) -> Callable[..., "PartitionFunction"]:
        module, _, func = self.fitter.partition(":")
        return getattr(importlib.import_module(module), func)


def _hash_fit(stats: Any, num_partitions: int, *, current: Any = None, **params: Any
              ) -> "PartitionFunction":
    from .routing.hash import HashPartitioner
    if params:
        raise TypeError(f"strategy 'hash' takes no parameters; got {sorted(params)}")
    return HashPartitioner(num_partitions)


# name -> spec. One line per strategy; modules register themselves here by name.
_REGISTRY: dict[str, StrategySpec] = {
    "hash": StrategySpec("hash", "sparkbalance.strategies:_hash_fit", False, False,
                         "stable hash mod n"),
    "mixed": StrategySpec("mixed", "sparkbalance.planning.fit:fit_mixed", True, False,
                          "hash + routing table planned by Mixed (seed 000)"),
    "mintable": StrategySpec("mintable", "sparkbalance.planning.fit:fit_mintable", True, False,
                             "routing table planned by MinTable (seed 000)"),
    "minmig": StrategySpec("minmig", "sparkbalance.planning.fit:fit_minmig", True, False,
                           "routing table planned by MinMig (seed 000)"),
    "readj": StrategySpec("readj", "sparkbalance.planning.fit:fit_readj", True, False,
                          "routing table planned by Readj (Gedik 2014)"),
    "keygroups": StrategySpec("keygroups", "sparkbalance.planning.intervals.fit:fit_keygroups",
                              True, False, "key-group intervals planned by SSM (seed 003)"),
    "pkg": StrategySpec("pkg", "sparkbalance.routing.pkg:fit_pkg", False, True,
                        "Partial Key Grouping, two choices (seed 001)"),
    "dchoices": StrategySpec("dchoices", "sparkbalance.routing.choices:fit_dchoices", True, True,
                             "D-Choices for heavy hitters (Nasir et al. 2016)"),
    "wchoices": StrategySpec("wchoices", "sparkbalance.routing.choices:fit_wchoices", True, True,
                             "W-Choices for heavy hitters (Nasir et al. 2016)"),
    "tag": StrategySpec("tag", "sparkbalance.routing.tag:fit_tag", True, True,
                        "time-aware grouping (seed 004)"),
}

KEY_GROUPING = ("hash", "mixed", "mintable", "minmig", "readj", "keygroups")
SPLITTING = ("pkg", "dchoices", "wchoices", "tag")


def available() -> list[str]:
    """Names of all registered strategies."""
    return list(_REGISTRY)


def get(name: str) -> StrategySpec:
    """The spec of strategy ``name``; a clear error listing valid names otherwise."""
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ValueError(f"strategy={name!r}; expected one of {', '.join(_REGISTRY)}")
    return _REGISTRY[name]


def fit(name: str, stats: "KeyStats | None", num_partitions: int, *,
        current: "PartitionFunction | None" = None, **params: Any) -> "PartitionFunction":
    """Fit strategy ``name`` on ``stats`` and return its partition function.

    Example
    -------
    >>> fit("hash", None, 4).num_partitions
    4
    """
    spec = get(name)
    if spec.needs_stats and stats is None:
        raise ValueError(f"strategy {name!r} needs key statistics; got stats=None")
    return spec.load()(stats, num_partitions, current=current, **params)
