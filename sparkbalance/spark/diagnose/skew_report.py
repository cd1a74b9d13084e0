"""``sb.diagnose``: is a keyed job skewed, and which placement would help? (no data shuffled)

Two passes, driver memory bounded by ``max_keys``: the bounded key statistics of
:mod:`sparkbalance.spark.sql.keystats` (the heaviest keys' exact rows c(k), the rest as
totals), on which every strategy is fitted as ``sb.group_by`` fits it; then one job counting
the rows each candidate placement puts on each partition (:mod:`.loads`): plain Spark's
(Murmur3 pmod for DataFrames, ``portable_hash`` for pair RDDs) and each fitted function's,
by the expression the placement uses. The report gives, as max/avg rows:

* the lower bound ``max(1, max_k c(k) / L̄)``, ``L̄`` = rows / n: the hottest key alone
  bounds the slowest task of a key grouping (Fang et al. §2; null keys are one key);
* plain Spark, and each key-grouping strategy (:data:`sparkbalance.strategies.KEY_GROUPING`)
  fitted on the statistics, as ``sb.repartition`` / ``sb.group_by`` would place;
* the predicted speed-up of the slowest task and the recommendation with its reason.

Examples
--------
>>> report = sb.diagnose(df, "user", num_partitions=16)                  # doctest: +SKIP
>>> print(report); report.plot("skew.png")                               # doctest: +SKIP
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from sparkbalance import strategies as registry
from sparkbalance.routing.base import PartitionFunction, check_num_partitions
from sparkbalance.routing.hash import HashPartitioner
from sparkbalance.stats.keystats import KeyStats
from sparkbalance.spark.session.conf import FROM_CONF, resolve_max_keys
from sparkbalance.spark.diagnose.loads import df_loads, rdd_loads
from sparkbalance.spark.sql.route import NULL_PARTITION

__all__ = ["SkewReport", "PartitionLoads", "diagnose", "evaluate", "fit_all", "report",
           "TOP_KEYS", "TIE_TOLERANCE", "BALANCED_ENOUGH", "KEEP", "check_plot"]

#: Keys listed in the report.
TOP_KEYS = 10
#: Strategies whose max/avg is within this factor of the best count as tied; the first in
#: :data:`_PREFERENCE` (simplest layout, smallest plan) is recommended.
TIE_TOLERANCE = 1.02
#: Spark's hash within this factor of the lower bound: balancing cannot pay for its pass.
BALANCED_ENOUGH = 1.05
#: ``recommended`` when plain Spark's hash is already balanced enough.
KEEP = "spark"
_PREFERENCE = ("hash", "keygroups", "mixed", "mintable", "minmig", "mixedbf", "readj")


@dataclass(frozen=True)
class PartitionLoads:
    """Rows per partition under one placement, and its max/avg."""

    name: str
    loads: np.ndarray

    @property
    def max_over_avg(self) -> float:
        mean = float(self.loads.mean()) if self.loads.size else 0.0
        return float(self.loads.max()) / mean if mean > 0 else 1.0


@dataclass(frozen=True)
class SkewReport:
    """What :func:`diagnose` found; ``str(report)`` is the readable form.

    Attributes
    ----------
    keys : key column names (or ``["key"]`` for a pair RDD).
    num_partitions : n.
    rows, null_rows, distinct_keys : totals (null keys are one group).
    top : ``[(key, rows, share)]`` of the hottest keys.
    lower_bound : ``max(1, max c / L̄)``.
    spark : the placement of plain Spark's hash partitioning.
    placements : ``{strategy: PartitionLoads}`` of the key-grouping strategies.
    partitioners : ``{strategy: PartitionFunction}`` they were fitted to.
    recommended, reason : the advice: a strategy name, or :data:`KEEP` ("spark").
    source : ``"dataframe"`` or ``"rdd"``: what was diagnosed, so the advice names calls
        of that API (:attr:`advice`).
    """

    keys: list[str]
    num_partitions: int
    rows: int
    null_rows: int
    distinct_keys: int
    top: list[tuple[Any, int, float]]
    lower_bound: float
    spark: PartitionLoads
    placements: dict[str, PartitionLoads]
    partitioners: dict[str, PartitionFunction] = field(repr=False)
    recommended: str
    reason: str
    source: str = "dataframe"

    @property
    def chosen(self) -> PartitionLoads:
        """The recommended placement (``"spark"``: keep plain Spark's)."""
        return self.spark if self.recommended == KEEP else self.placements[self.recommended]

    @property
    def advice(self) -> str:
        """The call that places the data as recommended, in the diagnosed input's API.

        Examples
        --------
        >>> r = report(KeyStats.from_counts({"a": 6, "b": 2}), np.array([8.0, 0.0]),
        ...            {"hash": np.array([6.0, 2.0])}, {}, keys=["user"])
        >>> r.advice
        "sb.group_by(df, 'user', num_partitions=2, strategy='hash') or sb.repartition(df, 2, 'user', strategy='hash')"
        """
        n, name = self.num_partitions, self.recommended
        if name == KEEP:
            return ("keep Spark's own groupBy/repartition" if self.source == "dataframe"
                    else "keep Spark's own partitionBy/reduceByKey")
        if self.source == "rdd":
            return (f"sb.partition_by(rdd, {n}, strategy={name!r}) or "
                    f"sb.reduce_by_key(rdd, f, {n}, strategy={name!r})")
        cols = ", ".join(repr(k) for k in self.keys)
        return (f"sb.group_by(df, {cols}, num_partitions={n}, strategy={name!r}) or "
                f"sb.repartition(df, {n}, {cols}, strategy={name!r})")

    @property
    def speedup(self) -> float:
        """Predicted speed-up of the slowest task: Spark's max load / the recommended one."""
        best = float(self.chosen.loads.max())
        return float(self.spark.loads.max()) / best if best > 0 else 1.0

    def __str__(self) -> str:
        n, w = self.num_partitions, 28
        lines = [f"sparkbalance skew report: key ({', '.join(self.keys)}) over {n} partitions",
                 f"  rows                        {self.rows:,}"
                 + (f"  ({self.null_rows:,} with a null key)" if self.null_rows else ""),
                 f"  distinct keys               {self.distinct_keys:,}",
                 f"  top keys (share of rows)"]
        for k, c, s in self.top:
            lines.append(f"    {repr(k)[:w - 4]:<{w - 2}}{c:>12,}  {100 * s:6.2f} %")
        lines += [f"  lower bound max(1, max c / L̄)  {self.lower_bound:8.2f}",
                  "  slowest partition / average (rows)",
                  f"    {'spark hash (plain Spark)':<{w - 2}}{self.spark.max_over_avg:8.2f}"
                  + ("  <- recommended" if self.recommended == KEEP else "")]
        for name, p in self.placements.items():
            mark = "  <- recommended" if name == self.recommended else ""
            lines.append(f"    {name:<{w - 2}}{p.max_over_avg:8.2f}{mark}")
        lines += [f"  predicted speed-up of the slowest task: {self.speedup:.2f}x",
                  f"  recommendation: {self.recommended} - {self.reason}",
                  f"  use: {self.advice}"]
        return "\n".join(lines)

    def plot(self, path: str | None = None) -> Any:
        """Rows per partition (plain Spark vs recommended) and the top keys' shares.

        Needs matplotlib (the ``plot`` extra; without it an ``ImportError`` saying so,
        :func:`check_plot` asks before a run). Returns the ``matplotlib.figure.Figure``;
        saves it to ``path`` when given.

        Examples
        --------
        >>> report.plot("skew.png")                                       # doctest: +SKIP
        """
        check_plot()
        from matplotlib.figure import Figure  # no pyplot: no GUI backend needed
        fig = Figure(figsize=(11, 4), layout="constrained")
        ax, ax2 = fig.subplots(1, 2, width_ratios=[2, 1])
        x = np.arange(self.num_partitions)
        best = self.chosen
        ax.bar(x - 0.2, self.spark.loads, 0.4, label=f"spark hash (max/avg "
               f"{self.spark.max_over_avg:.2f})", color="#c44")
        ax.bar(x + 0.2, best.loads, 0.4, label=f"{self.recommended} (max/avg "
               f"{best.max_over_avg:.2f})", color="#48c")
        mean = self.rows / self.num_partitions
        ax.axhline(mean, color="k", lw=0.8, ls=":", label="average")
        ax.axhline(mean * self.lower_bound, color="k", lw=0.8, ls="--",
                   label=f"lower bound ({self.lower_bound:.2f} x avg)")
        ax.set(xlabel="partition", ylabel="rows", title=f"rows per partition "
               f"(predicted slowest-task speed-up {self.speedup:.2f}x)")
        ax.legend(fontsize=8)
        labels = [repr(k)[:14] for k, _, _ in self.top]
        ax2.barh(labels[::-1], [100 * s for _, _, s in self.top][::-1], color="#888")
        ax2.set(xlabel="% of rows", title="top keys")
        if path:
            fig.savefig(path, dpi=110)
        return fig


def check_plot() -> None:
    """Refuse plotting at once when matplotlib is missing (before a run, not after it).

    Examples
    --------
    >>> check_plot()                 # with the ``plot`` extra installed   # doctest: +SKIP
    """
    import importlib.util
    if importlib.util.find_spec("matplotlib") is None:
        raise ImportError("plotting the skew report needs matplotlib: pip install "
                          "'sparkbalance[plot]' (or matplotlib)")


def evaluate(stats: KeyStats, num_partitions: int, spark_partition: Sequence[int] | np.ndarray,
             *, null_rows: int = 0,
             names: Sequence[str] | None = None, keys: Sequence[str] = ("key",),
             null_spark: dict[int, int] | None = None,
             **params: Any) -> SkewReport:
    """The report from per-key counts (pure: no Spark), as :func:`diagnose` computes it.

    Parameters
    ----------
    stats : non-null keys and their rows.
    num_partitions : n.
    spark_partition : plain Spark's partition of each key of ``stats``.
    null_rows : rows with a null key (one group for sparkbalance, placed on
        :data:`~sparkbalance.spark.sql.route.NULL_PARTITION`).
    null_spark : ``{partition: rows}`` of the null-key rows under plain Spark (default all
        on partition 0; a multi-column key's null combinations hash apart).
    names : strategies to evaluate (default :data:`sparkbalance.registry.KEY_GROUPING`).
    params : strategy parameters, passed to every strategy that accepts them.

    Examples
    --------
    >>> s = KeyStats.from_counts({"a": 50, **{i: 1 for i in range(50)}})
    >>> r = evaluate(s, 4, [0] * 51)
    >>> round(r.lower_bound, 2), round(r.spark.max_over_avg, 2)
    (2.0, 4.0)
    """
    n = check_num_partitions(num_partitions)
    part = np.asarray(spark_partition, dtype=np.int64)
    if part.shape != (len(stats),):
        raise ValueError(f"spark_partition has shape {part.shape}; expected ({len(stats)},)")
    counts = stats.counts
    spark = np.bincount(part, weights=counts, minlength=n).astype(float)
    for p, rows in (null_spark or {0: null_rows}).items():
        spark[p] += rows
    fitted = fit_all(stats, n, names, **params)
    placements = {}
    for name, f in fitted.items():
        loads = np.bincount(f.assign(stats.keys), weights=counts, minlength=n).astype(float)
        loads[NULL_PARTITION] += null_rows
        placements[name] = loads
    return report(stats, spark, placements, fitted, null_rows=null_rows, keys=keys)


def fit_all(stats: KeyStats, num_partitions: int, names: Sequence[str] | None = None,
            **params: Any) -> dict[str, PartitionFunction]:
    """Each strategy fitted on ``stats`` as ``sb.group_by`` / ``sb.repartition`` fit it.

    Parameters are passed to the strategies that accept them; with no non-null key every
    strategy is the hash (nothing to plan, as ``group_by`` does).

    Examples
    --------
    >>> fs = fit_all(KeyStats.from_counts({"a": 9, "b": 1}), 2, ["hash", "mixed"])
    >>> sorted(fs), fs["mixed"].num_partitions
    (['hash', 'mixed'], 2)
    """
    return _fit(stats, check_num_partitions(num_partitions), _resolved(names, params))


def _resolved(names: Sequence[str] | None, params: dict[str, Any]) -> list[Any]:
    """Each strategy to compare resolved once (before any job), with the parameters it
    accepts."""
    records = []
    for name in (registry.KEY_GROUPING if names is None else names):
        valid = registry.accepted_params(name)
        records.append(registry.resolve(name, {k: v for k, v in params.items()
                                               if k in valid}))
    return records


def _fit(stats: KeyStats, n: int, records: Sequence[Any]) -> dict[str, PartitionFunction]:
    # With no key to plan, every strategy is the hash (nothing to plan, as group_by does).
    return {r.name: r.fit(stats, n) if len(stats) else HashPartitioner(n) for r in records}


def report(stats: KeyStats, spark_loads: np.ndarray, loads: dict[str, np.ndarray],
           fitted: dict[str, PartitionFunction], *, null_rows: float = 0,
           keys: Sequence[str] = ("key",), source: str = "dataframe") -> SkewReport:
    """The report from rows per partition of each placement (null-key rows included).

    ``stats`` lists the heaviest keys (bounded statistics: the rest in ``tail_count`` and
    ``num_distinct``); ``spark_loads`` and ``loads[name]`` are the rows per partition of
    plain Spark's hash and of each fitted function; ``source`` (``"dataframe"`` or
    ``"rdd"``) picks the API the advice names.

    Examples
    --------
    >>> s = KeyStats.from_counts({"a": 6, "b": 2})
    >>> r = report(s, np.array([8.0, 0.0]), {"hash": np.array([6.0, 2.0])}, {})
    >>> r.recommended, round(r.speedup, 2)
    ('hash', 1.33)
    """
    spark_loads = np.asarray(spark_loads, dtype=float)
    n = len(spark_loads)
    counts = stats.counts
    total = float(stats.data_count) + null_rows
    mean = total / n
    hottest = max(float(counts.max()) if len(stats) else 0.0, float(null_rows))
    bound = max(1.0, hottest / mean) if mean > 0 else 1.0
    order = np.argsort(-counts, kind="stable")[:TOP_KEYS]
    top = [(stats.keys[i].item() if hasattr(stats.keys[i], "item") else stats.keys[i],
            int(counts[i]), float(counts[i]) / total) for i in order]
    if null_rows:
        top = sorted(top + [(None, int(null_rows), null_rows / total)], key=lambda t: -t[1])
        top = top[:TOP_KEYS]
    placements = {name: PartitionLoads(name, np.asarray(x, dtype=float))
                  for name, x in loads.items()}
    spark_p = PartitionLoads("spark", spark_loads)
    if source not in _SPLIT_ADVICE:
        raise ValueError(f"source={source!r}; expected one of {', '.join(_SPLIT_ADVICE)}")
    best, reason = _recommend(spark_p, placements, bound, top, source)
    distinct = int(round(stats.distinct)) + (1 if null_rows else 0)
    return SkewReport(list(keys), n, int(round(total)), int(null_rows), distinct, top, bound,
                      spark_p, placements, fitted, best, reason, source)


#: What may split a hot key, in each API (a key-grouping placement cannot).
_SPLIT_ADVICE = {
    "dataframe": "joins: sb.join(df, other, on, strategy='split'); window functions: "
                 "sb.with_window_columns(df, ...); a groupBy().agg already combines a key "
                 "map-side, so only a costly step per group (applyInPandas) stays bound",
    "rdd": "aggregations: sb.reduce_by_key(rdd, f, n, strategy='pkg'); joins: "
           "sb.join(rdd, other, n, strategy='pkg')",
}


def _recommend(spark: PartitionLoads, placements: dict[str, PartitionLoads], bound: float,
               top: list, source: str = "dataframe") -> tuple[str, str]:
    lowest = min(p.max_over_avg for p in placements.values())
    ranked = sorted(placements, key=lambda s: (_PREFERENCE.index(s) if s in _PREFERENCE
                                               else len(_PREFERENCE)))
    best = next(s for s in ranked if placements[s].max_over_avg <= lowest * TIE_TOLERANCE)
    got, was = placements[best].max_over_avg, spark.max_over_avg
    if was <= bound * BALANCED_ENOUGH:
        return KEEP, (f"plain Spark's hash is already within {100 * (BALANCED_ENOUGH - 1):.0f}%"
                      f" of the lower bound ({was:.2f} vs {bound:.2f}): balancing would not pay"
                      " for its statistics pass")
    why = (f"slowest partition {got:.2f}x the average vs {was:.2f}x with Spark's hash "
           f"(lower bound {bound:.2f})")
    if got <= bound * BALANCED_ENOUGH and bound > 1.5 and top:
        k, _, share = top[0]
        why += (f"; key {k!r} alone holds {100 * share:.1f}% of the rows, so no key-grouping "
                f"placement can do better: an operation that may split a key would "
                f"({_SPLIT_ADVICE[source]})")
    return best, why


def diagnose(data: Any, *keys: str, num_partitions: int | None = None,
             strategies: Sequence[str] | None = None, max_keys: int | None = FROM_CONF,
             **params: Any) -> SkewReport:
    """Skew report of a DataFrame (over key columns ``keys``) or a pair RDD (its keys).

    Two passes, driver memory bounded whatever the number of keys: the bounded key
    statistics (the ``max_keys`` heaviest keys exact, the rest as totals; the strategies
    are fitted on them, as ``sb.group_by`` fits them), then one job counting the rows each
    placement (plain Spark's hash and every fitted function) puts on each partition.

    Parameters
    ----------
    data : a DataFrame, or an RDD of ``(key, value)`` pairs.
    keys : key column names (DataFrame only).
    num_partitions : n (default ``spark.sql.shuffle.partitions`` for a DataFrame, the
        RDD's partition count for an RDD).
    strategies : strategies to compare (default every key-grouping strategy).
    max_keys : keys listed by the statistics (default ``spark.sparkbalance.maxKeys``, else
        100,000; None: every key).
    params : strategy parameters (``theta``, ``num_groups``...).

    Examples
    --------
    >>> r = diagnose(df, "user", num_partitions=16)                         # doctest: +SKIP
    >>> r.recommended, round(r.speedup, 2)                                  # doctest: +SKIP
    ('mixed', 3.1)
    """
    if hasattr(data, "schema") and hasattr(data, "groupBy"):
        from sparkbalance.spark.session import conf
        from sparkbalance.spark.sql.keystats import key_stats
        if not keys:
            raise ValueError("diagnose(df, *keys): name at least one key column")
        n = conf.default_partitions(data) if num_partitions is None else num_partitions
        n = check_num_partitions(n)
        records = _resolved(strategies, params)
        stats = key_stats(data, *keys, max_keys=max_keys)
        fitted = _fit(stats, n, records)
        spark, loads, nulls = df_loads(data, keys, n, fitted)
        names, source = list(keys), "dataframe"
    else:
        from sparkbalance.spark.rdd.keystats import exact_counts, top_counts
        if keys:
            raise ValueError(f"keys={keys!r}: a pair RDD is keyed by its records' first "
                             "element; name key columns for a DataFrame only")
        n = check_num_partitions(data.getNumPartitions() if num_partitions is None
                                 else num_partitions)
        records = _resolved(strategies, params)
        live = data.filter(lambda kv: kv[0] is not None)
        max_keys = resolve_max_keys(data, max_keys)
        stats = top_counts(live, max_keys) if max_keys is not None else exact_counts(live)
        fitted = _fit(stats, n, records)
        spark, loads, nulls = rdd_loads(data, n, fitted)
        names, source = ["key"], "rdd"
    return report(stats, spark, loads, fitted, null_rows=nulls, keys=names, source=source)
