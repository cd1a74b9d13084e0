"""sparkbalance: keep keyed work on Apache Spark balanced when keys are skewed and shift.

Public API (imported lazily, so ``import sparkbalance`` does not start or import Spark)::

    import sparkbalance as sb
    balanced = sb.partition_by(rdd, 32, strategy="mixed")
    totals = sb.reduce_by_key(rdd, operator.add, 32, strategy="pkg")
"""
from __future__ import annotations

from sparkbalance._lazy import lazy_getattr

__version__ = "0.1.0"

# public name -> module that defines it. Append one line per public name.
_EXPORTS: dict[str, str] = {
    # hashing
    "stable_hash": "sparkbalance.hashing",
    "stable_hash_array": "sparkbalance.hashing",
    "hash_family": "sparkbalance.hashing",
    "hash_family_array": "sparkbalance.hashing",
    # routing
    "PartitionFunction": "sparkbalance.routing.base",
    "partition_func": "sparkbalance.routing.base",
    "HashPartitioner": "sparkbalance.routing.hash",
    "RoutingTable": "sparkbalance.routing.table",
    "RoutingDelta": "sparkbalance.routing.table",
    "RoutingTablePartitioner": "sparkbalance.routing.table",
    "KeyGroupPartitioner": "sparkbalance.routing.keygroups",
    "GroupMapPartitioner": "sparkbalance.routing.keygroups",
    "save_plan": "sparkbalance.routing.persist",
    "load_plan": "sparkbalance.routing.persist",
    "PKGPartitioner": "sparkbalance.routing.pkg",
    "ChoicesPartitioner": "sparkbalance.routing.choices",
    "TimeAwarePartitioner": "sparkbalance.routing.tag",
    # stats
    "KeyStats": "sparkbalance.stats.keystats",
    "Workload": "sparkbalance.stats.workload",
    "SpaceSaving": "sparkbalance.stats.spacesaving",
    "heavy_hitters": "sparkbalance.stats.heavy",
    # strategies
    "fit": "sparkbalance.strategies",
    "DEFAULT_STRATEGY": "sparkbalance.strategies",
    "fit_keygroups": "sparkbalance.strategies.keygroups",
    # spark adapters (RDD)
    "partition_by": "sparkbalance.spark.rdd.adapters",
    "reduce_by_key": "sparkbalance.spark.rdd.adapters",
    "aggregate_by_key": "sparkbalance.spark.rdd.adapters",
    "group_by_key": "sparkbalance.spark.rdd.adapters",
    "join": "sparkbalance.spark.rdd.adapters",
    "fit_partitioner": "sparkbalance.spark.fit",
    "install": "sparkbalance.spark.rdd.install",
    # listener
    "TaskMetricsListener": "sparkbalance.spark.metrics.py4j_listener",
    "open_listener": "sparkbalance.spark.metrics.listener",
    "sparkbalance_job_group": "sparkbalance.spark.session.jobs",
    "TaskRecord": "sparkbalance.spark.metrics.records",
    "Recorder": "sparkbalance.spark.metrics.recorder",
    "session_builder_with_bridge": "sparkbalance.spark.session.bridge",
    "bridge_jar": "sparkbalance.spark.session.bridge",
    "configure": "sparkbalance.spark.session.bridge",
    "submit_args": "sparkbalance.spark.session.submit",
    "pyfiles_zip": "sparkbalance.spark.session.submit",
    "time_weighted_stats": "sparkbalance.stats.timeweights",
    # dataframe
    "repartition": "sparkbalance.spark.sql.dataframe",
    "group_by": "sparkbalance.spark.sql.dataframe",
    "join_df": "sparkbalance.spark.sql.join",
    "install_dataframe_methods": "sparkbalance.spark.sql.install",
    "balanced_repartition": "sparkbalance.spark.sql.install",
    "balanced_agg": "sparkbalance.spark.sql.install",
    "balanced_join": "sparkbalance.spark.sql.install",
    "group_cost_stats": "sparkbalance.spark.sql.grouped",
    "diagnose": "sparkbalance.spark.diagnose.skew_report",
    "SkewReport": "sparkbalance.spark.diagnose.skew_report",
    # Spark UI plugin and the balance records
    "balance_log": "sparkbalance.spark.report.balance_log",
    "BalanceLog": "sparkbalance.spark.report.balance_log",
    # keyed state
    "KeyedStateOperator": "sparkbalance.state.operator",
    # interval planners (Ding et al.)
    "SSM": "sparkbalance.planning.intervals",
    "SimpleSSM": "sparkbalance.planning.intervals",
    "OMS": "sparkbalance.planning.intervals",
    "MTMAware": "sparkbalance.planning.intervals",
    "IntervalPlan": "sparkbalance.planning.intervals",
    "ConsistentHashing": "sparkbalance.planning.intervals",
    "StormDefault": "sparkbalance.planning.intervals",
    "transition_matrix": "sparkbalance.planning.intervals",
    # correlation-based placement (Xing et al.)
    "GlobalCorrelation": "sparkbalance.planning.correlation",
    "PairwiseCorrelation": "sparkbalance.planning.correlation",
    "LLFPlacement": "sparkbalance.planning.correlation",
    "RandomPlacement": "sparkbalance.planning.correlation",
    "Placement": "sparkbalance.planning.correlation",
    "LoadWindow": "sparkbalance.planning.correlation",
    "correlation": "sparkbalance.planning.correlation",
    "load_statistics": "sparkbalance.planning.correlation",
    # routing-table planners (Fang et al.)
    "Plan": "sparkbalance.planning",
    "Move": "sparkbalance.planning",
    "Planner": "sparkbalance.planning",
    "LLFD": "sparkbalance.planning",
    "MinTable": "sparkbalance.planning",
    "MinMig": "sparkbalance.planning",
    "Mixed": "sparkbalance.planning",
    "MixedBF": "sparkbalance.planning",
    "Readj": "sparkbalance.planning",
    "compact": "sparkbalance.planning",
    "hlhe": "sparkbalance.planning",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


__getattr__ = lazy_getattr(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return __all__
