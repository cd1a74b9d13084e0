"""Job groups and descriptions: set and put back exactly, in two py4j calls with the bridge's
``LocalProperties``, and as before without it."""
from __future__ import annotations

import pytest

from sparkbalance.spark.session import jobs
from sparkbalance.spark.session.jobs import (JOB_DESCRIPTION_PROPERTY, JOB_GROUP_PROPERTY,
                                             LOCAL_PROPERTIES_CLASS, operation_jobs,
                                             sparkbalance_job_group)
from sparkbalance.spark.session.jvm_loader import bridge_has

_INTERRUPT = "spark.job.interruptOnCancel"
KEYS = (JOB_GROUP_PROPERTY, JOB_DESCRIPTION_PROPERTY, _INTERRUPT)


class _Calls:
    """Counts the driver's py4j commands (reference releases apart) while installed."""

    def __init__(self) -> None:
        self.n = 0

    def __enter__(self):
        from py4j import clientserver, java_gateway
        self._saved = []
        for cls in (clientserver.ClientServerConnection, java_gateway.GatewayConnection):
            orig = cls.send_command

            def counted(conn, command, *a, _orig=orig, **kw):
                self.n += not command.startswith("m\nd\n")
                return _orig(conn, command, *a, **kw)

            self._saved.append((cls, orig))
            cls.send_command = counted
        return self

    def __exit__(self, *exc):
        for cls, orig in self._saved:
            cls.send_command = orig


def _props(sc):
    return {k: sc.getLocalProperty(k) for k in KEYS}


@pytest.fixture(params=["bridge", "plain"])
def path(request, spark, monkeypatch):
    sc = spark.sparkContext
    if request.param == "bridge":
        if not bridge_has(sc, LOCAL_PROPERTIES_CLASS):
            pytest.skip("the bridge jar lacks LocalProperties")
    else:
        monkeypatch.setattr(jobs, "_swapper", lambda sc: None)
        monkeypatch.setattr(jobs, "_SWAP", jobs.SessionMemo())
    return request.param


@pytest.mark.parametrize("outer", [None, ("user", "user's jobs: ü \U0001F600 1:2-")])
def test_a_job_group_labels_its_jobs_and_puts_the_caller_s_labels_back(spark, path, outer):
    sc = spark.sparkContext
    if outer is not None:
        sc.setJobGroup(*outer, interruptOnCancel=True)
    before = _props(sc)
    try:
        with operation_jobs(sc, "op(k)", "sparkbalance: op"):
            with sparkbalance_job_group(sc, "sparkbalance-g", "sparkbalance: tally"):
                assert _props(sc) == {JOB_GROUP_PROPERTY: "sparkbalance-g",
                                      JOB_DESCRIPTION_PROPERTY: "sparkbalance: tally for op(k)",
                                      _INTERRUPT: "false"}
                assert sc.parallelize(range(4), 2).count() == 4
            assert sc.getLocalProperty(JOB_DESCRIPTION_PROPERTY) == "sparkbalance: op for op(k)"
            assert sc.getLocalProperty(JOB_GROUP_PROPERTY) == before[JOB_GROUP_PROPERTY]
        assert _props(sc) == before
        with pytest.raises(ZeroDivisionError):
            with sparkbalance_job_group(sc, "sparkbalance-g"):
                1 / 0
        assert _props(sc) == before
    finally:
        for k in KEYS:
            sc.setLocalProperty(k, None)


def test_with_the_bridge_a_job_group_costs_two_round_trips(spark, path):
    sc = spark.sparkContext
    with sparkbalance_job_group(sc, "warm"), operation_jobs(sc, "warm", "warm"):
        pass                                     # the session's one-time lookups
    with _Calls() as calls:
        with sparkbalance_job_group(sc, "sparkbalance-g", "sparkbalance: x"):
            pass
    with _Calls() as op_calls:
        with operation_jobs(sc, "op", "sparkbalance: op"):
            pass
    assert (calls.n, op_calls.n) == ((2, 2) if path == "bridge" else (7, 3))


def test_a_job_group_follows_the_bridge_switched_off_and_on_again(spark, monkeypatch):
    """Labels set while the bridge is switched off take the plain calls and are not kept
    as the session's answer: switched on again, a job group is two round trips."""
    from sparkbalance.spark.session import jvm_loader
    sc = spark.sparkContext
    if not bridge_has(sc, LOCAL_PROPERTIES_CLASS):
        pytest.skip("the bridge jar lacks LocalProperties")
    monkeypatch.setattr(jobs, "_SWAP", jobs.SessionMemo())      # a fresh session's memo
    monkeypatch.setattr(jvm_loader, "_OFF", jvm_loader.SessionMemo())
    monkeypatch.setenv(jvm_loader.BRIDGE_SWITCH_ENV, "off")
    before = _props(sc)
    with sparkbalance_job_group(sc, "sparkbalance-off"):
        assert sc.getLocalProperty(JOB_GROUP_PROPERTY) == "sparkbalance-off"
    assert _props(sc) == before
    monkeypatch.delenv(jvm_loader.BRIDGE_SWITCH_ENV)
    with sparkbalance_job_group(sc, "warm"):
        pass                                     # the member looked up once
    with _Calls() as calls:
        with sparkbalance_job_group(sc, "sparkbalance-on"):
            pass
    assert calls.n == 2 and _props(sc) == before


def test_the_encoding_round_trips_what_java_counts_in_utf16_units():
    values = ["", "a", None, "12:x-", "\U0001F600ü", None]
    assert jobs._decode(jobs._encode(values)) == values
    assert jobs._encode(["\U0001F600"]) == "2:\U0001F600"
