"""Adapters to Spark: the RDD and DataFrame paths, the listener, the reports, the session.

Only this package and :mod:`sparkbalance.state` import pyspark. Sub-packages, one concept
each:

- :mod:`.rdd` — the RDD adapters (``partition_by``, ``reduce_by_key``, ...), the map side
  that routes records, the zero-pass statistics read from the shuffle's own map output, key
  statistics of a pair RDD, the opt-in ``rdd.balanced*`` methods;
- :mod:`.sql` — the DataFrame adapters (``repartition``, ``group_by``, ``join_df``): the
  partition function as a SQL expression of the same hashes, rows placed by partition id
  inside the JVM, key statistics of key columns, grouped and cogrouped data;
- :mod:`.joins` — ``join``: one name for the RDD join and the DataFrame join;
- :mod:`.fit` — ``fit_partitioner`` of an RDD or of DataFrame columns;
- :mod:`.metrics` — per-task metrics from Spark's listener bus (py4j or the bridge's JVM
  recorder) as plain records;
- :mod:`.report` — the balance records of every planned operation (Balance tab, log lines);
- :mod:`.diagnose` — ``diagnose``: how skewed a key is and which strategy would pay;
- :mod:`.session` — the bridge jar, ``spark.sparkbalance.*`` configuration, job groups,
  spark-submit arguments and the ``--py-files`` zip.

The names a user needs are on :mod:`sparkbalance` itself; the lower-level Spark-side names
below are exported here (lazily: importing this package imports no pyspark).

Examples
--------
>>> from sparkbalance.spark import TaskMetricsListener, gather_key_stats  # doctest: +SKIP
"""
from __future__ import annotations

from sparkbalance._lazy import lazy_getattr

_LAZY: dict[str, str] = {
    # statistics gathered with a Spark job (RDD pairs, DataFrame key columns, measured groups)
    "gather_key_stats": "sparkbalance.spark.rdd.keystats",
    "key_stats": "sparkbalance.spark.sql.keystats",
    "group_cost_stats": "sparkbalance.spark.sql.grouped",
    # the grouped DataFrame ``sparkbalance.group_by`` returns
    "BalancedGroupedData": "sparkbalance.spark.sql.dataframe",
    # what ``sparkbalance.install`` attached, removed again
    "uninstall": "sparkbalance.spark.rdd.install",
    # the recorders ``sparkbalance.open_listener`` chooses between, and their records
    "Recorder": "sparkbalance.spark.metrics.recorder",
    "TaskMetricsListener": "sparkbalance.spark.metrics.py4j_listener",
    "JvmTaskMetricsListener": "sparkbalance.spark.metrics.jvm_recorder",
    "StageRecord": "sparkbalance.spark.metrics.records",
    "ExecutorRecord": "sparkbalance.spark.metrics.records",
}

__all__ = sorted(_LAZY)

__getattr__ = lazy_getattr(__name__, _LAZY)
