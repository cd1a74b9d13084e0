"""sparkbalance: keep keyed work on Apache Spark balanced when keys are skewed and shift.

The public API, one name per idea, grouped by what you do with it (imported lazily, so
``import sparkbalance`` neither imports nor starts Spark)::

    import sparkbalance as sb
    balanced = sb.partition_by(rdd, 32, strategy="mixed")         # balance an RDD
    totals = sb.reduce_by_key(rdd, operator.add, 32, strategy="pkg")
    counts = sb.group_by(df, "user", num_partitions=32).count()   # balance a DataFrame
    joined = sb.join(clicks, users, "user", strategy="split")     # RDDs or DataFrames
    op = sb.KeyedStateOperator(spark, 8, update=lambda s, v: s + v, initial=0)  # keyed state
    print(sb.diagnose(df, "user", num_partitions=32))            # observe

Lower levels live in their sub-packages: partition functions in :mod:`sparkbalance.routing`
(``HashPartitioner``, ``RoutingTablePartitioner``, ``PKGPartitioner``, ...), planners in
:mod:`sparkbalance.planning` (``Mixed``, ``MinTable``, ``SSM``, ``GlobalCorrelation``, ...),
statistics in :mod:`sparkbalance.stats`, the strategy registry in
:mod:`sparkbalance.strategies`, the Spark side's parts (listeners, key statistics, DataFrame
methods) in :mod:`sparkbalance.spark` and the keyed state's in :mod:`sparkbalance.state`.

Examples
--------
>>> import sparkbalance as sb
>>> "join" in sb.__all__ and "join_df" not in sb.__all__
True
"""
from __future__ import annotations

from sparkbalance._lazy import lazy_getattr

__version__ = "0.1.0"

# public name -> module that defines it, grouped by what a user does. A new public name
# joins one of these groups; a lower-level one belongs in its sub-package's __init__ instead.
_EXPORTS: dict[str, str] = {
    # balance an RDD (drop-ins for the pyspark.RDD methods of the same meaning)
    "partition_by": "sparkbalance.spark.rdd.adapters",
    "reduce_by_key": "sparkbalance.spark.rdd.adapters",
    "aggregate_by_key": "sparkbalance.spark.rdd.adapters",
    "group_by_key": "sparkbalance.spark.rdd.adapters",
    # balance a DataFrame (routed inside the JVM, no Python UDF)
    "repartition": "sparkbalance.spark.sql.dataframe",
    "group_by": "sparkbalance.spark.sql.dataframe",
    "with_window_columns": "sparkbalance.spark.window.windows",  # window functions, hot keys split
    # either: a pair RDD or DataFrame columns
    "join": "sparkbalance.spark.joins",
    "fit_partitioner": "sparkbalance.spark.fit",
    "install": "sparkbalance.spark.rdd.install",   # rdd.balancedReduceByKey, df.balancedGroupBy...
    # or leave the calls unchanged: df.repartition / groupBy / rdd.reduceByKey balanced
    # when skew makes it pay (session-wide mode, docs/enable.md)
    "enable": "sparkbalance.spark.enable.install",
    "disable": "sparkbalance.spark.enable.install",
    # keyed state across batches
    "KeyedStateOperator": "sparkbalance.state.operator",
    "stateful": "sparkbalance.state.pandas_state.query",  # applyInPandasWithState, balanced
    "CheckpointError": "sparkbalance.state.durability.manifest",
    "LeaseError": "sparkbalance.state.durability.lease",
    "ReplayError": "sparkbalance.state.streaming",
    # observe: skew before, task times during, the balance records after
    "diagnose": "sparkbalance.spark.diagnose.skew_report",
    "SkewReport": "sparkbalance.spark.diagnose.skew_report",
    "open_listener": "sparkbalance.spark.metrics.listener",
    "sparkbalance_job_group": "sparkbalance.spark.session.jobs",
    "TaskRecord": "sparkbalance.spark.metrics.records",
    "balance_log": "sparkbalance.spark.report.balance_log",
    "BalanceLog": "sparkbalance.spark.report.balance_log",
    # session and shipping: the bridge jar on the driver, the package on the executors
    "configure": "sparkbalance.spark.session.bridge",
    "bridge_jar": "sparkbalance.spark.session.bridge",
    "submit_args": "sparkbalance.spark.session.submit",
    "pyfiles_zip": "sparkbalance.spark.session.submit",
    # plan: the core values a plan is made of and from, and a plan kept across runs
    "KeyStats": "sparkbalance.stats.keystats",
    "Workload": "sparkbalance.stats.workload",
    "PartitionFunction": "sparkbalance.routing.base",
    "Plan": "sparkbalance.planning.plan",
    "save_plan": "sparkbalance.routing.persist",
    "load_plan": "sparkbalance.routing.persist",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


__getattr__ = lazy_getattr(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return __all__
