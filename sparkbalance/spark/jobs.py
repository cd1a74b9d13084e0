"""Labelling sparkbalance's own Spark jobs with a job group.

sparkbalance runs jobs of its own (statistics, planning probes, profiled batches) under a
job group, so the Spark UI names them and a task recorder created with that group
(:func:`sparkbalance.spark.listener.open_listener`) records only them.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from .bridge import spark_context

__all__ = ["JOB_GROUP_PROPERTY", "JOB_DESCRIPTION_PROPERTY", "sparkbalance_job_group"]

#: Local property Spark uses for ``SparkContext.setJobGroup`` (SparkContext.SPARK_JOB_GROUP_ID).
JOB_GROUP_PROPERTY = "spark.jobGroup.id"
#: Local property holding the job description shown in the UI (SparkContext.SPARK_JOB_DESCRIPTION).
JOB_DESCRIPTION_PROPERTY = "spark.job.description"
# setJobGroup also sets this one (SparkContext.SPARK_JOB_INTERRUPT_ON_CANCEL); restored too.
_JOB_INTERRUPT_PROPERTY = "spark.job.interruptOnCancel"


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
        Job description shown in the Spark UI (defaults to ``name``).

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
    keys = (JOB_GROUP_PROPERTY, JOB_DESCRIPTION_PROPERTY, _JOB_INTERRUPT_PROPERTY)
    old = {k: sc.getLocalProperty(k) for k in keys}
    sc.setJobGroup(name, description if description is not None else name)
    try:
        yield name
    finally:
        for k, v in old.items():
            # setLocalProperty(k, None) removes the property on the JVM side.
            sc.setLocalProperty(k, v)
