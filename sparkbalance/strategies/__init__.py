"""Strategy registry: one record per strategy name ("hash", "mixed", "pkg", "ssm", ...).

Pure (no pyspark). The RDD adapters, the DataFrame adapters, the keyed-state controller and
the CLI read only this registry. Each record names its fitter (and planner, where there is
one) lazily as ``"module:attribute"`` so importing the registry stays cheap; a fitter has the
shape::

    fit(stats: KeyStats | None, num_partitions: int, *,
        current: PartitionFunction | None = None, **params) -> PartitionFunction

Layout kinds: ``"hash"`` (stable hash, no plan), ``"table"`` (hash + routing table),
``"keygroups"`` (key groups in intervals), ``"split"`` (a key may go to several partitions).

The fitters live beside the registry: :mod:`.tables` (Fang et al.'s planners),
:mod:`.keygroups` (Ding et al.'s SSM on key groups) and :mod:`.splitting` (PKG, D-/W-Choices,
TAG). This layer sits above planning: ``hashing -> routing -> stats -> planning ->
strategies -> spark/state``.
"""
from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping

from sparkbalance.planning.base import DEFAULT_BETA, DEFAULT_MAX_TABLE, DEFAULT_THETA
from sparkbalance.strategies.resolved import (MAP_OUTPUT_PARAMS, ResolvedStrategy, bounded_auto,
                                              check_values, frozen, map_output_options)

if TYPE_CHECKING:
    from ..routing.base import PartitionFunction
    from ..stats.keystats import KeyStats

__all__ = ["Strategy", "ResolvedStrategy", "bounded_auto", "fit", "fit_hash", "get", "resolve", "available",
           "planner_class", "MAP_OUTPUT_PARAMS", "SESSION_PARAMS",
           "check_params", "accepted_params", "DEFAULT_STRATEGY", "KEY_GROUPING", "SPLITTING",
           "KINDS"]

KINDS = ("hash", "table", "keygroups", "split")
#: The strategy every adapter (RDD, DataFrame, CLI) uses when the caller names none: "auto"
#: balances only when the predicted gain beats the noise (:mod:`.auto`), and on the RDD
#: adapters reads its statistics from the shuffle's own map output (no extra pass).
DEFAULT_STRATEGY = "auto"
#: Fitter arguments that are not user parameters.
_POSITIONAL = ("stats", "num_partitions", "current")


def _load(path: str) -> Any:
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class Strategy:
    """One strategy: how to fit it, what it needs, and what layout it gives."""

    name: str
    kind: str
    fitter: str
    needs_stats: bool
    planner: str | None = None
    aliases: tuple[str, ...] = ()
    doc: str = ""
    defaults: Mapping[str, Any] = field(default_factory=dict)
    state_only: bool = False   # only the keyed-state operator can run it (e.g. "mtm")

    @property
    def splits_keys(self) -> bool:
        return self.kind == "split"

    def load(self) -> Callable[..., "PartitionFunction"]:
        """The fitter function."""
        return _load(self.fitter)

    def planner_class(self) -> type | None:
        """The planner class, or None for strategies that plan nothing (hash, pkg, ...)."""
        return _load(self.planner) if self.planner else None




def fit_hash(stats: Any, num_partitions: int, *, current: Any = None) -> "PartitionFunction":
    """Strategy "hash": stable hash mod n (``stats`` and ``current`` are ignored).

    Examples
    --------
    >>> fit_hash(None, 4).num_partitions
    4
    """
    from ..routing.hash import HashPartitioner
    return HashPartitioner(num_partitions)


_S = Strategy
_P = "sparkbalance.planning"
_T = "sparkbalance.strategies.tables"
_K = "sparkbalance.strategies.keygroups"
_X = "sparkbalance.strategies.splitting"
_AUTO = "sparkbalance.strategies.auto"
#: θ, A_max (Fang et al. Table 2) and β (Fang et al. §3.2, Appendix C): the planners'
#: defaults, defined once in :mod:`sparkbalance.planning.base`.
_TABLE = {"theta": DEFAULT_THETA, "max_table": DEFAULT_MAX_TABLE, "beta": DEFAULT_BETA}
_R: tuple[Strategy, ...] = (
    # Gives a hash or a table partition function: key-grouping either way ("table" kind).
    _S("auto", "table", f"{_AUTO}:fit_auto", True,
       defaults={"min_gain": 0.05, **_TABLE},
       doc="Mixed when it cuts the slowest partition by >= min_gain, else plain hash; on the "
           "RDD adapters LPT over map-output key-group sizes (no statistics pass)"),
    _S("hash", "hash", "sparkbalance.strategies:fit_hash", False, aliases=("none",),
       doc="stable hash mod n"),
    _S("mixed", "table", f"{_T}:fit_mixed", True, f"{_P}:Mixed", defaults=_TABLE,
       doc="hash + routing table planned by Mixed (Fang et al. Algorithm 4)"),
    _S("mixedbf", "table", f"{_T}:fit_mixedbf", True, f"{_P}:MixedBF", defaults=_TABLE,
       doc="Mixed trying every n_back (Fang et al. §3.3)"),
    _S("mintable", "table", f"{_T}:fit_mintable", True, f"{_P}:MinTable", defaults=_TABLE,
       doc="routing table planned by MinTable (Fang et al. Algorithm 2)"),
    _S("minmig", "table", f"{_T}:fit_minmig", True, f"{_P}:MinMig",
       defaults={**_TABLE, "max_table": None},
       doc="routing table planned by MinMig (Fang et al. Algorithm 3; table size unbounded)"),
    _S("readj", "table", f"{_T}:fit_readj", True, f"{_P}:Readj", defaults=_TABLE,
       doc="routing table planned by Readj (Gedik 2014)"),
    # τ = 0.2: each partition's work <= 1.2 x the mean (Ding et al. §6 use 1.2 as 1 + τ
    # for Storm node counts); 16 key groups per partition unless the current layout has some.
    _S("keygroups", "keygroups", f"{_K}:fit_keygroups", True,
       "sparkbalance.planning.intervals:SSM", aliases=("ssm",),
       defaults={"tau": 0.2, "num_groups": None, "min_load": None},
       doc="key-group intervals planned by SSM (Ding et al. §3.3)"),
    # The keyed-state operator builds MTMAware itself: its parameters are the constructor's.
    _S("mtm", "keygroups", f"{_K}:fit_keygroups", True,
       "sparkbalance.planning.intervals.mtm:MTMAware",
       defaults={"gamma": 0.8, "tau": 0.2},
       doc="key-group intervals planned by MTM-aware SSM (Ding et al. §4.2); keyed state only",
       state_only=True),
    # Xing et al.: key groups owned by any partition (not intervals), placed on the time
    # series of their per-batch loads; the keyed state keeps the window (k batches).
    _S("correlation", "keygroups", f"{_K}:fit_keygroups", True,
       "sparkbalance.planning.correlation:CorrelationPlanner",
       defaults={"k": 10, "mode": "exchange", "improved": True, "global_first": True},
       doc="key groups placed by load correlation: COR-GLB, then COR-SE-IMP (Xing et al. "
           "§3.3-3.4); keyed state only", state_only=True),
    _S("correlation-pairwise", "keygroups", f"{_K}:fit_keygroups", True,
       "sparkbalance.planning.correlation:CorrelationPlanner",
       defaults={"k": 10, "mode": "exchange", "improved": True, "global_first": False},
       doc="key groups moved by pairwise correlation balancing only (Xing et al. §3.3); "
           "keyed state only", state_only=True),
    _S("pkg", "split", f"{_X}:fit_pkg", False,
       doc="Partial Key Grouping, two choices (Nasir et al. 2015)"),
    _S("dchoices", "split", f"{_X}:fit_dchoices", True,
       defaults={"threshold": None, "method": "exact", "headroom": 0.25},
       doc="D-Choices for heavy hitters (Nasir et al. 2016)"),
    _S("wchoices", "split", f"{_X}:fit_wchoices", True,
       defaults={"threshold": None, "method": "exact"},
       doc="W-Choices for heavy hitters (Nasir et al. 2016)"),
    _S("tag", "split", f"{_X}:fit_tag", True,
       defaults={"epsilon": None, "method": "spacesaving", "seed": 0,
                 "placement": "systematic"},
       doc="time-aware grouping (Yang et al.)"),
)
_REGISTRY: dict[str, Strategy] = {s.name: s for s in _R}
#: Planners no strategy runs but benchmarks plan with by name: LLFD (Fang et al. §3.1).
_BASELINE_PLANNERS: dict[str, str] = {"llfd": f"{_P}:LLFD"}
_ALIASES: dict[str, str] = {a: s.name for s in _R for a in s.aliases}

KEY_GROUPING = tuple(s.name for s in _R if s.kind != "split" and not s.state_only)
SPLITTING = tuple(s.name for s in _R if s.kind == "split")


def available(kind: str | None = None, *, state: bool = False) -> list[str]:
    """Names of the registered strategies (of one layout ``kind`` if given).

    ``state=True`` also lists the strategies only the keyed-state operator runs.
    """
    return [s.name for s in _R if (kind is None or s.kind == kind)
            and (state or not s.state_only)]


def get(name: str) -> Strategy:
    """The record of strategy ``name`` (case-insensitive, aliases accepted).

    Examples
    --------
    >>> get("SSM").name, get("none").kind
    ('keygroups', 'hash')
    """
    if isinstance(name, str):
        key = name.lower()
        key = _ALIASES.get(key, key)
        if key in _REGISTRY:
            return _REGISTRY[key]
    # the state-only names are offered apart: an adapter refuses them (resolve)
    valid = ", ".join([s.name for s in _R if not s.state_only]
                      + [a for a, s in _ALIASES.items() if not _REGISTRY[s].state_only])
    state = ", ".join(s.name for s in _R if s.state_only)
    raise ValueError(f"strategy={name!r}; expected one of {valid} (keyed state only, as "
                     f"KeyedStateOperator(planner=...): {state})")


def _named_params(func: Any, skip: tuple[str, ...]) -> tuple[set[str], bool]:
    names: set[str] = set()
    var_kw = False
    for p in inspect.signature(func).parameters.values():
        if p.kind is p.VAR_KEYWORD:
            var_kw = True
        elif p.kind is not p.VAR_POSITIONAL and p.name not in skip:
            names.add(p.name)
    return names, var_kw


def accepted_params(name: str) -> list[str]:
    """Sorted parameter names strategy ``name`` accepts.

    The fitter's keyword parameters, plus the planner constructor's when the fitter passes
    ``**params`` on; a state-only strategy ("mtm") accepts its planner constructor's
    parameters (the keyed-state operator builds the planner itself).

    Examples
    --------
    >>> accepted_params("keygroups")
    ['min_load', 'num_groups', 'tau']
    >>> accepted_params("mtm")[:3]
    ['gamma', 'matrix', 'max_iter']
    """
    s = get(name)
    if s.state_only:
        names, var_kw = set(), True
    else:
        names, var_kw = _named_params(s.load(), _POSITIONAL)
    if var_kw and s.planner:
        for cls in s.planner_class().__mro__:
            init = cls.__dict__.get("__init__")
            if init is None:
                continue
            more, open_ = _named_params(init, ("self",))
            names |= more
            if not open_:
                break
    return sorted(names)


def check_params(name: str, params: Mapping[str, Any]) -> None:
    """Refuse unknown parameters of strategy ``name`` before any Spark job runs.

    Examples
    --------
    >>> check_params("mixed", {"theta": 0.1})
    >>> check_params("mixed", {"thetaa": 0.1})
    Traceback (most recent call last):
    TypeError: strategy 'mixed' got an unknown parameter 'thetaa'; valid: allow_overflow, beta, compact, criterion, max_table, phase2, theta
    """
    valid = accepted_params(name)
    bad = sorted(k for k in params if k not in valid)
    if bad:
        what = "parameter" if len(bad) == 1 else "parameters"
        raise TypeError(f"strategy {get(name).name!r} got an unknown {what} "
                        f"{', '.join(repr(b) for b in bad)}; valid: {', '.join(valid) or 'none'}")


#: Parameters of routing-table strategies a session may set (``spark.sparkbalance.theta``,
#: ``spark.sparkbalance.maxTable``) when the call does not.
SESSION_PARAMS = ("theta", "max_table")


def resolve(strategy: Any = None, params: Mapping[str, Any] | None = None, *,
            setting: Callable[[str], Any] | None = None, sample_fraction: float | None = None,
            key_grouping: bool = False, state: bool = False,
            map_output: Callable[[], bool] | None = None, asked: bool = False
            ) -> ResolvedStrategy:
    """The one resolution of a call's strategy: looked up, settings merged, parameters checked.

    Every adapter calls this once per call (through
    :func:`sparkbalance.spark.session.conf.resolve_record`, which supplies the session's
    settings) and passes the record down; nothing below looks the name up again.
    Everything the registry can refuse without data is refused here, before any Spark job:
    an unknown name (``ValueError``), an unknown parameter (``TypeError``,
    :func:`check_params`), a state-only strategy outside the keyed state (``ValueError``),
    a splitting one where a key needs one home (``key_grouping``, ``ValueError``), and bad
    routing-table parameter values (the planner's own check, Fang et al. §4).

    Parameters
    ----------
    strategy : a registry name; None: the ``"strategy"`` setting, else
        :data:`DEFAULT_STRATEGY`; or an already fitted partition function (no parameters).
    params : the strategy's parameters.
    setting : ``setting(name)`` -> the session's value of ``spark.sparkbalance.<name>``
        (None when unset); None: no session.
    sample_fraction : the statistics' sample fraction, already checked.
    key_grouping : refuse strategies that split keys (DataFrame adapters).
    state : accept the strategies only the keyed state runs ("mtm", "correlation").
    map_output : for the RDD adapters, ``map_output()`` says whether the zero-pass shuffle
        can run (the bridge is loaded); None: the caller has no zero-pass path.
    asked : the call asked for the zero-pass path (``stats="map-output"``).

    Examples
    --------
    >>> resolve(None).name, resolve("none", {}).name
    ('auto', 'hash')
    >>> resolve(None, {"theta": 0.1}, setting={"strategy": "mintable"}.get).params["theta"]
    0.1
    """
    from sparkbalance.routing.base import PartitionFunction
    params = dict(params or {})
    if isinstance(strategy, PartitionFunction):   # an already fitted function
        if asked:
            raise ValueError("stats='map-output' plans key groups itself; it takes a strategy "
                             f"name ('auto' or None), not a fitted {type(strategy).__name__}")
        if params:
            raise TypeError("a fitted partition function takes no parameters; got "
                            f"{sorted(params)}")
        return ResolvedStrategy(None, frozen({}), function=strategy)
    if strategy is None and setting is not None:
        strategy = setting("strategy")
    spec = get(DEFAULT_STRATEGY if strategy is None else strategy)
    if spec.state_only and not state:
        raise ValueError(f"strategy {spec.name!r} plans the keyed state only "
                         f"(KeyedStateOperator(planner={spec.name!r})); use 'keygroups' here")
    if key_grouping and spec.splits_keys:
        raise ValueError(f"strategy={spec.name!r} splits keys over partitions; the DataFrame "
                         f"adapter needs a key-grouping strategy, one of "
                         f"{', '.join(KEY_GROUPING)}")
    zero_pass = map_output_options(spec, params, map_output, asked)
    if zero_pass is not None:
        return ResolvedStrategy(spec, frozen({}), map_output=frozen(zero_pass))
    if spec.kind == "table" and setting is not None:
        for name in SESSION_PARAMS:
            if name not in params:
                value = setting(name)
                if value is not None:
                    params[name] = value
    check_params(spec.name, params)
    check_values(spec, params)
    return ResolvedStrategy(spec, frozen(params),
                            sample_fraction=sample_fraction if spec.needs_stats else None)


def fit(name: str, stats: "KeyStats | None", num_partitions: int, *,
        current: "PartitionFunction | None" = None, resolved: ResolvedStrategy | None = None,
        **params: Any) -> "PartitionFunction":
    """Fit strategy ``name`` on ``stats`` and return its partition function.

    ``resolved``: the record of the caller's one :func:`resolve` (what
    :meth:`ResolvedStrategy.fit` passes, with its checked ``params``); the name is then
    neither looked up nor its parameters checked again. Without it, ``name`` and
    ``params`` are resolved here.

    Examples
    --------
    >>> fit("hash", None, 4).num_partitions
    4
    """
    if resolved is None:
        return resolve(name, params).fit(stats, num_partitions, current=current)
    if resolved.spec.needs_stats and stats is None:
        raise ValueError(f"strategy {resolved.name!r} needs key statistics; got stats=None")
    if resolved.bounded:   # heavy keys of a sample: key groups, not Mixed's table
        from sparkbalance.strategies.auto import fit_sampled
        return fit_sampled(stats, num_partitions,
                           min_gain=params.get("min_gain", resolved.spec.defaults["min_gain"]))
    return resolved.spec.load()(stats, num_partitions, current=current, **params)


def planner_class(name: str) -> type:
    """The planner class a registry name plans with (the routing-table planners, plus the
    LLFD baseline, Fang et al. §3.1, which no strategy runs but benchmarks plan with).

    Examples
    --------
    >>> planner_class("mixed").__name__, planner_class("llfd").__name__
    ('Mixed', 'LLFD')
    """
    path = _BASELINE_PLANNERS.get(name.lower()) if isinstance(name, str) else None
    if path is None:
        try:
            path = get(name).planner
        except ValueError:
            path = None
    if path is None:
        valid = [s.name for s in _R if s.planner] + list(_BASELINE_PLANNERS)
        raise ValueError(f"planner={name!r}; expected one of {', '.join(valid)}")
    return _load(path)
