"""A strategy resolved once: the checked, immutable record an adapter call passes down.

:func:`sparkbalance.strategies.resolve` builds it (the name looked up, the session's
``spark.sparkbalance.*`` settings merged in, the parameters checked), and every layer below
the adapter reads it: the statistics step (``needs_stats``, ``sample_fraction``), the
zero-pass shuffle (``map_output``), the fitter (:meth:`ResolvedStrategy.fit`) and the
keyed-state controller (:meth:`ResolvedStrategy.planner`). No layer below looks the name
up or checks the parameters again.

Pure (no pyspark).
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Mapping

if TYPE_CHECKING:  # annotations only
    from sparkbalance.routing.base import PartitionFunction
    from sparkbalance.stats.keystats import KeyStats
    from sparkbalance.strategies import Strategy

__all__ = ["ResolvedStrategy", "frozen", "map_output_options", "check_values",
           "bounded_auto", "MAP_OUTPUT_PARAMS"]

#: Parameters of the zero-pass path of the RDD adapters (the rest of "auto"'s are Mixed's).
MAP_OUTPUT_PARAMS = ("min_gain", "num_groups", "balance")


def frozen(params: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """A read-only copy of ``params`` (the record's parameters cannot change after the check).

    Examples
    --------
    >>> p = frozen({"theta": 0.1})
    >>> dict(p), isinstance(p, dict)
    ({'theta': 0.1}, False)
    """
    return MappingProxyType(dict(params or {}))


@dataclass(frozen=True)
class ResolvedStrategy:
    """One adapter call's strategy, looked up and checked once.

    Attributes
    ----------
    spec : the registry record (None when the caller passed an already fitted function).
    params : the strategy's parameters, checked against the registry, the session's
        ``spark.sparkbalance.theta`` / ``maxTable`` merged in for routing-table strategies.
    function : an already fitted partition function (no statistics, no fitting), or None.
    sample_fraction : fraction of records the statistics read (None: exact statistics).
    map_output : the options of the zero-pass shuffle (``min_gain``, ``num_groups``,
        ``balance``) when the call takes that path, else None.
    bounded : the statistics are a bounded estimate (a sample of at most a fixed number
        of records from a few input partitions), not a pass over the input: strategy
        "auto" where the shuffle's own counts cannot be had (:func:`bounded_auto`); it
        fits key groups on them (:func:`sparkbalance.strategies.auto.fit_sampled`).

    Examples
    --------
    >>> from sparkbalance import strategies
    >>> r = strategies.resolve("mixed", {"theta": 0.1})
    >>> r.name, r.kind, r.splits_keys, r.theta, r.max_table
    ('mixed', 'table', False, 0.1, 3000)
    """

    spec: "Strategy | None"
    params: Mapping[str, Any]
    function: "PartitionFunction | None" = None
    sample_fraction: float | None = None
    map_output: Mapping[str, Any] | None = None
    bounded: bool = False

    @property
    def name(self) -> str:
        """The canonical registry name, or the fitted function's class name."""
        return self.spec.name if self.spec is not None else type(self.function).__name__

    @property
    def kind(self) -> str:
        """Layout kind (``"hash"``, ``"table"``, ``"keygroups"``, ``"split"``)."""
        if self.spec is not None:
            return self.spec.kind
        return "split" if self.function.splits_keys else "fitted"

    @property
    def splits_keys(self) -> bool:
        """Whether one key may go to several partitions."""
        if self.spec is not None:
            return self.spec.splits_keys
        return bool(self.function.splits_keys)

    @property
    def needs_stats(self) -> bool:
        """Whether fitting reads key statistics (never for a fitted function or zero-pass)."""
        return self.spec is not None and self.map_output is None and self.spec.needs_stats

    @property
    def theta(self) -> float | None:
        """θ_max the planner balances to (Fang et al. §3), None if the strategy has none."""
        return self._setting("theta")

    @property
    def max_table(self) -> int | None:
        """A_max, the routing-table bound (Fang et al. §2.2), None if unbounded or unused."""
        return self._setting("max_table")

    def _setting(self, name: str) -> Any:
        if name in self.params:
            return self.params[name]
        return self.spec.defaults.get(name) if self.spec is not None else None

    def planner_class(self) -> type | None:
        """The planner class the registry names for this strategy (None: it plans nothing)."""
        return self.spec.planner_class() if self.spec is not None else None

    def planner(self, **defaults: Any) -> Any:
        """A planner built from the record's parameters; ``defaults`` fill in the ones the
        record does not set (the keyed state's θ aimed at, its A_max...).

        Examples
        --------
        >>> from sparkbalance import strategies
        >>> p = strategies.resolve("mintable", {"theta": 0.2}).planner(theta=0.5, max_table=10)
        >>> p.theta, p.max_table
        (0.2, 10)
        """
        cls = self.planner_class()
        if cls is None:
            raise ValueError(f"strategy {self.name!r} has no planner")
        return cls(**{**defaults, **self.params})

    def fit(self, stats: "KeyStats | None", num_partitions: int, *,
            current: "PartitionFunction | None" = None, **measured: Any
            ) -> "PartitionFunction":
        """The partition function of this strategy on ``stats`` (the fitted one as given).

        ``measured`` are inputs measured for this fit, not parameters the caller chose
        (TAG's ``completion_times`` from the task times of ``weights="time"``).

        Examples
        --------
        >>> from sparkbalance import strategies
        >>> strategies.resolve("hash").fit(None, 4).num_partitions
        4
        """
        if self.function is not None:
            return self.function
        from sparkbalance import strategies   # the registry's one fitting entry point
        return strategies.fit(self.name, stats, num_partitions, current=current, resolved=self,
                              **{**self.params, **measured})


def map_output_options(spec: "Strategy", params: dict[str, Any],
                       loaded: Callable[[], bool] | None, asked: bool) -> dict[str, Any] | None:
    """The zero-pass options (popped from ``params``) when the call takes that path: strategy
    "auto" with only its zero-pass parameters, or ``stats="map-output"``; else None."""
    if loaded is None and not asked:
        return None
    if spec.name != "auto":
        if asked:
            raise ValueError("stats='map-output' plans key groups from the shuffle's sizes: "
                             f"strategy must be 'auto' or None; got {spec.name!r}")
        return None
    other = sorted(k for k in params if k not in MAP_OUTPUT_PARAMS)
    if other:
        if asked:
            raise TypeError(f"stats='map-output' takes {', '.join(MAP_OUTPUT_PARAMS)}; got "
                            f"{other}")
        return None  # Mixed's parameters given: the user wants the statistics path
    if loaded is None or not loaded():
        return None   # no bridge: the statistics pass (the caller warned)
    options = {k: params.pop(k) for k in MAP_OUTPUT_PARAMS if k in params}
    if "min_gain" in options:  # refused before the map stage runs, not after
        from sparkbalance.strategies.auto import check_min_gain
        check_min_gain(options["min_gain"])
    return options


def bounded_auto(record: ResolvedStrategy) -> ResolvedStrategy:
    """``record`` with bounded statistics when it is "auto" about to read statistics in a
    pass of its own: no zero-pass counts (no JVM bridge, or the DataFrame path) and no
    sample the caller asked for. "auto" promises no harm, and a full pass over the input
    costs more than balancing earns back on keys that turn out uniform (measured 1.52x
    plain on uniform keys); a bounded sample costs a fixed few thousand records.

    Examples
    --------
    >>> from sparkbalance import strategies
    >>> bounded_auto(strategies.resolve("auto")).bounded
    True
    >>> bounded_auto(strategies.resolve("mixed")).bounded, bounded_auto(
    ...     strategies.resolve("auto", sample_fraction=0.1)).bounded
    (False, False)
    """
    from dataclasses import replace
    if record.spec is None or record.spec.name != "auto" or not record.needs_stats \
            or record.sample_fraction is not None:
        return record
    return replace(record, bounded=True)


def check_values(spec: "Strategy", params: Mapping[str, Any]) -> None:
    """Refuse bad parameter values before any job: a routing-table strategy's are its
    planner's (its constructor only checks and stores them); "auto"'s ``min_gain``."""
    if spec.kind == "table" and spec.planner is not None and not spec.state_only:
        spec.planner_class()(**params)
    elif spec.name == "auto":
        from sparkbalance.strategies.auto import check_min_gain
        check_min_gain(params.get("min_gain", spec.defaults["min_gain"]))
