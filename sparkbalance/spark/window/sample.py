"""The statistics the split needs, for about what they can earn back: a first look, then one pass.

The split needs, per partition key, how many rows it holds (hot or cold, where cold keys go)
and, per hot key, order values to cut it at. Both come from a uniform sample: each row draws
``u = rand(seed)``; the rows with ``u < f`` pass a filter compiled into the scan, and of
those the ``m`` with the smallest ``u`` are kept (Spark's ``TakeOrderedAndProject``, which
copies every row it sees: the filter keeps it to ``~f N`` rows, not ``N``). No shuffle; the
sample is then sorted by the partition key and as the window sorts (a sort of the ``m``
rows in one task, the same job), so nulls first/last, NaN and descending orders sort as the
window sorts them.

Rows: when ``m`` rows come back, ``N`` is estimated from the ``m``-th smallest draw
``u_(m)`` as ``(m - 1) / u_(m)`` (the order-statistic estimator of a uniform sample's size);
when fewer do, as their count over ``f`` (a Bernoulli sample); when ``f`` is 1 and fewer
than ``m`` rows exist, every row was drawn and the counts are exact. Relative error about
``1/sqrt(m)`` either way. ``f`` is ``2 m / N'`` for a guess ``N'``: the plan's own row
estimate (:func:`plan_rows`) for the first look, the first look's estimate for the pass; a
guess too high draws too few rows and the pass is repeated with ``f`` from what it saw.

Two steps, because the decision must cost what it can earn back (most windows are not
worth splitting, and plain Spark is then all the user should pay for):

* :func:`bounded_look`: partition keys only, and not every row read: the first
  :data:`LOOK_ROWS` of input partition 0, spread over the other partitions (up to
  :data:`SPREAD_ROWS`) only when a key there could pay
  (:func:`sparkbalance.spark.sql.keysample.sample_keys`), the total the plan's estimate.
  It bounds the hottest key's rows from above (:func:`top_bound`), which decides whether
  the look spreads; the statistics pass runs only when the look's estimate of the hottest
  key pays for the split (:mod:`sparkbalance.spark.window.payoff`), else the columns run as
  plain Spark runs them (a marginal key would otherwise pay a read of every row and still
  run plain). Without a plan estimate (Spark Connect), :func:`first_look`:
  :data:`LOOK_ROWS` keys drawn uniformly as above (it reads every row).
* :func:`draw`: :data:`SAMPLE_PER_PARTITION` rows per partition with their order values
  (a hot key is cut into about one range per partition it fills,
  :func:`~sparkbalance.spark.window.segments.fill_segments`, so a key of share ``s`` is cut
  into about ``s n`` ranges and draws ``m s`` rows).

Examples
--------
>>> ks = draw(d, ["k"], ["t"], order, num_partitions=16)          # doctest: +SKIP
>>> ks.total, ks.keys[:1], ks.samples[ks.keys[0]][:2]              # doctest: +SKIP
(200000.0, ['hot'], [(0,), (3,)])
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from sparkbalance.spark.sql.hash_columns import quoted as _q
from sparkbalance.spark.sql.keysample import sample_keys
from sparkbalance.spark.sql.keystats import py_value as _py_value
from sparkbalance.spark.window import memory, segments as sg
from sparkbalance.spark.window.spec import SortKey

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

__all__ = ["KeySample", "LOOK_ROWS", "SPREAD_ROWS", "SAMPLE_PER_PARTITION", "sample_size",
           "plan_rows", "bounded_look", "first_look", "top_bound", "draw"]

_U = "__sb_u"
#: Rows of the first look (partition keys only): a share ``p`` is known to about
#: ``sqrt(p (1 - p) / 2048)``, under 1.1 percentage points.
LOOK_ROWS = 2048
#: Rows of the bounded look's spread (:func:`bounded_look`), the look's among them: a share
#: ``p`` known to about ``sqrt(p (1 - p) / 8192)``, under 0.6 percentage points.
SPREAD_ROWS = 8192
#: Sampled rows per partition a hot key fills: a range cut to fill a partition
#: (:func:`~sparkbalance.spark.window.segments.fill_segments`) has its rows known to about
#: ``1/sqrt(400)``, 5 %. The statistics pass's one task sorts them and the driver reads
#: them (at 800 a partition, the 90 % memory-bound cell's pass took 0.24-0.5 s of CPU in
#: that task while the other cores idled, and read ~14,400 rows in Python); a ROWS halo is
#: then cut at sampled rows twice as far apart (about 2 n zones of a few hundred thin rows).
SAMPLE_PER_PARTITION = 400
#: Below this share of the rows asked for, a Bernoulli sample is drawn again (its ``f`` came
#: from a guess of the rows far too high).
_REDRAW = 0.25


@dataclass
class KeySample:
    """What the pass returns: keys heaviest first (null keys left out), their estimated
    rows, each key's sampled order tuples in window order, the estimated total rows and
    the rows with a null key (all in one window partition, placed on partition 0), and
    the rows drawn."""

    keys: list
    counts: np.ndarray
    samples: dict
    total: float
    null_rows: float
    exact: bool
    drawn: int = 0
    #: key -> {aggregate name: exact value over the key's rows}, for the keys of the
    #: candidates given to :func:`draw` (numeric aggregates only)
    totals: dict = field(default_factory=dict)


def sample_size(num_partitions: int) -> int:
    """Rows drawn: :data:`SAMPLE_PER_PARTITION` for each partition a key holding every row
    fills.

    Examples
    --------
    >>> sample_size(16)
    6400
    """
    return int(SAMPLE_PER_PARTITION * num_partitions)


def plan_rows(d: "DataFrame") -> float | None:
    """Spark's own estimate of ``d``'s rows, from its optimized plan (no job): the row count
    where the plan knows it (a cached, materialized relation; a range), else its size in
    bytes over Spark's estimated row width; None where there is no plan to ask (Spark
    Connect) or it gives no finite size (:func:`~sparkbalance.spark.window.memory.plan_size`)."""
    return memory.plan_size(d)[0]


def _sample(d: "DataFrame", pcols: Sequence[str], ocols: Sequence[str],
            order: Sequence[SortKey], m: int, rows_guess: float | None) -> tuple[list, float,
                                                                                   bool]:
    """(rows sorted as the window sorts, estimated total rows, exact?) of a uniform sample
    of at most ``m`` rows (module docstring); one job, two when the guess was far too high."""
    from pyspark.sql import functions as F
    sort = [F.col(c).asc_nulls_first() for c in pcols]
    sort += [k.sort_column(F.col(c)) for k, c in zip(order, ocols)]
    f = 1.0 if rows_guess is None else min(1.0, 2.0 * m / max(1.0, rows_guess))
    while True:
        q = d.select(*pcols, *ocols, F.rand(sg.SAMPLE_SEED).alias(_U))
        if f < 1.0:
            q = q.where(F.col(_U) < F.lit(f))
        # coalesce(1) + a local sort, not orderBy: where Spark knows the data holds fewer
        # than m rows it drops the limit, and a global sort would add its range-sampling jobs
        q = q.orderBy(_U).limit(m)
        # the keys alone (the first look) need no order: no sort, one stage
        rows = (q.coalesce(1).sortWithinPartitions(*sort) if ocols else q).collect()
        if len(rows) >= m:
            return rows, max(float(m), (m - 1) / max(max(r[-1] for r in rows), 1e-300)), False
        if f >= 1.0:
            return rows, float(len(rows)), True
        if len(rows) >= _REDRAW * m:
            return rows, len(rows) / f, False
        # the guess was far too high: f from what passed (at least 8 times larger)
        f = min(1.0, max(8.0 * f, 2.0 * m * f / max(1, len(rows))))


def _key_sample(rows: list, np_: int, total: float, exact: bool) -> KeySample:
    scale = total / max(1, len(rows))
    single = np_ == 1
    samples: dict[Any, list] = {}
    nulls = 0
    for r in rows:
        kv = r[:np_]
        if any(v is None for v in kv):
            nulls += 1
            continue
        key = _py_value(kv[0]) if single else tuple(_py_value(v) for v in kv)
        samples.setdefault(key, []).append(tuple(r[np_:-1]))
    keys = sorted(samples, key=lambda k: -len(samples[k]))  # stable: ties keep key order
    counts = np.array([len(samples[k]) * scale for k in keys], dtype=np.float64)
    return KeySample(keys, counts, samples, total, nulls * scale, exact, len(rows))


def bounded_look(d: "DataFrame", pcols: Sequence[str], num_partitions: int,
                 could_pay: Callable[[float, float], bool],
                 total: float | None = None) -> KeySample | None:
    """The partition keys of a bounded look that does not read every row, or None where the
    plan gives no row estimate (Spark Connect: :func:`first_look` then); ``total`` that
    estimate when the caller has it.

    :func:`sparkbalance.spark.sql.keysample.sample_keys`: the first :data:`LOOK_ROWS`
    non-null keys of input partition 0 (one job of one task) and, only when
    ``could_pay(rows, total)`` holds of the hottest key's upper bound (:func:`top_bound`)
    there, prefixes of the other input partitions up to :data:`SPREAD_ROWS` rows in all
    (one more job). The total is the plan's estimate (:func:`plan_rows`), the key counts
    their sampled shares of it. The keys are the prefixes' (not a uniform draw): a table
    whose first rows of each partition are unlike the rest is judged by them."""
    total = plan_rows(d) if total is None else float(total)
    if total is None:
        return None

    def _look(counts: np.ndarray, read: int) -> KeySample:
        return KeySample([None] * len(counts), counts * (total / max(1, read)), {}, total,
                         0.0, False, int(read))

    def could(counts: np.ndarray, read: int) -> bool:
        return bool(could_pay(top_bound(_look(np.sort(counts)[::-1][:1], read)), total))

    got = sample_keys(d, list(pcols), num_partitions, rows=SPREAD_ROWS, look=LOOK_ROWS,
                      could_matter=could)
    ks = _look(got.counts.astype(np.float64), got.rows)
    ks.keys = list(got.keys)
    return ks


def first_look(d: "DataFrame", pcols: Sequence[str]) -> KeySample:
    """:data:`LOOK_ROWS` rows' partition keys, drawn uniformly (one job; module docstring);
    it reads every row (a filtered scan): :func:`bounded_look` where the plan has a row
    estimate."""
    rows, total, exact = _sample(d, pcols, [], [], LOOK_ROWS, plan_rows(d))
    return _key_sample(rows, len(pcols), total, exact)


def top_bound(ks: KeySample, i: int = 0) -> float:
    """Rows the hottest key of a sample (the ``i``-th heaviest) can hold, bounded from above
    (three standard errors of its share and of the total; the count itself when the sample
    is exact).

    Examples
    --------
    >>> ks = KeySample(["a"], np.array([100.0]), {"a": [()] * 10}, 1000.0, 0.0, False, 100)
    >>> round(top_bound(ks))
    286
    """
    if len(ks.counts) <= i:
        return 0.0
    if ks.exact:
        return float(ks.counts[i])
    m = max(1, ks.drawn)
    p = float(ks.counts[i]) / max(ks.total, 1.0)
    upper = min(1.0, p + 3.0 * math.sqrt(p * (1.0 - p) / m) + 3.0 / m)
    return upper * ks.total * (1.0 + 3.0 / math.sqrt(m))


def draw(d: "DataFrame", pcols: Sequence[str], ocols: Sequence[str],
         order: Sequence[SortKey], num_partitions: int,
         rows_guess: float | None = None, candidates: Sequence[Any] = (),
         ptypes: Sequence[Any] = (), aggs: Sequence[tuple[str, Any, str]] = ()
         ) -> KeySample:
    """Key counts and per-key order samples of ``d`` (module docstring); ``rows_guess``
    (e.g. the first look's total) sets the share of rows the filter passes. With
    ``candidates`` (keys as the look gives them, of types ``ptypes``) and ``aggs`` ((name,
    aggregate Column, how groups combine: "sum", "min" or "max")), the grouped pass (:func:`_grouped`): exact rows of every key
    among the candidates, and their ``aggs`` in :attr:`KeySample.totals`."""
    m = sample_size(num_partitions)
    if candidates and aggs:
        return _grouped(d, pcols, ptypes, ocols, order, m, rows_guess, candidates, aggs)
    rows, total, exact = _sample(d, pcols, ocols, order, m, rows_guess)
    return _key_sample(rows, len(pcols), total, exact)


_C, _N, _NULLS, _DRAWN, _RN = "__sb_c", "__sb_n", "__sb_nulls", "__sb_drawn", "__sb_rn"
#: The grouped pass draws this many times ``m`` rows of the rows guessed (a guess too low
#: is cut back to ``m`` per candidate by Spark, before the driver reads them).
_DRAW = 1.25
_NUMERIC = ("ByteType", "ShortType", "IntegerType", "LongType", "FloatType", "DoubleType",
            "DecimalType")


def _grouped(d: "DataFrame", pcols: Sequence[str], ptypes: Sequence[Any],
             ocols: Sequence[str], order: Sequence[SortKey], m: int,
             rows_guess: float | None, candidates: Sequence[Any],
             aggs: Sequence[tuple[str, Any, str]]) -> KeySample:
    """The statistics pass as one grouped aggregation (module docstring): one job, two
    when the guess of the rows was far too high (the exact total then sets ``f``).

    The rows are grouped by candidate and, for a drawn row only, by its draw, key and order
    values (a row not drawn has them null): each drawn row is a group of its own, the rest
    of a candidate's rows one more, so the aggregation is Spark's generated hash
    aggregate (a collected list per group is not). The groups' counts and aggregates are
    combined per candidate by a window over the one task that sorts the drawn rows."""
    from pyspark.sql import Window, functions as F
    single = len(pcols) == 1
    cand = [sg.HotKey(tuple(c) if not single else (c,), 0.0) for c in candidates]
    names = [f"__sb_a{j}" for j in range(len(aggs))]
    fields = [_U, *pcols, *ocols]
    null_key = F.expr(" OR ".join(f"{_q(c)} IS NULL" for c in pcols))
    combine = {"sum": F.sum, "min": F.min, "max": F.max}
    # one window operator (one sort of the groups): the draws' rank and, over every
    # group of the candidate, its combined counts and aggregates
    by_u = Window.partitionBy(_C).orderBy(F.col("__sb_f0").asc_nulls_last())
    per_c = by_u.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    f = 1.0 if rows_guess is None else min(1.0, _DRAW * m / max(1.0, rows_guess))
    at = 1 + len(fields)
    while True:
        drawn = F.col(_U) < F.lit(f)
        g = (d.withColumns({_C: sg.hot_index(pcols, ptypes, cand), _U: F.rand(sg.SAMPLE_SEED)})
             .groupBy(F.col(_C), *[F.when(drawn, F.col(c)).alias(f"__sb_f{j}")
                                   for j, c in enumerate(fields)])
             .agg(F.count(F.lit(1)).alias(_N),
                  F.sum(F.when(null_key, 1).otherwise(0)).alias(_NULLS),
                  *[a.alias(nm) for nm, (_, a, _) in zip(names, aggs)]))
        sort = [F.col(_C)] + [F.col(f"__sb_f{1 + j}").asc_nulls_first()
                              for j in range(len(pcols))]
        sort += [k.sort_column(F.col(f"__sb_f{1 + len(pcols) + j}"))
                 for j, k in enumerate(order)]
        # in the one task: each candidate's rows, null keys and aggregates combined over its
        # groups, and its m smallest draws kept (the first row of each kept either way)
        flat = g.coalesce(1).select(
            _C, *[f"__sb_f{j}" for j in range(len(fields))],
            *[F.sum(c).over(per_c).alias(c) for c in (_N, _NULLS)],
            F.count("__sb_f0").over(per_c).alias(_DRAWN),
            *[combine[op](nm).over(per_c).alias(nm) for nm, (_, _, op) in zip(names, aggs)],
            F.row_number().over(by_u).alias(_RN))
        # plain tuples: a Row's indexing is a Python method (~140,000 calls a pass)
        rows = [tuple(r) for r in
                flat.where(F.col(_RN) <= m).drop(_RN).sortWithinPartitions(*sort).collect()]
        groups = {int(x[0]): x for x in rows}
        total = float(sum(x[at] for x in groups.values()))
        if f >= 1.0 or total * f >= _REDRAW * m:
            break
        f = min(1.0, _DRAW * m / max(1.0, total))   # the guess was far too high
    types = {fl.name: type(fl.dataType).__name__ for fl in flat.schema.fields}
    return _grouped_sample(rows, groups, len(pcols), at, f, [nm for nm, _, _ in aggs],
                           all(types[nm] in _NUMERIC for nm in names))


def _grouped_sample(rows: list, groups: dict, np_: int, at: int, f: float, agg_names: list,
                    numeric: bool) -> KeySample:
    """:class:`KeySample` of :func:`_grouped`'s rows (candidate, draw, key and order values,
    then the candidate's rows, null keys, draws and aggregates; ``at``: the column of its
    rows), each candidate's ``m`` smallest draws in the order Spark sorted them: a
    candidate's rows exact, other keys' their drawn share of their group's rows; the
    candidates' totals."""
    kept: dict[int, int] = {}
    for r in rows:
        if r[1] is not None:
            kept[r[0]] = kept.get(r[0], 0) + 1
    total = float(sum(g[at] for g in groups.values()))
    exact = f >= 1.0 and all(g[at + 2] == g[at] == kept.get(c, 0) for c, g in groups.items())
    null_rows = float(sum(g[at + 1] for g in groups.values()))
    cold = groups.get(-1)
    scale = (cold[at] / max(1, kept.get(-1, 0))) if cold is not None else 0.0
    single = np_ == 1
    samples: dict[Any, list] = {}
    counts: dict[Any, float] = {}
    totals: dict[Any, dict] = {}
    for r in rows:
        c = r[0]
        if r[1] is None:
            continue
        kv = r[2:2 + np_]
        if any(v is None for v in kv):
            continue
        key = _py_value(kv[0]) if single else tuple(_py_value(v) for v in kv)
        samples.setdefault(key, []).append(tuple(r[2 + np_:at]))
        if c >= 0:
            counts[key] = float(groups[c][at])
            if numeric:
                totals[key] = dict(zip(agg_names, groups[c][at + 3:]))
        else:
            counts[key] = counts.get(key, 0.0) + scale
    keys = sorted(samples, key=lambda k: -counts[k])  # stable: ties keep key order
    return KeySample(keys, np.array([counts[k] for k in keys], dtype=np.float64), samples,
                     total, null_rows, exact, sum(kept.values()), totals)
