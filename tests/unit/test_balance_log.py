"""The Python side of the balance plugin without Spark: the bounded log, one push per record,
the builder configuration (fake py4j and builder objects stand in for Spark)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from sparkbalance.spark.report import balance_log as bl


def test_log_assigns_ids_time_and_summaries():
    log = bl.BalanceLog(max_records=10)
    a = log.append({"kind": "rdd", "loads_before": [4.0, 2.0], "loads_after": [3.0, 3.0]})
    b = log.append({"kind": "state", "time": 12.5})
    assert (a["id"], b["id"]) == (0, 1)
    assert a["time"] > 1e9 and b["time"] == 12.5
    assert (a["max_before"], a["avg_before"], a["max_after"], a["avg_after"]) == (4.0, 3.0, 3.0, 3.0)
    assert "max_before" not in b


def test_given_max_and_avg_are_kept():
    rec = bl.BalanceLog().append({"kind": "rdd", "loads_before": [4, 2], "max_before": 9})
    assert rec["max_before"] == 9 and rec["avg_before"] == 3


def test_log_is_bounded_and_ids_stay_unique_after_clear():
    log = bl.BalanceLog(max_records=3)
    for i in range(5):
        log.append({"kind": "dataframe", "batch": i})
    assert [r["batch"] for r in log.records()] == [2, 3, 4] and len(log) == 3
    log.clear()
    assert len(log) == 0 and log.last() is None
    assert log.append({"kind": "rdd"})["id"] == 5


@pytest.mark.parametrize("bad", [0, -3])
def test_max_records_must_be_positive(bad):
    with pytest.raises(ValueError, match=f"max_records={bad}; expected >= 1"):
        bl.BalanceLog(max_records=bad)


@pytest.mark.parametrize("kind", [None, "plan", "RDD"])
def test_kind_is_checked(kind):
    with pytest.raises(ValueError, match="expected one of"):
        bl.BalanceLog().append({"kind": kind})


def test_records_filter_by_kind_and_operator():
    log = bl.BalanceLog()
    log.append({"kind": "state", "operator": "a"})
    log.append({"kind": "state", "operator": "b"})
    log.append({"kind": "rdd"})
    assert [r["operator"] for r in log.records(kind="state")] == ["a", "b"]
    assert len(log.records(operator="b")) == 1 and len(list(log)) == 3


def test_numpy_values_and_non_finite_numbers_become_json():
    rec = bl.BalanceLog().append({
        "kind": "rdd", "num_partitions": np.int64(4), "loads_before": np.array([1.5, np.nan]),
        "lower_bound": math.inf, "job_ids": (np.int32(3), 4), "ok": np.bool_(True),
        "nested": {1: np.float32(0.5)}})
    text = json.dumps(rec, allow_nan=False)  # strict JSON: what the plugin parses
    assert json.loads(text) == rec
    assert rec["num_partitions"] == 4 and type(rec["num_partitions"]) is int
    assert rec["loads_before"] == [1.5, None] and rec["lower_bound"] is None
    assert rec["job_ids"] == [3, 4] and rec["ok"] is True and rec["nested"] == {"1": 0.5}
    assert rec["max_before"] == 1.5  # None loads are skipped


def test_values_that_are_not_json_are_refused():
    with pytest.raises(TypeError, match="not JSON-able"):
        bl.BalanceLog().append({"kind": "rdd", "planner": object()})


# --------------------------------------------------------------------------- push
class _Member:
    def __init__(self, answer=0):
        self.calls: list[str] = []
        self.answer = answer

    def __call__(self, payload):
        self.calls.append(payload)
        return self.answer


class _FakeContext:
    """Counts the py4j round trips a push costs: lookups through _jvm and calls."""

    def __init__(self, plugins="", active=True, answer=0):
        self._jsc = object()
        self.lookups = 0
        self.post = _Member(answer)
        ctx = self

        class _Conf:
            def get(self, key, default=None):
                return plugins if key == "spark.plugins" else default

        class _Plugin:
            def isActive(self):
                ctx.lookups += 1
                return active

            @property
            def post(self):
                ctx.lookups += 1
                return ctx.post

        class _Jvm:
            class io:
                class sparkbalance:
                    class bridge:
                        BalancePlugin = _Plugin()

        self._conf, self._jvm = _Conf(), _Jvm()

    def getConf(self):
        return self._conf


@pytest.fixture(autouse=True)
def _fresh_log(monkeypatch):
    monkeypatch.setattr(bl, "_BALANCE_LOG", bl.BalanceLog())
    monkeypatch.setattr(bl._Push, "jsc", None)
    monkeypatch.setattr(bl._Push, "member", None)


def test_post_without_spark_only_logs():
    rec = bl.post(None, {"kind": "rdd"})
    assert bl.balance_log().records() == [rec]
    assert not bl.plugin_active(None)


def test_post_without_the_plugin_does_not_call_the_jvm():
    sc = _FakeContext(plugins="")
    bl.post(sc, {"kind": "rdd"})
    assert sc.post.calls == [] and sc.lookups == 0 and len(bl.balance_log()) == 1


def test_post_sends_one_json_string_per_record_and_looks_up_once():
    sc = _FakeContext(plugins="x.Other," + bl.PLUGIN_CLASS)
    recs = [bl.post(sc, {"kind": "state", "batch": b, "loads_before": [1.0] * 64})
            for b in range(3)]
    assert sc.lookups == 2  # isActive and the member, on the first post only
    assert [json.loads(p) for p in sc.post.calls] == recs
    assert bl.plugin_active(sc)


def test_post_stops_pushing_when_the_plugin_went_away():
    sc = _FakeContext(plugins=bl.PLUGIN_CLASS, answer=-1)
    bl.post(sc, {"kind": "rdd"})
    assert bl._Push.member is None and len(sc.post.calls) == 1


def test_a_failing_push_never_fails_the_caller():
    sc = _FakeContext(plugins=bl.PLUGIN_CLASS)

    def boom(payload):
        raise RuntimeError("gateway gone")

    sc.post = boom
    assert bl.post(sc, {"kind": "rdd"})["id"] == 0




# ------------------------------------------------------------------ hot keys and "before"
from sparkbalance.spark.report import hot_keys as hk  # noqa: E402
from sparkbalance.spark.report import spark_placement as sp  # noqa: E402
from sparkbalance.spark.report.plan_report import plan_log_line, plan_record  # noqa: E402


@pytest.mark.parametrize("key, types, expected", [
    # SELECT hash(...) on Spark 4.3 (seed 42), the values the Spark test checks live
    ([0], ["bigint"], -1670924195),
    (["a"], ["string"], 1485273170),
    ([None], ["string"], 42),
])
def test_murmur3_is_sparks_hash(key, types, expected):
    assert sp.murmur3_hash(key, types) == expected


def test_unhandled_sql_type_gives_no_placement():
    assert sp.df_partitions(np.array([1]), ["decimal(10,2)"], 4) is None


def test_portable_hash_of_ints_needs_no_seed():
    assert sp.rdd_partitions([0, 5, -1, (1, None)], 4, None).tolist() == [
        0, 1, 2, sp.portable_hash((1, None)) % 4]  # hash(-1) == -2 in CPython


def test_portable_hash_of_strings_follows_the_workers_seed():
    got = sp.rdd_partitions(["a", "bb", ("c", 1)], 8, "0")
    import subprocess
    import sys
    code = ("from pyspark.rdd import portable_hash; "
            "print([portable_hash(k) % 8 for k in ['a', 'bb', ('c', 1)]])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**__import__("os").environ, "PYTHONHASHSEED": "0"}, check=True)
    assert got.tolist() == eval(out.stdout)
    assert sp.rdd_partitions(["a"], 8, "random") is None  # not reproducible: said so


def test_plan_record_names_hot_keys_with_sparks_placement():
    from sparkbalance.routing.table import RoutingTablePartitioner
    from sparkbalance.stats.keystats import KeyStats
    s = KeyStats.from_counts({"hot": 6, "b": 2, "c": 2})
    f = RoutingTablePartitioner(2, {"hot": 0, "b": 1, "c": 1})
    spark_where = np.array([1, 1, 0])
    r = plan_record(f, 2, stats=s, spark_where=spark_where, placement="Spark: x")
    assert r["before_placement"] == "Spark: x" and r["loads_before"] == [2.0, 8.0]
    assert r["hot_keys"][0] == {"key": "hot", "share": 0.6, "load": 6.0, "before": 1,
                                "after": 0}
    line = plan_log_line(dict(r, strategy="mixed", label="op"))
    assert "hot key 'hot' 60.0% p1 -> p0" in line


def test_splitting_record_estimates_loads_and_names_split_keys():
    from sparkbalance.routing.pkg import PKGPartitioner
    from sparkbalance.stats.keystats import KeyStats
    s = KeyStats.from_counts({"hot0": 90, "x": 10})
    r = plan_record(PKGPartitioner(4), 4, stats=s)
    assert r["loads_after_estimated"] and sum(r["loads_after"]) == pytest.approx(100)
    assert r["split_keys"][0]["key"] == "hot0" and len(r["split_keys"][0]["after"]) == 2
    none = plan_record(PKGPartitioner(4), 4)  # PKG without statistics: a note, no "?"
    assert "gathers no key statistics" in none["loads_note"]
    line = plan_log_line(dict(none, strategy="pkg", label="op"))
    assert "?" not in line and "loads not measured" in line


def test_key_labels_are_json_values():
    assert [hk.key_label(k) for k in (np.int64(2), ("a", 1), None, float("nan"))] == [
        2, ["a", 1], None, "nan"]


def test_vectorised_integer_placement_equals_the_scalar_hashes():
    rng = np.random.default_rng(3)
    v = np.concatenate([rng.integers(-2**63, 2**63 - 1, 2000),
                        np.array([-1, -2, 0, 2**61 - 1, 2**61, -2**63, 2**63 - 1])])
    for t in ("bigint", "int"):
        w = v if t == "bigint" else (v % 2**32 - 2**31)
        assert sp.df_partitions(w, [t], 13).tolist() == [
            sp.murmur3_hash([int(x)], [t]) % 13 for x in w]
    assert sp.rdd_partitions(v, 13).tolist() == [hash(int(x)) % 13 for x in v]


def test_plan_lines_reach_stderr_when_info_is_asked_for_without_a_handler(capsys):
    # A script that sets the sparkbalance logger to INFO and configures no handler: Python's
    # last-resort handler prints WARNING and above only, so the plan lines used to vanish.
    import logging

    from sparkbalance.spark.report.log_line import log_info
    log = logging.getLogger("sparkbalance.test_no_handler")
    log.propagate = False
    try:
        log_info(log, "plan %s", "a")                       # WARNING (default): nothing
        log.setLevel(logging.INFO)
        log_info(log, "plan %s", "b")
        records: list = []
        handler = logging.Handler()
        handler.emit = records.append
        log.addHandler(handler)                              # a handler: logging decides
        log_info(log, "plan %s", "c")
    finally:
        log.handlers.clear()
        log.setLevel(logging.NOTSET)
    err = capsys.readouterr().err
    assert err == "INFO sparkbalance.test_no_handler: plan b\n"
    assert [r.getMessage() for r in records] == ["plan c"]
