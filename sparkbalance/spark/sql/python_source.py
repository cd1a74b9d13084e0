"""Whether reading a DataFrame's rows runs Python: the plan test behind "a sample never
re-runs Python work it cannot earn back".

Strategy "auto" and the session-wide mode's skew check decide from a bounded sample of the
key columns (:mod:`sparkbalance.spark.sql.keysample`). Over rows the JVM computes (a file
scan, ``spark.range``, a cached relation) a task stops reading at its share and the sample
costs a few thousand rows. Over rows a Python worker computes it does not: the worker runs
ahead of the JVM's limit and writes its whole partition (as much as the socket buffers
hold), so a look at 2,000 rows of partition 0 computed all 7,500 rows of it, and a spread
over 16 partitions computed the whole input again, once more than the user's job does
(``integration/benchmarks/bench_bridge_on_demand.py``, ``df-*`` jobs on the ``python``
input: 1.3-1.6x plain). Worker starts and Python row conversion come on top.

:func:`python_source` reads the physical plan of the sampled projection (after column
pruning, so a Python UDF whose output the key does not use is no reason) and names the
first Python step it must run:

* a Python evaluation node: ``ArrowEvalPython``/``BatchEvalPython`` (a Python UDF),
  ``MapInPandas``/``MapInArrow``, the grouped and cogrouped ``...InPandas``/``...InArrow``
  maps, Python aggregates, windows and table functions (any node whose name says Python,
  Pandas or Arrow evaluation);
* ``Scan ExistingRDD`` over a Python RDD (``createDataFrame`` of an RDD: every row converted
  by a Python worker; on classic PySpark a local list's rows too pass through one, re-pickled
  by a worker per partition); an RDD scan without a ``PythonRDD`` in its lineage (a
  checkpoint) is the JVM's. Which Python step is costly cannot be read from the plan: any
  counts.

A cached relation (``InMemoryRelation``) is read, not computed: the plan below it is skipped.

Examples
--------
>>> python_source_of_text("*(1) Project [k#0L]\\n+- *(1) Range (0, 10, step=1, splits=2)")
>>> python_source_of_text("MapInPandas f(k#3L)#4, [k#5L], false\\n+- *(1) Range (0, 9)")
'MapInPandas'
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

__all__ = ["python_source", "python_source_of_text", "RDD_SCAN"]

#: The plan text of an RDD scan (``RDDScanExec`` of a ``LogicalRDD``).
RDD_SCAN = "Scan ExistingRDD"
#: A physical node evaluating Python: UDFs, pandas/Arrow maps, aggregates, windows, UDTFs.
_PYTHON_NODE = re.compile(r"(EvalPython|InPandas|InArrow|Python)")
#: A tree line's node: the indentation and tree marks, a codegen stage tag, then the name.
_LINE = re.compile(r"^(?P<indent>[\s:|+\-]*)(?:\*\(\d+\) )?(?P<name>\w+)")


def python_source_of_text(plan: str) -> str | None:
    """The first Python step of a physical plan's tree text (:func:`python_source`'s rule;
    an RDD scan counts here, its lineage is not in the text), or None.

    Examples
    --------
    >>> python_source_of_text("*(1) Scan ExistingRDD[k#0L,v#1L]")
    'Scan ExistingRDD'
    >>> python_source_of_text("InMemoryTableScan [k#0L]\\n   +- InMemoryRelation [k#0L]\\n"
    ...                       "         +- *(1) Scan ExistingRDD[k#0L,v#1L]")
    """
    cached_at: int | None = None
    for line in plan.splitlines():
        m = _LINE.match(line)
        if m is None:
            continue
        depth = len(m.group("indent"))
        if cached_at is not None:
            if depth > cached_at:
                continue          # computed once into the cache, read from it now
            cached_at = None
        name = m.group("name")
        if name == "InMemoryRelation":
            cached_at = depth
        elif name == "Scan" and RDD_SCAN in line:
            return RDD_SCAN
        elif _PYTHON_NODE.search(name):
            return name
    return None


def python_source(df: "DataFrame", plan: str | None = None) -> str | None:
    """The Python step computing ``df``'s rows (module docstring), or None when the JVM
    computes them; ``plan``: the text of its physical plan when the caller has it.
    Classic DataFrames only (None for Spark Connect: its plan is the server's). Three
    driver round trips for the plan's text (none given it), three more when it scans an
    RDD (its lineage)."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        return None
    if plan is None:
        plan = jdf.queryExecution().executedPlan().toString()
    found = python_source_of_text(plan)
    if found == RDD_SCAN and "PythonRDD" not in jdf.queryExecution().toRdd().toDebugString():
        return None                       # a checkpoint's (or a JVM) RDD
    return found
