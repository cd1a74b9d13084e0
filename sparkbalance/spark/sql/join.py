"""Balanced DataFrame equi-join: one entry point, :func:`join_df`.

Two ways to balance a skewed join, both routed inside the JVM (no Python UDF):

* **co-partitioned** (a key-grouping strategy, default from the conf): both sides are
  placed by one partition function fitted on the keys of both sides (cost = left rows +
  right rows + output rows per key, :func:`~sparkbalance.spark.sql.keystats.join_stats`) and
  joined on ``(pid, on)``: one exchange per side, any join type.
* **hot-key split** (``strategy="split"``): the heavy keys of one side (the *split* side)
  are cut into pieces on several partitions, the matching rows of the other side are
  replicated to each piece; the plan is :func:`sparkbalance.planning.split.plan_split`
  (its module says why this beats AQE's skew join on moderate skew).

Examples
--------
>>> import sparkbalance as sb                                         # doctest: +SKIP
>>> pairs = sb.join_df(clicks, users, "user", strategy="split")       # doctest: +SKIP
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from sparkbalance.planning.split import DEFAULT_SPLIT_THRESHOLD, SplitPlan
from sparkbalance.routing.base import check_num_partitions
from sparkbalance.stats.keystats import KeyStats
from sparkbalance.spark.session import conf
from sparkbalance.spark.sql import hash_columns as sqlhash
from sparkbalance.spark.fit import fit_dataframe
from sparkbalance.spark.report.plan_report import plan_split, reported
from sparkbalance.spark.sql.placement import place, spark_places
from sparkbalance.spark.sql.keystats import join_stats, key_stats
from sparkbalance.spark.sql.route import (INTEGRAL_TYPES, NULL_PARTITION, PID_COL, bucketed_lookup, coerce_key,
                       partition_id, with_partition_id)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame

__all__ = ["join_df", "SPLIT"]

#: The join-only strategy name of the hot-key split (not a registry strategy: it needs
#: both sides of a join).
SPLIT = "split"

_HOW = {
    "inner": "inner", "cross": "inner",
    "outer": "full", "full": "full", "fullouter": "full",
    "left": "left", "leftouter": "left",
    "right": "right", "rightouter": "right",
    "semi": "left_semi", "leftsemi": "left_semi",
    "anti": "left_anti", "leftanti": "left_anti",
}
#: join type -> sides whose split keeps the result exact (the replicated side must not be
#: preserved: its unmatched rows would appear once per copy, and a semi/anti join outputs
#: left rows, so the left side may not be replicated).
_SPLITTABLE = {"inner": ("left", "right"), "left": ("left",), "right": ("right",),
               "left_semi": ("left",), "left_anti": ("left",), "full": ()}


def _F():
    from pyspark.sql import functions as F
    return F


def _normalize_how(how: str) -> str:
    key = str(how).lower().replace("_", "")
    if key not in _HOW:
        raise ValueError(f"how={how!r}; expected one of inner, left, right, full, left_semi, "
                         "left_anti (and Spark's aliases)")
    return _HOW[key]


def _check_join_keys(left: "DataFrame", right: "DataFrame", on: Sequence[str]) -> list[str]:
    on = sqlhash.check_key_columns(left, on)
    sqlhash.check_key_columns(right, on)
    fam = lambda t: "integral" if t.simpleString() in INTEGRAL_TYPES else t.simpleString()  # noqa
    for c, lt, rt in zip(on, sqlhash.key_types(left, on), sqlhash.key_types(right, on)):
        if fam(lt) != fam(rt):
            raise TypeError(f"join key {c!r} is {lt.simpleString()} on the left and "
                            f"{rt.simpleString()} on the right; expected the same type "
                            "(cast one side)")
    return on


@reported("join_df", "dataframe")
def join_df(left: "DataFrame", right: "DataFrame", on: str | Sequence[str], how: str = "inner",
            *, num_partitions: int | None = None, strategy: str | None = None,
            split_side: str | None = None, split_threshold: float = DEFAULT_SPLIT_THRESHOLD,
            stats: KeyStats | None = None, sample_fraction: float | None = None,
            literal_limit: int | None = None, **params: Any) -> "DataFrame":
    """Balanced equi-join on the key columns ``on`` (same names on both sides).

    ``strategy`` a key-grouping name (default ``spark.sparkbalance.strategy``, else the
    registry default): both sides are placed by one partition function fitted on the keys
    of both sides (cost = left rows + right rows + output rows per key) and joined
    partition-wise, one exchange per side; any join type. ``stats`` (optional) are those
    of both sides; unknown ``params`` are refused before any Spark job.

    ``strategy="split"``: hot-key split. The heavy keys of the *split side* are cut into
    pieces on several partitions; rows of the other side with those keys are replicated to
    each piece. Exact when the replicated side is not preserved: inner, and the outer /
    semi / anti joins that preserve only the split side. ``split_side`` defaults to "right"
    for right outer joins and "left" otherwise; full outer joins, or joins preserving the
    replicated side, raise ``ValueError``. ``stats`` (optional) are those of the split side.

    Returns the same rows and columns as ``left.join(right, on, how)``; when strategy
    "auto" finds no key heavy enough to unbalance a partition, that very plan (Spark's own
    exchanges or broadcast, its partition count).

    Examples
    --------
    >>> join_df(clicks, users, "user", "left", strategy="split")   # doctest: +SKIP
    """
    on = [on] if isinstance(on, str) else list(on)
    kind = _normalize_how(how)
    on = _check_join_keys(left, right, on)
    n = conf.default_partitions(left) if num_partitions is None else num_partitions
    n = check_num_partitions(n)
    if strategy == SPLIT:
        if params:
            raise TypeError(f"strategy='split' got unknown parameters {sorted(params)}; valid: "
                            "split_side, split_threshold, stats, sample_fraction, "
                            "literal_limit")
        return _split_join(left, right, on, kind, n, split_side, split_threshold, stats,
                           sample_fraction, literal_limit)
    record = conf.resolve_record(left, strategy, params, sample_fraction=sample_fraction,
                                 key_grouping=True)  # once, before any job
    if record.needs_stats and stats is None:
        stats = join_stats(left, right, on, record.sample_fraction)
    f = fit_dataframe(left, n, on, record, stats=stats)
    if spark_places(record, f):   # "auto" found no heavy key: plain Spark's own join
        return left.join(right, on, kind)   # (its exchanges, or a broadcast, its partitions)
    lp = place(with_partition_id(left, f, *on, literal_limit=literal_limit), n, PID_COL)
    rp = place(with_partition_id(right, f, *on, literal_limit=literal_limit), n, PID_COL)
    return lp.join(rp, [PID_COL] + on, kind).drop(PID_COL)


def _salt(df: "DataFrame") -> "Column":
    """Deterministic per-row salt (a hash of the row): retries recompute the same pieces."""
    from pyspark.sql.types import MapType
    F = _F()
    cols = [df[f.name] for f in df.schema.fields if not isinstance(f.dataType, MapType)]
    return F.xxhash64(*cols)


def _split_pid(df: "DataFrame", on: list[str], plan: SplitPlan, replicate: bool) -> "DataFrame":
    """Split side: one piece per row; replicated side: one copy per piece (explode)."""
    F = _F()
    dtypes = sqlhash.key_types(df, on)
    raw = sqlhash.raw_hash_of([df[c] for c in on], dtypes)
    home = partition_id(df, plan.base, *on)
    entries = []
    for k, parts in plan.pieces.items():
        ok, v = coerce_key(k, dtypes)
        if ok:
            entries.append((v, list(parts)))
    null = sqlhash.any_null(df, on)
    parts = bucketed_lookup(df, on, dtypes, raw, entries, "array<int>") if entries else None
    if replicate:
        arr = F.array(home) if parts is None else F.coalesce(parts, F.array(home))
        arr = F.when(null, F.array(F.lit(NULL_PARTITION))).otherwise(arr).cast("array<int>")
        return df.select("*", F.explode(arr).alias(PID_COL))
    if parts is None:
        return df.withColumn(PID_COL, home)
    pick = F.element_at(parts, (F.pmod(_salt(df), F.size(parts)) + F.lit(1)).cast("int"))
    pid = F.when(null, F.lit(NULL_PARTITION)).when(parts.isNotNull(), pick).otherwise(home)
    return df.withColumn(PID_COL, pid.cast("int"))


def _split_join(left, right, on, kind, n, split_side, threshold, stats, sample_fraction,
                literal_limit) -> "DataFrame":
    allowed = _SPLITTABLE[kind]
    if split_side is None:
        split_side = "right" if kind == "right" else "left"
    if split_side not in ("left", "right"):
        raise ValueError(f"split_side={split_side!r}; expected 'left' or 'right'")
    if split_side not in allowed:
        other = "right" if split_side == "left" else "left"
        why = ("a full outer join preserves both sides" if kind == "full" else
               f"a {kind} join preserves the {other if kind != 'inner' else ''} side")
        raise ValueError(
            f"strategy='split' with how={kind!r} and split_side={split_side!r} would duplicate "
            f"rows: the {other} side is replicated but {why}; allowed split sides for "
            f"{kind!r}: {list(allowed) or 'none'} (use a key-grouping strategy such as "
            "'mixed' instead)")
    big, small = (left, right) if split_side == "left" else (right, left)
    sample_fraction = conf.resolve_sample_fraction(left, sample_fraction)
    if stats is None:
        stats = key_stats(big, *on, sample_fraction=sample_fraction)
    plan = plan_split(stats, n, split_side=split_side, threshold=threshold)
    bp = place(_split_pid(big, on, plan, replicate=False), n, PID_COL)
    sp = place(_split_pid(small, on, plan, replicate=True), n, PID_COL)
    lp, rp = (bp, sp) if split_side == "left" else (sp, bp)
    return lp.join(rp, [PID_COL] + on, kind).drop(PID_COL)
