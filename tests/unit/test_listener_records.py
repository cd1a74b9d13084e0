"""Spark-free checks of the listener records and the JVM bridge's row format."""
from __future__ import annotations

import pytest

from sparkbalance.spark.jvm import (
    _unesc,
    bridge_jar_path,
    parse_executor_rows,
    parse_stage_rows,
    parse_task_rows,
)
from sparkbalance.spark.listener import SPARK_LISTENER_INTERFACE_METHODS, StageRecord, TaskRecord


def _esc(s: str | None) -> str:
    # Mirror of TaskRecorder.esc (Java): backslash, tab, newline, CR escaped; null -> \N.
    if s is None:
        return "\\N"
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


@pytest.mark.parametrize("s", ["", "plain", "a\tb", "line\nbreak", "back\\slash", "\\N", "x\r"])
def test_escape_round_trip(s):
    assert _unesc(_esc(s)) == s


def test_null_marker_is_none():
    assert _unesc("\\N") is None


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
