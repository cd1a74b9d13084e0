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
