"""Spark-free checks of the listener records, the JVM bridge's row format and jar lookup."""
from __future__ import annotations

import logging

import pytest

from sparkbalance.spark.session import bridge
from sparkbalance.spark.session.bridge import bridge_jar_path, session_builder_with_bridge, spark_context
from sparkbalance.spark.metrics.py4j_listener import SPARK_LISTENER_INTERFACE_METHODS, quiet_py4j_callbacks
from sparkbalance.spark.metrics.records import (
    StageRecord,
    TaskRecord,
    parse_executor_rows,
    parse_stage_rows,
    parse_task_rows,
    task_record_from_event_json,
    unescape_field,
)


def _esc(s: str | None) -> str:
    # Mirror of TaskRecorder.esc (Java): backslash, tab, newline, CR escaped; null -> \N.
    if s is None:
        return "\\N"
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


@pytest.mark.parametrize("s", ["", "plain", "a\tb", "line\nbreak", "back\\slash", "\\N", "x\r"])
def test_escape_round_trip(s):
    assert unescape_field(_esc(s)) == s


def test_null_marker_is_none():
    assert unescape_field("\\N") is None


def test_task_row_parses_into_the_record_field_order():
    row = "\t".join(["3", "1", "7", "42", "0", _esc("exec\t1"), "host", "1000", "1250", "250",
                     "240", "5000000", "1", "2", "3", "4", "5", "6", "1", "0", _esc("grp\n")])
    (t,) = parse_task_rows(row + "\n")
    assert t == TaskRecord(3, 1, 7, 42, 0, "exec\t1", "host", 1000, 1250, 250, 240, 5_000_000,
                           1, 2, 3, 4, 5, 6, True, False, "grp\n")


def test_stage_and_executor_rows():
    (s,) = parse_stage_rows("2\t0\tcount at x.py:3\t4\t100\t\\N\t0\t\\N\n")
    assert s == StageRecord(2, 0, "count at x.py:3", 4, 100, None, False, None)
    assert s.wall_time_ms is None
    (e,) = parse_executor_rows("1\th\t2\t10\t20\tlost\n")
    assert (e.executor_id, e.total_cores, e.removed_time_ms, e.removed_reason) == ("1", 2, 20, "lost")


def test_interface_has_35_distinct_methods():
    assert len(set(SPARK_LISTENER_INTERFACE_METHODS)) == 35


def test_bridge_jar_path_is_none_or_a_jar(monkeypatch, tmp_path):
    p = bridge_jar_path()
    assert p is None or p.endswith("sparkbalance-bridge.jar")
    jar = tmp_path / "x.jar"
    jar.write_bytes(b"PK")
    monkeypatch.setenv("SPARKBALANCE_BRIDGE_JAR", str(jar))
    assert bridge_jar_path() == str(jar)


def test_bridge_jar_path_finds_a_jar_shipped_in_the_package(monkeypatch, tmp_path):
    monkeypatch.delenv("SPARKBALANCE_BRIDGE_JAR", raising=False)
    pkg = tmp_path / "sparkbalance"
    (pkg / "jars").mkdir(parents=True)
    monkeypatch.setattr(bridge, "_PACKAGE_DIR", pkg)
    assert bridge_jar_path() is None  # no checkout build next to it, nothing shipped
    jar = pkg / "jars" / "sparkbalance-bridge.jar"
    jar.write_bytes(b"PK")
    assert bridge_jar_path() == str(jar)
    built = tmp_path / "jvm_bridge" / "build" / "sparkbalance-bridge.jar"
    built.parent.mkdir(parents=True)
    built.write_bytes(b"PK")
    assert bridge_jar_path() == str(built)  # a checkout's fresh build wins over the shipped one


class _Builder:
    def __init__(self, **options):
        self._options = dict(options)

    def config(self, key, value):
        self._options[key] = value
        return self


def test_session_builder_keeps_the_users_jars(monkeypatch, tmp_path):
    jar = tmp_path / "sparkbalance-bridge.jar"
    jar.write_bytes(b"PK")
    monkeypatch.setenv("SPARKBALANCE_BRIDGE_JAR", str(jar))
    b = session_builder_with_bridge(_Builder(**{"spark.jars": "/opt/a.jar,/opt/b.jar"}))
    assert b._options["spark.jars"] == f"/opt/a.jar,/opt/b.jar,{jar}"
    assert session_builder_with_bridge(b)._options["spark.jars"].count(str(jar)) == 1
    assert session_builder_with_bridge(_Builder())._options["spark.jars"] == str(jar)


def test_session_builder_without_a_jar_warns_and_changes_nothing(monkeypatch, tmp_path, caplog):
    monkeypatch.delenv("SPARKBALANCE_BRIDGE_JAR", raising=False)
    monkeypatch.setattr(bridge, "_PACKAGE_DIR", tmp_path / "sparkbalance")
    with caplog.at_level(logging.WARNING, logger="sparkbalance.spark.session.bridge"):
        b = session_builder_with_bridge(_Builder())
    assert b._options == {} and "jar not found" in caplog.text


def test_spark_context_refuses_what_is_not_a_live_context():
    with pytest.raises(ValueError, match="spark=None; expected an active SparkSession"):
        spark_context(None)


def test_task_record_from_event_json_sums_local_and_remote_shuffle_bytes():
    d = {"Task Info": {"Task ID": 9, "Partition ID": 2, "Attempt": 1, "Executor ID": "1",
                       "Host": "h", "Launch Time": 10, "Finish Time": 40, "Failed": True},
         "Task Metrics": {"Shuffle Read Metrics": {"Total Records Read": 5,
                                                   "Remote Bytes Read": 3, "Local Bytes Read": 4}}}
    t = task_record_from_event_json(d, (4, 1), "g")
    assert (t.stage_id, t.stage_attempt, t.attempt, t.duration_ms) == (4, 1, 1, 30)
    assert (t.shuffle_records_read, t.shuffle_bytes_read) == (5, 7)
    assert not t.successful and t.job_group == "g"


def test_py4j_callback_lines_are_demoted_to_debug():
    quiet_py4j_callbacks()
    quiet_py4j_callbacks()  # idempotent: one filter per logger
    log = logging.getLogger("py4j.clientserver")
    assert len([f for f in log.filters if type(f).__name__ == "_DemoteToDebug"]) == 1
    chatter = logging.LogRecord(log.name, logging.INFO, "", 0,
                                "Received command c on object id p0", None, None)
    other = logging.LogRecord(log.name, logging.INFO, "", 0, "Callback Server Starting",
                              None, None)
    old = log.level
    try:
        log.setLevel(logging.INFO)
        assert not log.filter(chatter) and chatter.levelno == logging.DEBUG
        assert log.filter(other) and other.levelno == logging.INFO
        log.setLevel(logging.DEBUG)
        again = logging.LogRecord(log.name, logging.INFO, "", 0,
                                  "Received command c on object id p0", None, None)
        assert log.filter(again) and again.levelname == "DEBUG"
    finally:
        log.setLevel(old)
