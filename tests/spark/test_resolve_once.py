"""One resolution of the strategy per adapter call: every RDD and DataFrame adapter calls the
registry's resolver (sparkbalance.strategies.resolve) exactly once, and passes the record
down; fitting, statistics, the zero-pass shuffle and a cogroup's refit never resolve again."""
from __future__ import annotations

import operator

import pytest
from pyspark.sql import functions as F

from sparkbalance.routing import HashPartitioner
from sparkbalance.spark import fit as sbfit
from sparkbalance.spark.diagnose.skew_report import diagnose
from sparkbalance.spark.rdd import adapters as sbr
from sparkbalance.spark.sql import dataframe as sbdf
from sparkbalance.spark.sql import join as sbjoin
from sparkbalance.spark.sql.grouped import COPARTITION_CONF

N = 4


@pytest.fixture(scope="module")
def pairs(sc):
    return sc.parallelize([(0 if i % 3 else i % 11, 1) for i in range(400)], 3)


@pytest.fixture(scope="module")
def df(spark):
    return spark.createDataFrame([(0 if i % 3 else i % 11, i) for i in range(400)],
                                 "k long, v long")


RDD_CALLS = {
    "partition_by": lambda r, s: sbr.partition_by(r, N, s),
    "reduce_by_key": lambda r, s: sbr.reduce_by_key(r, operator.add, N, s),
    "aggregate_by_key": lambda r, s: sbr.aggregate_by_key(r, 0, operator.add, operator.add,
                                                          N, s),
    "group_by_key": lambda r, s: sbr.group_by_key(r, N, s),
    "join": lambda r, s: sbr.join(r, r, N, s),
    "fit_partitioner": lambda r, s: sbfit.fit_partitioner(r, N, strategy=s),
}


@pytest.mark.parametrize("strategy", [None, "mixed", "keygroups", "pkg"])
@pytest.mark.parametrize("adapter", sorted(RDD_CALLS))
def test_each_rdd_adapter_resolves_once(pairs, calls, adapter, strategy):
    if adapter == "fit_partitioner" and strategy is None:
        strategy = "auto"  # no zero-pass path for fit_partitioner: statistics + Mixed
    out = RDD_CALLS[adapter](pairs, strategy)
    if hasattr(out, "collect"):
        out.count()
    assert len(calls) == 1, calls


def test_a_fitted_function_is_resolved_once_too(pairs, calls):
    sbr.reduce_by_key(pairs, operator.add, None, HashPartitioner(N)).count()
    assert len(calls) == 1 and isinstance(calls[0], HashPartitioner)


def test_the_zero_pass_path_resolves_once(pairs, calls):
    sbr.reduce_by_key(pairs, operator.add, N, stats="map-output").count()
    sbr.partition_by(pairs, N, min_gain=0.0).count()
    assert len(calls) == 2


DF_CALLS = {
    "repartition": lambda d, s: sbdf.repartition(d, N, "k", strategy=s),
    "group_by.agg": lambda d, s: sbdf.group_by(d, "k", num_partitions=N,
                                               strategy=s).agg(F.sum("v")),
    "group_by.count": lambda d, s: sbdf.group_by(d, "k", num_partitions=N,
                                                 strategy=s).count(),
    "group_by.applyInPandas": lambda d, s: sbdf.group_by(
        d, "k", num_partitions=N, strategy=s).applyInPandas(lambda pdf: pdf, d.schema),
    "join_df": lambda d, s: sbjoin.join_df(d, d.withColumnRenamed("v", "w"), "k",
                                           num_partitions=N, strategy=s),
    "fit_partitioner": lambda d, s: sbfit.fit_partitioner(d, N, "k", strategy=s),
}


@pytest.mark.parametrize("strategy", [None, "mixed", "keygroups"])
@pytest.mark.parametrize("adapter", sorted(DF_CALLS))
def test_each_dataframe_adapter_resolves_once(df, calls, adapter, strategy):
    out = DF_CALLS[adapter](df, strategy)
    if hasattr(out, "collect"):
        out.count()
    assert len(calls) == 1, calls


def test_a_cogroup_refits_the_left_record_without_resolving(spark, df, calls):
    left = sbdf.group_by(df, "k", num_partitions=N, strategy="mixed")
    right = sbdf.group_by(df.withColumnRenamed("v", "w"), "k", num_partitions=N,
                          strategy="hash")
    assert len(calls) == 2
    old = spark.conf.get(COPARTITION_CONF, "true")
    spark.conf.set(COPARTITION_CONF, "false")
    try:
        out = left.cogroup(right).applyInPandas(lambda a, b: a, df.schema)
        out.count()
    finally:
        spark.conf.set(COPARTITION_CONF, old)
    assert len(calls) == 2


def test_diagnose_resolves_each_compared_strategy_once_before_any_job(spark, df, calls):
    diagnose(df, "k", num_partitions=N, strategies=["hash", "mixed", "keygroups"])
    assert calls == ["hash", "mixed", "keygroups"]
    tracker = spark.sparkContext.statusTracker()
    before = len(tracker.getJobIdsForGroup(None))
    with pytest.raises(ValueError, match="strategy='nope'"):
        diagnose(df, "k", strategies=["nope"])
    assert len(tracker.getJobIdsForGroup(None)) == before
