"""The one bounded key sample of a DataFrame: a cheap first look, then, only when the look
shows a key that could matter, a sample spread over the rest of the input.

Both DataFrame callers that decide from a sample use it: strategy "auto"'s statistics
(:func:`sparkbalance.spark.sql.keystats.bounded_key_stats`) and the skew check of the
session-wide mode (:func:`sparkbalance.spark.enable.check.sample_dataframe`). It reads
the key columns and Spark's partition of each key, ``pmod(hash(cols), n)`` (Spark's hash
partitioning), built as one SQL projection (a Column per key costs a driver round trip
each):

1. **The look**: the first ``look`` rows with non-null keys of input partition 0 (one job
   of one task; the spread's share of a partition, ``rows / runs``, when that is more: the
   two jobs then run one planned query). Uniform keys show no key there that could matter,
   and that one job is the whole statistics.
2. **The spread**, only when the caller's ``could_matter`` says the look shows such a key
   (or partition 0 held under a quarter of the look's rows, too few to judge by): the
   input's partitions in at most :data:`MAX_SPREAD_TASKS` runs of neighbours
   (``coalesce``), in one job over every run *but the first*, whose prefix the look read.
   A table whose first partitions are unlike the rest (sorted, clustered by time) is not
   judged by them alone.

Each task is cut to its first rows in the JVM (the scan stops there), and the job runs over
the chosen partitions only, no Python worker, the spread's runs in parallel
(:mod:`.prefixes`: with the bridge, the projection's own planned query counted in the JVM
and returned as one array, in one driver call; without it, Spark's per-partition
``LocalLimit`` and ``PythonRDD.runJob`` over the JVM's pickled rows). So uniform
input pays one job of one task, skewed input two jobs, and no row is read twice (except in
a one-partition input, whose spread reads on from its start: there is no other partition
to spread over). A plan sampled before (the same input, keys and sizes: the physical
plan's text without expression ids) whose last sample went on to the spread is sampled in
**one** job: every run's share at once, the look's rows among them (a table re-read with
the same skewed key pays one job, not two; :data:`MEMO_PLANS` plans are remembered).
When the bridge can also stamp what the plan reads (``InputStamp``: every leaf a file
scan, stamped by its files, sorted, and their total size, or a range, whose plan text is
its rows), a sample of the same plan
over the same stamp is used again with **no** job (:attr:`SampledKeys.remembered`): a
table re-read unchanged costs its keyed call no sample at all, and a write to it (new or
replaced files, other sizes) is sampled afresh. A sample is only ever a plan's input, so
a stale one could cost speed, never a row. Other leaves (local or cached data, an RDD, a
v2 scan) are sampled at every call; :func:`forget_kept_samples` forgets the kept ones.

Keys computed by a Python step (:mod:`sparkbalance.spark.sql.python_source`) are not
sampled at all: a Python worker runs ahead of the JVM's limit, so even the look would
re-run a whole partition of that work; :attr:`SampledKeys.skipped` names the step. A Spark Connect DataFrame has no JVM partitions to
choose: its spread is the input's first ``rows`` rows (a ``limit`` over
:data:`CONNECT_TAKE_PARTITIONS` partitions at first), re-reading the look's.

Examples
--------
>>> s = sample_keys(df, ["user"], 8, rows=16_384, look=1_000,
...                 could_matter=lambda counts, rows: counts.max() >= 50)   # doctest: +SKIP
>>> s.rows, s.spread                                                       # doctest: +SKIP
(16384, True)
"""
from __future__ import annotations

import re
import threading
from collections import Counter, OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import numpy as np

from sparkbalance.spark.sql import hash_columns as sqlhash
from sparkbalance.spark.sql.connect import is_connect
from sparkbalance.spark.sql.keysample.prefixes import (FIELD_SEP, PrefixReader, _pairs,
                                                       key_look, py_value)
from sparkbalance.spark.sql.python_source import python_source

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

__all__ = ["SampledKeys", "sample_keys", "forget_kept_samples", "first_take_partitions",
           "py_value",
           "MAX_SPREAD_TASKS", "HOME_COLUMN", "SHUFFLE_INPUT", "runs_shuffle"]

#: Runs of input partitions the spread reads from at most (one task each).
MAX_SPREAD_TASKS: int = 16
#: Input partitions the first job of a Spark Connect sample reads (it cannot choose the
#: partitions: its sample is the input's first rows, the look's among them).
CONNECT_TAKE_PARTITIONS: int = 2
#: :attr:`SampledKeys.skipped` of an input a shuffle computes (``refuse_shuffle``).
SHUFFLE_INPUT = "a shuffle's output"
#: The sampled rows' column holding Spark's partition of their key.
HOME_COLUMN = "__sparkbalance_home"


@dataclass(frozen=True)
class SampledKeys:
    """The distinct keys a sample saw (heaviest first, ties in key order), each one's
    sampled rows (``counts``) and partition under Spark's hash placement (``homes``),
    the rows read in all, and whether the spread ran (else the look was all).
    ``skipped`` names the Python step that computes the keys when no sample was taken
    (:mod:`sparkbalance.spark.sql.python_source`: it would run that step again)."""

    keys: list
    counts: np.ndarray
    homes: np.ndarray
    rows: int
    spread: bool
    skipped: str | None = None
    #: Taken by an earlier call of the same query over the same files (no job now).
    remembered: bool = False


def sample_keys(df: "DataFrame", cols: Sequence[str], num_partitions: int, *, rows: int,
                look: int, could_matter: Callable[[np.ndarray, int], bool],
                refuse_shuffle: bool = False) -> SampledKeys:
    """The look of ``look`` rows and, when ``could_matter(counts, rows_read)`` is true of
    it, the spread up to ``rows`` rows in all (see the module docstring).

    ``cols`` are checked key columns of ``df``; null keys are left out. Jobs: one (the
    look), plus one when the spread runs; none when a Python step computes the keys
    (:func:`~sparkbalance.spark.sql.python_source.python_source`: reading even a prefix
    re-runs it, a whole partition per task): then nothing is read and ``skipped`` says why.
    With ``refuse_shuffle``, none either when reading the input runs a shuffle first (even a
    prefix would cost the shuffle's full pass; :func:`runs_shuffle` of the projection's
    plan, the one the sample reads: the input is not planned apart): ``skipped`` is then
    :data:`SHUFFLE_INPUT`.
    """
    n = int(num_partitions)
    if n < 1:
        raise ValueError(f"num_partitions={num_partitions!r}; expected an int >= 1")
    if look < 1 or rows < 1:
        raise ValueError(f"look={look!r}, rows={rows!r}; expected ints >= 1")
    refs = [sqlhash.quoted(c) for c in cols]
    # one projection and one filter as SQL text: a Column per key costs a round trip each
    exprs = [*[f"{r} AS `__sb_c{j}`" for j, r in enumerate(refs)],
             f"pmod(hash({', '.join(refs)}), {n}) AS `{HOME_COLUMN}`"]
    where = " AND ".join(f"{r} IS NOT NULL" for r in refs)
    width = len(cols)
    jvm = None if is_connect(df) else key_look(df)
    executed = None
    if jvm is not None and FIELD_SEP not in "".join(exprs) + where:
        # built and planned by the bridge: two driver calls instead of twelve
        from pyspark.sql import DataFrame
        keys = DataFrame(jvm.projection(df._jdf, FIELD_SEP.join(exprs), FIELD_SEP, where),
                         df.sparkSession)
        if jvm.stamp is not None:     # the plan's text and what it reads, one call
            plan, _, stamp = jvm.stamp(keys._jdf).partition("\0")
        else:
            plan, stamp = jvm.planText(keys._jdf), ""
    else:
        jvm = None
        keys = df.selectExpr(*exprs).where(where)
        if is_connect(keys):
            return _connect_sample(keys, width, rows, look, could_matter)
        executed = keys._jdf.queryExecution().executedPlan()
        plan, stamp = executed.toString(), ""
    if refuse_shuffle and may_shuffle(plan) and runs_shuffle(
            executed if executed is not None else keys._jdf.queryExecution().executedPlan(),
            plan):
        return SampledKeys([], np.zeros(0, np.int64), np.zeros(0, np.int64), 0, False,
                           SHUFFLE_INPUT)
    python = python_source(keys, plan)
    if python is not None:
        return SampledKeys([], np.zeros(0, np.int64), np.zeros(0, np.int64), 0, False, python)
    from sparkbalance.spark.rdd.keystats import STATS_JOB_GROUP
    group = (STATS_JOB_GROUP, f"sparkbalance: key sample of {', '.join(cols)} (a look at "
             f"{look} rows, a spread to {rows} when it shows a heavy key)")
    memo = (_PLAN_IDS.sub("", plan), n, width, int(rows), int(look))
    if stamp:
        kept = _KEPT.get((memo, stamp))
        if kept is not None:           # the same query over the same files: read before
            return replace(kept, remembered=True)
    inputs = (int(jvm.partitions(keys._jdf)) if jvm is not None      # df's partitions
              else int(keys._jdf.queryExecution().toRdd().getNumPartitions()))
    got = _classic_sample(inputs, keys, width, rows, look, could_matter, memo, group)
    if stamp:
        _keep(_KEPT, (memo, stamp), got)
    return got


def may_shuffle(text: str) -> bool:
    """Whether a physical plan's text names an exchange or a cached relation (else it runs
    no shuffle, and :func:`runs_shuffle` need not walk it)."""
    return "Exchange" in text or "InMemoryTableScan" in text


def runs_shuffle(plan: Any, text: str | None = None) -> bool:
    """Whether running the JVM physical plan ``plan`` (``text``: its text, when the caller
    has it) runs a shuffle first.

    Walks the plan down to its leaves (under adaptive execution its current plan, the one
    with the exchanges: AQE's *input* plan has none yet, ``EnsureRequirements`` adds them
    after); a cached relation is a leaf (its shuffles, if any, already ran or run once for
    every reader). A plan whose text names no exchange and no cached relation has none:
    that answer takes no round trip beyond the text instead of several per node.
    """
    if not may_shuffle(plan.toString() if text is None else text):
        return False
    if plan.getClass().getSimpleName() == "AdaptiveSparkPlanExec":
        plan = plan.executedPlan()
    stack = [plan]
    while stack:
        node = stack.pop()
        if node.getClass().getSimpleName() == "ShuffleExchangeExec":
            return True
        children = node.children()
        stack.extend(children.apply(i) for i in range(children.size()))
    return False


#: Expression ids in a plan's text (``k#155L``): a new DataFrame over the same input has
#: new ones.
_PLAN_IDS = re.compile(r"#\d+")
#: Sampled plans (text without expression ids, n, width, rows, look) whose last sample
#: escalated to the spread: their next sample runs look and spread as one job.
_ESCALATED: "OrderedDict[tuple, bool]" = OrderedDict()
#: Plans remembered at most (the oldest forgotten first).
MEMO_PLANS = 256


#: Samples of plans over stamped inputs (the files and their sizes: ``InputStamp``), by
#: (plan memo, stamp): the same query over the same files is not sampled again.
_KEPT: "OrderedDict[tuple, SampledKeys]" = OrderedDict()


def forget_kept_samples() -> None:
    """Forget the samples kept for unchanged inputs: the next sample of each is read.

    Examples
    --------
    >>> forget_kept_samples()
    """
    with _TAKE_LOCK:
        _KEPT.clear()


def _remember(memo: tuple, spread: bool) -> None:
    _keep(_ESCALATED, memo, spread)


def _keep(memo: "OrderedDict[tuple, Any]", key: tuple, value: Any) -> None:
    with _TAKE_LOCK:              # samples of several threads: one change at a time
        memo[key] = value
        memo.move_to_end(key)
        while len(memo) > MEMO_PLANS:
            memo.popitem(last=False)


def _classic_sample(inputs: int, keys: "DataFrame", width: int, rows: int, look: int,
                    could_matter: Callable[[np.ndarray, int], bool], memo: tuple,
                    group: tuple[str, str]) -> SampledKeys:
    """:func:`sample_keys` of a classic DataFrame (``keys``: its key projection, of
    ``inputs`` partitions; the JVM's partitions chosen).

    When the spread's share of a run, ``rows / runs``, is at least the look, the look is
    run 0's share of the *same* planned query (one query planned for both jobs, the look
    then reads that share). When the last sample of the same plan (same input, keys and
    sizes: ``memo``) escalated to the spread, look and spread run as **one** job over every
    run, each reading its share (the same rows in all, one job fewer); its outcome is
    remembered for the next one. Its jobs run in job group ``group`` (id, description)."""
    tasks = max(1, min(inputs, MAX_SPREAD_TASKS))
    reader = PrefixReader(keys, width, inputs, tasks, group)
    share = max(1, int(rows) // tasks)
    if tasks > 1 and _ESCALATED.get(memo):
        got = reader.counts(True, share, range(tasks))
        read = sum(got.values())
        _remember(memo, _could(got, read, could_matter))
        return _sampled(got, read, True)
    both = share >= look          # the look is run 0's share of the spread's runs
    got = (reader.counts(True, share, [0]) if both else reader.counts(False, look, [0]))
    read = sum(got.values())
    # a short partition 0 (the look read all it has) says little when there are others
    if tasks == 1 or rows <= read or not (_could(got, read, could_matter)
                                           or read < look // 4):
        _remember(memo, False)
        return _sampled(got, read, False)
    more = reader.counts(True, share if both else max(1, (int(rows) - read) // (tasks - 1)),
                         range(1, tasks))
    _remember(memo, True)
    got.update(more)
    return _sampled(got, read + sum(more.values()), True)


def _connect_sample(keys: "DataFrame", width: int, rows: int, look: int,
                    could_matter: Callable[[np.ndarray, int], bool]) -> SampledKeys:
    """Spark Connect's sample: the input's first ``look`` rows (Spark's ``limit``, which
    reads on when partition 0 is short) and, when they show a key that could matter, the
    first ``rows`` (its partitions cannot be chosen: the look's rows among them)."""
    with first_take_partitions(keys, 1, batch=look):
        got = Counter(_pairs(keys.limit(int(look)).collect(), width))
    read = sum(got.values())
    if read >= look and rows > read and _could(got, read, could_matter):
        with first_take_partitions(keys, CONNECT_TAKE_PARTITIONS, batch=rows):
            got = Counter(_pairs(keys.limit(int(rows)).collect(), width))
        return _sampled(got, sum(got.values()), True)
    return _sampled(got, read, False)


def _sampled(got: Counter, read: int, spread: bool) -> SampledKeys:
    items = sorted(got.items(), key=lambda kh_c: (-kh_c[1], kh_c[0][0], kh_c[0][1]))
    return SampledKeys([k for (k, _), _ in items],
                       np.fromiter((c for _, c in items), dtype=np.int64, count=len(items)),
                       np.fromiter((h for (_, h), _ in items), dtype=np.int64,
                                   count=len(items)),
                       int(read), spread)


def _could(got: Counter, read: int, could_matter: Callable[[np.ndarray, int], bool]) -> bool:
    if not got:
        return False
    return bool(could_matter(np.fromiter(got.values(), dtype=np.int64, count=len(got)), read))


#: Spark's number of partitions the first job of a ``limit`` collect reads (default 1).
_TAKE_CONF = "spark.sql.limit.initialNumPartitions"
#: Rows per Arrow batch a Python (pandas) step upstream computes at once (default 10,000;
#: the Spark Connect sample sets it: its plan is not read for Python steps).
_BATCH_CONF = "spark.sql.execution.arrow.maxRecordsPerBatch"
_TAKE_LOCK = threading.Lock()


@contextmanager
def first_take_partitions(df: "DataFrame", k: int, batch: int | None = None
                          ) -> Iterator[None]:
    """Within the block, a ``limit`` collect of ``df``'s session reads ``k`` input
    partitions in its first job (Spark's ``spark.sql.limit.initialNumPartitions``) and, with
    ``batch``, an Arrow-fed Python step upstream computes batches of at most ``batch`` rows
    (``spark.sql.execution.arrow.maxRecordsPerBatch``, when the session's is larger); the
    session's settings are restored after (one sample at a time per process).

    A pandas UDF upstream computes whole Arrow batches, 10,000 rows by default, whatever
    the limit: the look's batch keeps it to the look's rows.

    Examples
    --------
    >>> with first_take_partitions(df, 4):                       # doctest: +SKIP
    ...     rows = df.select("k").limit(10_000).collect()
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k={k!r}; expected an int >= 1 (input partitions of the first job)")
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int)
                              or batch < 1):
        raise ValueError(f"batch={batch!r}; expected an int >= 1 (rows per Arrow batch) "
                         "or None")
    conf = df.sparkSession.conf
    with _TAKE_LOCK:
        saved = {_TAKE_CONF: conf.get(_TAKE_CONF, None)}
        conf.set(_TAKE_CONF, str(k))
        if batch is not None:
            session = conf.get(_BATCH_CONF, None)
            if session is None or not 0 < int(session) <= batch:   # <= 0: unbounded
                saved[_BATCH_CONF] = session
                conf.set(_BATCH_CONF, str(batch))
        try:
            yield
        finally:
            for key, before in saved.items():
                if before is None:
                    conf.unset(key)
                else:
                    conf.set(key, before)
