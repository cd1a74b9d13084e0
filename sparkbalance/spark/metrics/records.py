"""The records sparkbalance's task recorders return, and their wire formats.

Every recorder (:mod:`sparkbalance.spark.metrics.py4j_listener`, :mod:`sparkbalance.spark.
jvm_recorder`) hands back the same frozen values: :class:`TaskRecord` (one finished task
attempt), :class:`StageRecord` (one stage attempt) and :class:`ExecutorRecord`. They are
plain Python (ints, strings, bools, None): no py4j object reaches a caller, and the pure
statistics (:mod:`sparkbalance.stats.timeweights`) read them by attribute only.

Two wire formats are parsed here, both Spark-free:

- the tab-separated rows of the JVM recorder (``TaskRecorder.tasksSince``, ``stagesTsv``,
  ``executorsTsv``; fields escaped by ``TaskRecorder.esc``, null as ``\\N``);
- Spark's event-log JSON of a ``SparkListenerTaskEnd`` (``JsonProtocol``), which the py4j
  listener fetches in one round trip instead of ~25 getter calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "TaskRecord",
    "StageRecord",
    "ExecutorRecord",
    "TSV_NULL",
    "unescape_field",
    "parse_task_rows",
    "parse_stage_rows",
    "parse_executor_rows",
    "task_record_from_event_json",
]

#: Null marker of the JVM recorder's rows (``TaskRecorder.NULL``).
TSV_NULL = "\\N"


@dataclass(frozen=True)
class TaskRecord:
    """One finished task attempt, as reported by ``SparkListenerTaskEnd``.

    Times are wall-clock milliseconds since the epoch (``launch_time_ms``,
    ``finish_time_ms``) or milliseconds (``duration_ms`` = finish - launch, which
    includes scheduler delay and result fetch; ``run_time_ms`` = executor run time,
    which for PySpark includes the Python worker). ``cpu_time_ns`` is JVM thread CPU
    only (the Python worker's CPU is not in it). Metrics of failed attempts are 0.
    ``records_read``/``bytes_read`` are input metrics (Hadoop/file sources; 0 for
    ``parallelize``); ``shuffle_records_read`` counts JVM shuffle records, which for
    the PySpark RDD API are pickled *batches*, for DataFrames rows.

    Examples
    --------
    >>> r = TaskRecord(stage_id=1, stage_attempt=0, partition_id=3, task_id=7, attempt=0,
    ...                executor_id="driver", host="h", launch_time_ms=1000,
    ...                finish_time_ms=1250, duration_ms=250, run_time_ms=240,
    ...                cpu_time_ns=5_000_000, records_read=0, bytes_read=0,
    ...                shuffle_records_read=10, shuffle_bytes_read=800,
    ...                shuffle_records_written=0, shuffle_bytes_written=0,
    ...                successful=True, speculative=False, job_group=None)
    >>> r.duration_ms
    250
    """

    stage_id: int
    stage_attempt: int
    partition_id: int
    task_id: int
    attempt: int
    executor_id: str
    host: str
    launch_time_ms: int
    finish_time_ms: int
    duration_ms: int
    run_time_ms: int
    cpu_time_ns: int
    records_read: int
    bytes_read: int
    shuffle_records_read: int
    shuffle_bytes_read: int
    shuffle_records_written: int
    shuffle_bytes_written: int
    successful: bool
    speculative: bool
    job_group: str | None


@dataclass(frozen=True)
class StageRecord:
    """One stage attempt: submitted (times may be None until known) and maybe completed.

    ``failed`` is True when the stage attempt completed with a failure reason.
    """

    stage_id: int
    stage_attempt: int
    name: str
    num_tasks: int
    submission_time_ms: int | None
    completion_time_ms: int | None
    failed: bool
    job_group: str | None

    @property
    def wall_time_ms(self) -> int | None:
        """Completion minus submission time (ms), or None while the stage runs."""
        if self.submission_time_ms is None or self.completion_time_ms is None:
            return None
        return self.completion_time_ms - self.submission_time_ms


@dataclass(frozen=True)
class ExecutorRecord:
    """One executor: cores and lifetime (epoch ms); ``removed_time_ms`` None while alive."""

    executor_id: str
    host: str
    total_cores: int
    added_time_ms: int
    removed_time_ms: int | None = None
    removed_reason: str | None = None



# --------------------------------------------------------------------------- JVM recorder rows


def unescape_field(s: str) -> str | None:
    """Undo ``TaskRecorder.esc``: ``\\\\``, ``\\t``, ``\\n``, ``\\r`` escapes; ``\\N`` is None.

    Examples
    --------
    >>> unescape_field("a\\\\tb")
    'a\\tb'
    >>> unescape_field(TSV_NULL) is None
    True
    """
    if s == TSV_NULL:
        return None
    if "\\" not in s:
        return s
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            out.append({"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}.get(s[i + 1], s[i + 1]))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _opt_int(s: str) -> int | None:
    return None if s == TSV_NULL else int(s)


def parse_task_rows(tsv: str) -> list[TaskRecord]:
    """Parse ``TaskRecorder.tasksSince`` output: one line per task, columns in field order.

    Examples
    --------
    >>> row = "3\\t0\\t7\\t42\\t0\\tdriver\\th\\t1000\\t1250\\t250\\t240\\t5\\t0\\t0\\t1\\t8\\t0\\t0\\t1\\t0\\t\\\\N"
    >>> [(t.partition_id, t.duration_ms, t.job_group) for t in parse_task_rows(row)]
    [(7, 250, None)]
    """
    out = []
    for line in tsv.splitlines():
        f = line.split("\t")
        out.append(TaskRecord(
            int(f[0]), int(f[1]), int(f[2]), int(f[3]), int(f[4]),
            unescape_field(f[5]) or "", unescape_field(f[6]) or "",
            *(int(x) for x in f[7:18]),
            f[18] == "1", f[19] == "1", unescape_field(f[20])))
    return out


def parse_stage_rows(tsv: str) -> list[StageRecord]:
    """Parse ``TaskRecorder.stagesTsv`` output (columns in :class:`StageRecord` field order).

    Examples
    --------
    >>> parse_stage_rows("2\\t0\\tcount\\t4\\t100\\t\\\\N\\t0\\t\\\\N")[0].completion_time_ms is None
    True
    """
    out = []
    for line in tsv.splitlines():
        f = line.split("\t")
        out.append(StageRecord(int(f[0]), int(f[1]), unescape_field(f[2]) or "", int(f[3]),
                               _opt_int(f[4]), _opt_int(f[5]), f[6] == "1",
                               unescape_field(f[7])))
    return out


def parse_executor_rows(tsv: str) -> list[ExecutorRecord]:
    """Parse ``TaskRecorder.executorsTsv`` output (columns in :class:`ExecutorRecord` order).

    Examples
    --------
    >>> parse_executor_rows("1\\th\\t2\\t10\\t20\\tlost")[0].removed_reason
    'lost'
    """
    out = []
    for line in tsv.splitlines():
        f = line.split("\t")
        out.append(ExecutorRecord(unescape_field(f[0]) or "", unescape_field(f[1]) or "",
                                  int(f[2]), int(f[3]), _opt_int(f[4]), unescape_field(f[5])))
    return out


# --------------------------------------------------------------------------- event-log JSON


def task_record_from_event_json(d: dict[str, Any], stage_key: tuple[int, int],
                                group: str | None) -> TaskRecord:
    """A :class:`TaskRecord` from a parsed ``SparkListenerTaskEnd`` event-log JSON object.

    Parameters
    ----------
    d : dict
        ``json.loads`` of ``JsonProtocol.sparkEventToJsonString(event)``.
    stage_key : (int, int)
        (stage id, stage attempt) of the event.
    group : str or None
        Job group of the stage (from its ``SparkListenerStageSubmitted``).

    Examples
    --------
    >>> d = {"Task Info": {"Task ID": 5, "Partition ID": 1, "Executor ID": "0", "Host": "h",
    ...                    "Launch Time": 100, "Finish Time": 130},
    ...      "Task Metrics": {"Executor Run Time": 25}}
    >>> t = task_record_from_event_json(d, (2, 0), None)
    >>> (t.task_id, t.duration_ms, t.run_time_ms, t.successful)
    (5, 30, 25, True)
    """
    info = d["Task Info"]
    launch, finish = int(info["Launch Time"]), int(info.get("Finish Time", 0))
    m = d.get("Task Metrics") or {}
    inp = m.get("Input Metrics") or {}
    srd = m.get("Shuffle Read Metrics") or {}
    swr = m.get("Shuffle Write Metrics") or {}
    return TaskRecord(
        stage_key[0], stage_key[1], int(info.get("Partition ID", -1)), int(info["Task ID"]),
        int(info.get("Attempt", 0)), str(info["Executor ID"]), str(info["Host"]), launch, finish,
        max(0, finish - launch) if finish > 0 else 0,
        int(m.get("Executor Run Time", 0)), int(m.get("Executor CPU Time", 0)),
        int(inp.get("Records Read", 0)), int(inp.get("Bytes Read", 0)),
        int(srd.get("Total Records Read", 0)),
        # ShuffleReadMetrics.totalBytesRead = remoteBytesRead + localBytesRead
        int(srd.get("Remote Bytes Read", 0)) + int(srd.get("Local Bytes Read", 0)),
        int(swr.get("Shuffle Records Written", 0)), int(swr.get("Shuffle Bytes Written", 0)),
        # TaskInfo.successful = finished && !failed && !killed; finished = finishTime != 0
        finish != 0 and not info.get("Failed", False) and not info.get("Killed", False),
        bool(info.get("Speculative", False)), group)
