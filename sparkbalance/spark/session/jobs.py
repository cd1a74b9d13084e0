"""Labelling sparkbalance's own Spark jobs: job groups, descriptions, job ids.

sparkbalance runs jobs of its own (statistics, planning probes, profiled batches, state
migrations) under a job group, so the Spark UI names them and a task recorder created with
that group (:func:`sparkbalance.spark.metrics.listener.open_listener`) records only them.

Every such job also carries a description saying what it is for ("sparkbalance: key
statistics for repartition(user_id, 64, mixed)"): a balanced operation runs inside
:func:`operation_jobs`, which sets the description only (the caller's job group stays, so
listeners filtering on the user's group keep seeing the shuffle's map stage) and names the
operation; a job group opened inside it (:func:`sparkbalance_job_group`) appends that name
to its own description. Both restore the caller's local properties on exit.

With the bridge (``LocalProperties``, :func:`swap_local_properties`) the properties are
set and the caller's read back in one py4j call, and put back in another: a job group cost
seven round trips (three properties read, one set, three restored), a description three.

Both are also where a session's first sparkbalance job starts, so both first make sure the
executors can import sparkbalance (:func:`~sparkbalance.spark.session.executor_python.
ensure_executor_python`: nothing to do after the first call of a session).
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Iterator

from sparkbalance.spark.session.bridge import spark_context
from sparkbalance.spark.session.executor_python import ensure_executor_python
from sparkbalance.spark.session.jvm_loader import bridge
from sparkbalance.spark.session.memo import SessionMemo

__all__ = ["JOB_GROUP_PROPERTY", "JOB_DESCRIPTION_PROPERTY", "DESCRIPTION_PREFIX",
           "LOCAL_PROPERTIES_CLASS", "sparkbalance_job_group", "operation_jobs",
           "current_operation", "next_job_id", "job_description", "swap_local_properties"]

#: Local property Spark uses for ``SparkContext.setJobGroup`` (SparkContext.SPARK_JOB_GROUP_ID).
JOB_GROUP_PROPERTY = "spark.jobGroup.id"
#: Local property holding the job description shown in the UI (SparkContext.SPARK_JOB_DESCRIPTION).
JOB_DESCRIPTION_PROPERTY = "spark.job.description"
# setJobGroup also sets this one (SparkContext.SPARK_JOB_INTERRUPT_ON_CANCEL); restored too.
_JOB_INTERRUPT_PROPERTY = "spark.job.interruptOnCancel"
#: Every description sparkbalance gives its jobs starts with this.
DESCRIPTION_PREFIX = "sparkbalance: "

#: The bridge's one-call local properties (jvm_bridge/.../bridge/LocalProperties.java).
LOCAL_PROPERTIES_CLASS = "io.sparkbalance.bridge.LocalProperties"

# The balanced operation running in this thread/context (its label), None outside one.
_OPERATION: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "sparkbalance_operation", default=None)


def current_operation() -> str | None:
    """Label of the balanced operation running in this context (None outside one).

    Examples
    --------
    >>> current_operation() is None
    True
    """
    return _OPERATION.get()


def job_description(description: str) -> str:
    """``description``, followed by "for <operation>" when one is running: the description
    :func:`sparkbalance_job_group` gives its jobs (for a group set in the JVM instead).

    Examples
    --------
    >>> job_description("sparkbalance: key sample")
    'sparkbalance: key sample'
    """
    op = _OPERATION.get()
    return description if op is None or op in description else f"{description} for {op}"


# id(JavaSparkContext) -> (it, the DAGScheduler's job counter, or the scheduler itself when
# the counter reaches Python as an int) of each context read so far.
_NEXT_JOB: dict[int, tuple[Any, Any, bool]] = {}


def next_job_id(sc: Any) -> int | None:
    """The id the next Spark job of ``sc`` will get (None when it cannot be read).

    Spark numbers jobs consecutively per application (``DAGScheduler.nextJobId``), so the
    ids between two readings are the jobs submitted in between, known at once (the status
    store learns of jobs asynchronously, through the listener bus). One py4j call per
    reading once a context was read: the scheduler's counter (Spark 3.5), or the scheduler
    (Spark 4.x, where py4j hands the counter over as an int), is kept per context.

    Examples
    --------
    >>> next_job_id(None) is None
    True
    """
    try:
        sc = spark_context(sc)
        kept = _NEXT_JOB.get(id(sc._jsc))
        if kept is None or kept[0] is not sc._jsc:
            scheduler = sc._jsc.sc().dagScheduler()
            value = scheduler.nextJobId()
            if isinstance(value, int):   # the counter reaches Python as its value
                _NEXT_JOB[id(sc._jsc)] = (sc._jsc, scheduler, False)
                return value
            kept = _NEXT_JOB[id(sc._jsc)] = (sc._jsc, value, True)
        return int(kept[1].get() if kept[2] else kept[1].nextJobId())
    except Exception:  # no JVM (Spark Connect, a stopped context) or an internal API change
        return None


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2     # Java's String.length()


def _encode(items: list[str | None]) -> str:
    """Items as ``LocalProperties`` reads them: ``-`` for None, else ``<length>:<text>``
    (length in UTF-16 code units, as Java counts).

    Examples
    --------
    >>> _encode(["spark.job.description", None, "a:b"])
    '21:spark.job.description-3:a:b'
    """
    return "".join("-" if v is None else f"{_utf16(v)}:{v}" for v in items)


def _decode(text: str) -> list[str | None]:
    """The items of :func:`_encode`'s form.

    Examples
    --------
    >>> _decode(_encode(["x", None, "", "3:-\U0001F600"]))
    ['x', None, '', '3:-\U0001F600']
    """
    raw, out, i = text.encode("utf-16-le"), [], 0
    while i < len(raw):
        if raw[i:i + 2] == b"-\x00":
            out.append(None)
            i += 2
            continue
        colon = raw.index(b":\x00", i)
        n = int(raw[i:colon].decode("utf-16-le"))
        out.append(raw[colon + 2:colon + 2 + 2 * n].decode("utf-16-le"))
        i = colon + 2 + 2 * n
    return out


_SWAP = SessionMemo()


def _swapper(sc: Any) -> Any:
    """The bridge's ``LocalProperties.swap`` of ``sc``'s session as a py4j member, or None
    without a bridge that has it. The member is kept with the bridge it came from (looking
    it up is a round trip); the bridge is asked each time (a kept answer, no round trip),
    so a session whose bridge comes or goes (``$SPARKBALANCE_BRIDGE=off`` set, then unset)
    follows it rather than a first answer kept for the session's life."""
    b = bridge(sc)
    if b is None or not b.has(LOCAL_PROPERTIES_CLASS):
        return None
    kept = _SWAP.get(sc, dict)
    if kept.get("bridge") is not b:
        kept["bridge"], kept["swap"] = b, b.cls(LOCAL_PROPERTIES_CLASS).swap
    return kept["swap"]


def swap_local_properties(sc: Any, pairs: list[tuple[str, str | None]]
                          ) -> list[str | None] | None:
    """Set the calling thread's local properties ``pairs`` (key, value; None removes one),
    in order, and return the values they had, in one py4j call; None (nothing set) without
    the bridge's ``LocalProperties``: the caller reads and sets them itself.

    Examples
    --------
    >>> old = swap_local_properties(sc, [(JOB_DESCRIPTION_PROPERTY, "x")])  # doctest: +SKIP
    >>> swap_local_properties(sc, [(JOB_DESCRIPTION_PROPERTY, old[0])])     # doctest: +SKIP
    ['x']
    """
    try:
        member = _swapper(sc)
    except Exception:  # noqa: BLE001 - no JVM handle to key on: the plain calls
        return None
    if member is None:
        return None
    old = _decode(member(sc._jsc, _encode([x for kv in pairs for x in kv])))
    if len(old) != len(pairs):
        raise RuntimeError(f"LocalProperties.swap answered {len(old)} values for "
                           f"{len(pairs)} properties")
    return old


@contextlib.contextmanager
def operation_jobs(sc: Any, label: str, description: str) -> Iterator[str]:
    """Run the block as balanced operation ``label``; its jobs carry ``description``.

    Sets the job description only (the caller's job group and interrupt flag stay) and
    restores the caller's description on exit, also on an exception. Nested calls keep the
    outer operation (its label and description).

    Examples
    --------
    >>> with operation_jobs(spark, "repartition(k, 8, mixed)",
    ...                     "key statistics for repartition(k, 8, mixed)"):  # doctest: +SKIP
    ...     stats = key_stats(df, "k")
    """
    if _OPERATION.get() is not None:
        yield _OPERATION.get()
        return
    token = _OPERATION.set(label)
    text = job_description(description)
    try:
        sc = spark_context(sc)
        old = swap_local_properties(sc, [(JOB_DESCRIPTION_PROPERTY, text)])
        swapped = old is not None
        if not swapped:
            old = [sc.getLocalProperty(JOB_DESCRIPTION_PROPERTY)]
    except Exception:  # Spark Connect: no SparkContext, nothing to label
        sc = None
    if sc is not None:
        ensure_executor_python(sc)
    try:
        if sc is not None and not swapped:
            sc.setLocalProperty(JOB_DESCRIPTION_PROPERTY, text)
        yield label
    finally:
        _OPERATION.reset(token)
        if sc is not None and (not swapped or swap_local_properties(
                sc, [(JOB_DESCRIPTION_PROPERTY, old[0])]) is None):
            sc.setLocalProperty(JOB_DESCRIPTION_PROPERTY, old[0])


@contextlib.contextmanager
def sparkbalance_job_group(sc: Any, name: str, description: str | None = None) -> Iterator[str]:
    """Label the jobs run inside the block with job group ``name``; restore the old label after.

    The caller's own job group, description and interrupt flag are put back on exit (also
    on an exception). Local properties are per thread in PySpark (pinned thread mode), so
    this labels the calling thread only.

    Parameters
    ----------
    sc : SparkContext or SparkSession
    name : str
        Job group id (non-empty).
    description : str, optional
        Job description shown in the Spark UI (defaults to ``name``); inside
        :func:`operation_jobs` followed by "for <operation>". sparkbalance's own
        descriptions start with :data:`DESCRIPTION_PREFIX`.

    Yields
    ------
    str
        ``name``.

    Examples
    --------
    >>> with sparkbalance_job_group(spark, "sparkbalance-stats"):  # doctest: +SKIP
    ...     rdd.count()
    >>> spark.sparkContext.getLocalProperty(JOB_GROUP_PROPERTY) is None  # doctest: +SKIP
    True
    """
    if not name:
        raise ValueError(f"name={name!r}; expected a non-empty job group id")
    sc = spark_context(sc)
    ensure_executor_python(sc)
    keys = (JOB_DESCRIPTION_PROPERTY, JOB_GROUP_PROPERTY, _JOB_INTERRUPT_PROPERTY)
    text = job_description(description if description is not None else name)
    # what SparkContext.setJobGroup(name, text) sets, in its order, in one call
    got = swap_local_properties(sc, list(zip(keys, (text, name, "false"))))
    old = dict(zip(keys, got)) if got is not None else {
        k: sc.getLocalProperty(k) for k in keys}
    if got is None:
        sc.setJobGroup(name, text)
    try:
        yield name
    finally:
        # a None value removes the property on the JVM side
        if swap_local_properties(sc, list(old.items())) is None:
            for k, v in old.items():
                sc.setLocalProperty(k, v)
