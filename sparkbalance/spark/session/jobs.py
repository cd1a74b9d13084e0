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

__all__ = ["JOB_GROUP_PROPERTY", "JOB_DESCRIPTION_PROPERTY", "DESCRIPTION_PREFIX",
           "sparkbalance_job_group", "operation_jobs", "current_operation", "next_job_id",
           "job_description"]

#: Local property Spark uses for ``SparkContext.setJobGroup`` (SparkContext.SPARK_JOB_GROUP_ID).
JOB_GROUP_PROPERTY = "spark.jobGroup.id"
#: Local property holding the job description shown in the UI (SparkContext.SPARK_JOB_DESCRIPTION).
JOB_DESCRIPTION_PROPERTY = "spark.job.description"
# setJobGroup also sets this one (SparkContext.SPARK_JOB_INTERRUPT_ON_CANCEL); restored too.
_JOB_INTERRUPT_PROPERTY = "spark.job.interruptOnCancel"
#: Every description sparkbalance gives its jobs starts with this.
DESCRIPTION_PREFIX = "sparkbalance: "

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
    try:
        sc = spark_context(sc)
        old = sc.getLocalProperty(JOB_DESCRIPTION_PROPERTY)
    except Exception:  # Spark Connect: no SparkContext, nothing to label
        sc = None
    if sc is not None:
        ensure_executor_python(sc)
    try:
        if sc is not None:
            sc.setLocalProperty(JOB_DESCRIPTION_PROPERTY, job_description(description))
        yield label
    finally:
        _OPERATION.reset(token)
        if sc is not None:
            sc.setLocalProperty(JOB_DESCRIPTION_PROPERTY, old)


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
    keys = (JOB_GROUP_PROPERTY, JOB_DESCRIPTION_PROPERTY, _JOB_INTERRUPT_PROPERTY)
    old = {k: sc.getLocalProperty(k) for k in keys}
    sc.setJobGroup(name, job_description(description if description is not None else name))
    try:
        yield name
    finally:
        for k, v in old.items():
            # setLocalProperty(k, None) removes the property on the JVM side.
            sc.setLocalProperty(k, v)
