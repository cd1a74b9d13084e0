"""One configuration: spark.sparkbalance.* read alike by the RDD adapters, the DataFrame
adapters and the keyed state; explicit arguments win; the same defaults everywhere."""
from __future__ import annotations

import contextlib

import pytest

from sparkbalance import strategies
from sparkbalance.routing import HashPartitioner, PKGPartitioner
from sparkbalance.spark.session import conf
from sparkbalance.spark.sql import dataframe as sbdf
from sparkbalance.spark.rdd import adapters as sbrdd
from sparkbalance.state.operator import KeyedStateOperator


@contextlib.contextmanager
def _conf(spark, **settings):
    for name, value in settings.items():
        spark.conf.set(conf.KEYS[name].key, str(value))
    try:
        yield
    finally:
        for name in settings:
            spark.conf.unset(conf.KEYS[name].key)


@pytest.fixture(scope="module")
def pairs(sc):
    return sc.parallelize([(i % 5 if i % 3 else 0, 1) for i in range(300)], 3)


def _spy_fit(monkeypatch):
    seen = {}
    real = strategies.fit

    def spy(name, stats, n, **kw):
        seen.update(name=name, **kw)
        return real(name, stats, n, **kw)
    monkeypatch.setattr(strategies, "fit", spy)
    return seen


def test_rdd_adapters_read_the_conf_and_explicit_wins(spark, pairs, monkeypatch):
    with _conf(spark, strategy="pkg"):
        assert isinstance(sbrdd.fit_partitioner(pairs, 4), PKGPartitioner)
        assert isinstance(sbrdd.fit_partitioner(pairs, 4, strategy="hash"), HashPartitioner)
    seen = _spy_fit(monkeypatch)
    with _conf(spark, strategy="mintable", theta=0.5, max_table=7):
        sbrdd.fit_partitioner(pairs, 4)
        assert (seen["name"], seen["theta"], seen["max_table"]) == ("mintable", 0.5, 7)
        sbrdd.fit_partitioner(pairs, 4, theta=0.25)
        assert seen["theta"] == 0.25
    with _conf(spark, sample_fraction="abc"):
        with pytest.raises(ValueError, match="spark.sparkbalance.sampleFraction='abc'"):
            sbrdd.fit_partitioner(pairs, 4, strategy="mixed")


def test_rdd_and_dataframe_adapters_share_the_default(spark, pairs, monkeypatch):
    seen = _spy_fit(monkeypatch)
    sbrdd.fit_partitioner(pairs, 4)
    rdd_default = seen["name"]
    df = spark.createDataFrame([(1, 2)], "k int, v int")
    sbdf.fit_partitioner(df, 4, "k")
    assert rdd_default == seen["name"] == strategies.DEFAULT_STRATEGY


def test_unknown_parameters_are_refused_before_any_job(spark, pairs):
    tracker = spark.sparkContext.statusTracker()
    before = len(tracker.getJobIdsForGroup(None))
    with pytest.raises(TypeError, match="tehta"):
        sbrdd.reduce_by_key(pairs, lambda a, b: a + b, 4, "mixed", tehta=0.1)
    assert len(tracker.getJobIdsForGroup(None)) == before


def test_keyed_state_reads_the_conf_and_explicit_wins(spark):
    default = KeyedStateOperator(spark, 4, update=lambda s, v: s + v, initial=0)
    assert (default.planner, default.theta, default.window) == (
        "mixed", conf.KEYS["theta"].default, None)
    with _conf(spark, planner="minmig", theta=0.3, window=2):
        op = KeyedStateOperator(spark, 4, update=lambda s, v: s + v, initial=0)
        assert (op.planner, op.theta, op.window) == ("minmig", 0.3, 2)
        op = KeyedStateOperator(spark, 4, update=lambda s, v: s + v, initial=0,
                                planner="mintable", theta=0.1, window=None)
        assert (op.planner, op.theta, op.window) == ("mintable", 0.1, None)


# ------------------------------------------------ keys for all APIs, keys for one API
@contextlib.contextmanager
def _keys(spark, **settings):
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key in settings:
            spark.conf.unset(key)


def test_a_whole_app_splitting_strategy_applies_to_rdds_not_dataframes(spark, pairs, caplog):
    df = spark.createDataFrame([(i % 7, i) for i in range(70)], "k int, v int")
    with _keys(spark, **{conf.CONF_STRATEGY: "pkg"}):
        assert isinstance(sbrdd.fit_partitioner(pairs, 4), PKGPartitioner)
        with caplog.at_level("WARNING", logger="sparkbalance.conf"):
            out = sbdf.group_by(df, "k", num_partitions=4).count()   # no longer refused
        assert sorted(out.collect()) == sorted(df.groupBy("k").count().collect())
        assert conf.strategy_for(df, "dataframe") == (None, None)
        assert conf.strategy_for(df, "rdd") == ("pkg", conf.CONF_STRATEGY)
    with _keys(spark, **{"spark.sparkbalance.dataframe.strategy": "hash",
                         "spark.sparkbalance.rdd.strategy": "mintable"}):
        assert conf.strategy_for(df, "dataframe") == ("hash",
                                                      "spark.sparkbalance.dataframe.strategy")
        assert conf.strategy_for(pairs, "rdd")[0] == "mintable"


@pytest.mark.parametrize("key, value, message", [
    ("spark.sparkbalance.dataframe.strategy", "pkg",
     r"splits keys.*from the session's spark.sparkbalance.dataframe.strategy"),
    ("spark.sparkbalance.strategy", "nope", r"spark.sparkbalance.strategy='nope'; expected one of"),
    ("spark.sparkbalance.strategy", "mtm", r"keyed state only.*spark.sparkbalance.strategy"),
    ("spark.sparkbalance.sampleFraction", "2", r"spark.sparkbalance.sampleFraction='2'; expected"),
    ("spark.sparkbalance.theta", "-1", r"spark.sparkbalance.theta='-1'; expected a number >= 0"),
    ("spark.sparkbalance.maxKeys", "x", r"spark.sparkbalance.maxKeys='x'; expected a number"),
    ("spark.sparkbalance.check.minGain", "abc", r"spark.sparkbalance.check.minGain='abc'"),
    ("spark.sparkbalance.window.split", "sometimes",
     r"spark.sparkbalance.window.split='sometimes'; expected one of auto, always, never"),
    ("spark.sparkbalance.window.cores", "0",
     r"spark.sparkbalance.window.cores='0'; expected an integer >= 1"),
    ("spark.sparkbalance.window.cores", "many",
     r"spark.sparkbalance.window.cores='many'; expected a number"),
])
def test_every_error_from_a_conf_value_names_its_key(spark, key, value, message):
    df = spark.createDataFrame([(1, 2)], "k int, v int")
    tracker = spark.sparkContext.statusTracker()
    before = len(tracker.getJobIdsForGroup(None))
    with _keys(spark, **{key: value}):
        with pytest.raises(ValueError, match=message):
            if key.endswith("maxKeys"):
                conf.resolve_max_keys(df)
            elif key.endswith("minGain"):
                conf.resolve(df, "check.min_gain")
            elif ".window." in key:
                from pyspark.sql import Window, functions as F
                from sparkbalance.spark.window.windows import with_window_columns
                with_window_columns(df, 2, r=F.row_number().over(
                    Window.partitionBy("k").orderBy("v")))
            else:
                sbdf.group_by(df, "k", num_partitions=2, strategy=None)
    assert len(tracker.getJobIdsForGroup(None)) == before
