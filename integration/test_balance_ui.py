"""The Spark plugin end to end: metrics, the "Balance" tab in a real browser, the History Server.

The plugin must be on ``spark.plugins`` before the SparkContext starts and the jar on the
driver class path before the JVM starts, so the application runs in a child process (this
file run as a script): it starts a loopback-only ``local[2]`` session through
:func:`sparkbalance.configure`, runs real sparkbalance operations (an RDD reduce, a skewed
DataFrame groupBy, a keyed-state stream that migrates), prints the records they posted and
its UI address as one JSON line, and stops when told to. The tests compare what the
UI, the JSON endpoint, ``/metrics/json``, ``/metrics/prometheus`` and, after the child has
stopped, Spark's History Server on its event log show with the Python records.

Browser tests use Debian's ``chromium`` (``--headless --dump-dom`` / ``--screenshot``) and
are skipped, saying so, when no browser is installed. Screenshots (the list page, one
record, one keyed-state operator, a 200-partition record, the History Server's list) go to
``$SPARKBALANCE_UI_SCREENSHOTS`` when set (e.g. ``/work/screenshots``), else to
``bench-out/balance-ui/`` inside the checkout (git-ignored).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
JAR = ROOT / "jvm_bridge" / "build" / "sparkbalance-bridge.jar"
SHOTS = Path(os.environ.get("SPARKBALANCE_UI_SCREENSHOTS") or ROOT / "bench-out" / "balance-ui")
PREFIX = "plugin.io.sparkbalance.bridge.BalancePlugin."
LOOPBACK = "127.0.0.1"
#: Batches of the child's keyed-state stream, its operator's name, the hot key's rows.
BATCHES, OPERATOR, HOT_ROWS = 10, "session_counts", 400
#: Partitions of the wide DataFrame plan (its bars must stay visible: the chart scrolls).
WIDE = 200
#: Records the child posts before its stream: RDD reduces with mixed, pkg (no statistics: a
#: note, no loads) and dchoices (split keys, estimated loads), the DataFrame groupBy, the
#: 200-partition repartition.
OPS = ("reduce_by_key", "reduce_by_key", "reduce_by_key", "group_by", "repartition")
#: spark.sparkbalance.ui.maxRecords of the child: one less than it posts (the operations
#: above, one record per batch; the migrations ride in their batches), so the live tab
#: shows the bounded store (the oldest record dropped) while the metrics count them all.
KEPT = len(OPS) + BATCHES - 1

pytestmark = pytest.mark.skipif(
    not JAR.is_file(), reason=f"bridge jar not built ({JAR}); run bash jvm_bridge/build.sh")


# --------------------------------------------------------------------------- the child app
def _run_operations(spark) -> None:
    """Real sparkbalance operations, no hand-made records: an RDD reduce (the record the
    bounded store drops), a skewed DataFrame groupBy and a keyed-state stream whose hot keys
    shift, so that the operator migrates several times (Fang et al.'s shifting Zipf)."""
    import operator

    from pyspark.sql import functions as F

    import sparkbalance as sb
    from sparkbalance.state.operator import KeyedStateOperator
    from sparkbalance.bench.shifting import batch_records, shifting_zipf_counts

    sc = spark.sparkContext
    pairs = sc.parallelize([(0, 1)] * 300 + [(k, 1) for k in range(1, 80)], 4)
    sb.reduce_by_key(pairs, operator.add, 4, "mixed").count()
    sb.reduce_by_key(pairs, operator.add, 4, "pkg").count()
    words = sc.parallelize([("u0", 1)] * 300 + [(f"u{k}", 1) for k in range(1, 80)], 4)
    sb.reduce_by_key(words, operator.add, 4, "dchoices").count()
    rows = [(0, 1.0)] * HOT_ROWS + [(k, 1.0) for k in range(1, 61) for _ in range(3)]
    df = spark.createDataFrame(rows, "user_id long, amount double")
    (sb.group_by(df, "user_id", num_partitions=8, strategy="mixed")
     .agg(F.sum("amount").alias("total")).collect())
    wide = spark.range(6000).selectExpr("if(id < 2000, 7, id) as user_id")
    sb.repartition(wide, WIDE, "user_id", strategy="mixed")  # planned; never run
    op = KeyedStateOperator(sc, 4, update=operator.add, initial=0, planner="mixed", theta=0.1,
                            trigger="paper")
    op.name = OPERATOR
    stream = shifting_zipf_counts(60, 4, BATCHES, z=1.1, records_per_batch=240, f=2.0, seed=3)
    for t, (keys, counts) in enumerate(stream):
        op.process(sc.parallelize(batch_records(keys, counts, seed=t), 2), batch_id=t).count()
    op.close()


def _child(event_dir: str) -> None:
    from pyspark.sql import SparkSession

    from sparkbalance.spark.report import balance_log as bl

    builder = (
        SparkSession.builder.master("local[2]").appName("sparkbalance-ui-test")
        .config("spark.driver.host", LOOPBACK).config("spark.driver.bindAddress", LOOPBACK)
        .config("spark.ui.port", "0").config("spark.ui.showConsoleProgress", "false")
        .config("spark.sparkbalance.ui.maxRecords", str(KEPT))
        .config("spark.sparkbalance.ui.skewMinMillis", "0")
        .config("spark.eventLog.enabled", "true").config("spark.eventLog.dir", event_dir)
        .config("spark.eventLog.compress", "false")  # Spark 4 compresses (zstd) by default
        .config("spark.eventLog.rolling.enabled", "true")  # 4.x default; 3.5 writes one file
        .config("spark.ui.prometheus.enabled", "true")
        .config("spark.metrics.conf.*.sink.prometheusServlet.class",
                "org.apache.spark.metrics.sink.PrometheusServlet")
        .config("spark.metrics.conf.*.sink.prometheusServlet.path", "/metrics/prometheus"))
    from sparkbalance.spark.session.bridge import configure
    spark = configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    bl.balance_log().clear()
    _run_operations(spark)
    from pyspark.sql import functions as F
    hot = spark.createDataFrame([(0, 1.0)], "user_id long, amount double")
    spark_put = hot.repartition(8, "user_id").select(F.spark_partition_id()).first()[0]
    jplugin = spark.sparkContext._jvm.io.sparkbalance.bridge.BalancePlugin
    out = {"ui": spark.sparkContext.uiWebUrl, "app_id": spark.sparkContext.applicationId,
           "active": bl.plugin_active(spark), "flushed": bool(jplugin.flush(30000)),
           "records": bl.balance_log().records(), "spark_put_hot_key": spark_put}
    print("BALANCE-APP " + json.dumps(out), flush=True)
    sys.stdin.readline()  # the test says when to stop (a closed pipe also ends the wait)
    spark.stop()


# --------------------------------------------------------------------------- helpers
def _free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 180.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def _browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _chromium(args: list[str], url: str) -> str:
    path = _browser()
    if path is None:
        pytest.skip("no headless browser: install Debian's chromium (apt-get install -y "
                    "chromium); .ci/run does")
    with tempfile.TemporaryDirectory() as profile:
        p = subprocess.run(
            [path, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--user-data-dir={profile}", *args, url],
            capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


_ROW_KEYS = ("data-id", "data-operator", "data-key", "data-stage")


class _Cells(HTMLParser):
    """``data-field``/``data-value`` cells per ``<tr data-id>`` (int) or ``<tr data-operator>``
    (str) of the table with the given id, and the text shown in each cell."""

    def __init__(self, table_id: str) -> None:
        super().__init__()
        self.table_id, self.depth, self.row = table_id, 0, None
        self.rows: dict[int | str, dict[str, str]] = {}
        self.text: dict[int | str, dict[str, str]] = {}
        self._field: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.depth += 1 if (self.depth or a.get("id") == self.table_id) else 0
        elif self.depth and tag == "tr" and any(k in a for k in _ROW_KEYS):
            self.row = (int(a["data-id"]) if "data-id" in a
                        else next(a[k] for k in _ROW_KEYS if k in a))
            self.rows[self.row], self.text[self.row] = {}, {}
        elif self.depth and tag == "td" and self.row is not None and "data-field" in a:
            self._field = a["data-field"]
            self.rows[self.row][self._field] = a.get("data-value", "")
            self.text[self.row][self._field] = ""

    def handle_endtag(self, tag):
        if tag == "table" and self.depth:
            self.depth -= 1
        elif tag == "td":
            self._field = None

    def handle_data(self, data):
        if self._field is not None and self.row is not None:
            self.text[self.row][self._field] += data


def _table(html: str, table_id: str) -> _Cells:
    p = _Cells(table_id)
    p.feed(html)
    return p


def _num(s: str) -> float | None:
    return None if s in ("", "null", "None") else float(s)


def _is_migration(r: dict) -> bool:
    """The plugin's rule (BalanceRecord.isMigration)."""
    return (r["kind"] == "migration" or bool(r.get("keys_moved"))
            or r.get("migration_seconds") is not None)


def _check_rows(html: str, records: list[dict]) -> None:
    """Every record has a row whose values equal the Python record's."""
    t = _table(html, "sparkbalance-records")
    assert set(t.rows) == {r["id"] for r in records}
    for r in records:
        row, text = t.rows[r["id"]], t.text[r["id"]]
        assert text["operation"].startswith(r["operation"])
        assert int(row["num_partitions"]) == r["num_partitions"]
        assert _num(row["lower_bound"]) == r.get("lower_bound")
        assert _num(row["plan_seconds"]) == r.get("plan_seconds")
        assert _num(row["keys_moved"]) == r.get("keys_moved")
        assert _num(row["bytes_moved"]) == r.get("bytes_moved")
        mx, av = row["max_avg_before"].split("/")
        assert (_num(mx), _num(av)) == (r.get("max_before"), r.get("avg_before"))
        hot = r.get("hot_keys") or []
        if hot:  # the hottest key named with its share and partitions, before -> after
            first = f"p{hot[0]['before']} \u2192 "
            assert text["hot_keys"].startswith(str(hot[0]["key"])) and first in text["hot_keys"]
        else:
            assert text["hot_keys"] == "-"
        if r.get("loads_note"):  # pkg: no loads when planned; its stage's reads fill them
            # in when it completes (stage_loads), which may follow the app's printed record
            shown = text["max_avg_after"]
            assert shown == "not known when planned" or re.fullmatch(
                r"[0-9.e+]+ / [0-9.e+]+", shown), shown
            if r.get("loads_after"):
                assert shown != "not known when planned"
        assert text["job_ids"].replace(" ", "") == (",".join(map(str, r["job_ids"])) or "-")
        if r.get("plan_seconds") is not None:
            assert float(text["plan_seconds"]) == float(f"{r['plan_seconds']:.4g}")


# --------------------------------------------------------------------------- fixtures
class _App:
    def __init__(self, tmp: Path) -> None:
        self.event_dir = tmp / "events"
        self.event_dir.mkdir()
        env = dict(os.environ, SPARK_LOCAL_IP=LOOPBACK, PYSPARK_PYTHON=sys.executable,
                   PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        code = (f"import runpy; m = runpy.run_path({str(Path(__file__))!r}); "
                f"m['_child']({self.event_dir.as_uri()!r})")
        self.proc = subprocess.Popen([sys.executable, "-c", code], env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        info = None
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            if line.startswith("BALANCE-APP "):
                info = json.loads(line[len("BALANCE-APP "):])
                break
        if info is None:
            self.stop()
            pytest.fail("the Spark application with the plugin did not start")
        self.ui, self.app_id = info["ui"], info["app_id"]
        self.active, self.flushed = info["active"], info["flushed"]
        self.records: list[dict] = info["records"]
        self.spark_put_hot_key: int = info["spark_put_hot_key"]

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("stop\n")
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    a = _App(tmp_path_factory.mktemp("balance_ui"))
    yield a
    a.stop()


def _shot(args_url: str, name: str, height: int = 1400) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / name
    # Paint everything before the shot: under load a bare --screenshot can capture a page
    # whose layout is not drawn yet (a blank 9 KB image of a 1,200-row page, once).
    _chromium([f"--screenshot={path}", f"--window-size=1400,{height}",
               "--run-all-compositor-stages-before-draw", "--virtual-time-budget=10000"],
              args_url)
    assert path.is_file() and path.stat().st_size > 10_000
    return path


# --------------------------------------------------------------------------- tests
def test_plugin_is_active_and_records_delivered(app):
    assert app.active and app.flushed
    assert len(app.records) == KEPT + 1
    assert [r["id"] for r in app.records] == sorted(r["id"] for r in app.records)
    assert [r["operation"] for r in app.records] == list(OPS) + ["batch"] * BATCHES
    assert sum(map(_is_migration, app.records)) >= 2, "the stream should have migrated"
    assert all(r["job_ids"] for r in app.records if r["strategy"] not in ("pkg", "dchoices"))


def test_the_records_are_the_operations_numbers(app):
    rdd, pkg, dch, df, wide = app.records[:len(OPS)]
    assert (rdd["operation"], rdd["label"]) == ("reduce_by_key", "reduce_by_key(key, 4, mixed)")
    # "before" is where Spark itself puts the rows: the hot key where df.repartition puts it
    assert df["before_placement"] == "Spark: pmod(hash(user_id), 8)"
    hot = df["hot_keys"][0]
    assert (hot["key"], hot["before"]) == (0, app.spark_put_hot_key)
    assert hot["share"] == pytest.approx(HOT_ROWS / (HOT_ROWS + 60 * 3))
    assert df["loads_before"][hot["before"]] >= HOT_ROWS
    assert df["loads_after"][hot["after"]] >= HOT_ROWS
    assert rdd["before_placement"] == "Spark: portable_hash(key) % 4"
    assert rdd["hot_keys"][0]["key"] == 0 and rdd["hot_keys"][0]["before"] == 0  # 0 % 4
    # splitting strategies: pkg plans without statistics and says so; dchoices names the
    # key it split and estimates its loads
    assert pkg["loads_note"] and "loads_before" not in pkg
    assert dch["split_keys"][0]["key"] == "u0" and len(dch["split_keys"][0]["after"]) > 1
    assert dch["loads_after_estimated"] and sum(dch["loads_after"]) == pytest.approx(379)
    assert len(wide["loads_after"]) == WIDE and wide["hot_keys"][0]["key"] == 7
    assert (df["operation"], df["key"], df["strategy"]) == ("group_by", "user_id", "mixed")
    rows = HOT_ROWS + 60 * 3
    assert sum(df["loads_before"]) == sum(df["loads_after"]) == rows
    assert df["lower_bound"] == HOT_ROWS <= df["max_after"] <= df["max_before"]
    assert df["description"] == "sparkbalance: key statistics for group_by(user_id, 8, mixed)"
    state = app.records[len(OPS):]
    assert [r["batch"] for r in state] == list(range(BATCHES))
    assert {r["operator"] for r in state} == {OPERATOR}


def test_json_endpoint_serves_the_python_records(app):
    import http.client
    import urllib.parse
    u = urllib.parse.urlsplit(app.ui)
    for path in ("/balance/json", "/balance/operation/json?id=1"):  # no 301 to a slash
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
        c.request("GET", path)
        resp = c.getresponse()
        assert resp.status == 200, (path, resp.status, resp.getheader("Location"))
        json.loads(resp.read())
        c.close()
    served = json.loads(_get(app.ui + "/balance/json"))
    assert served == app.records[-KEPT:]  # the bounded store dropped the oldest
    one = app.records[len(OPS) + 3]
    assert json.loads(_get(f"{app.ui}/balance/operation/json?id={one['id']}")) == one
    dropped = app.records[0]["id"]
    assert json.loads(_get(f"{app.ui}/balance/operation/json?id={dropped}")) is None


def test_list_page_html_shows_every_record(app):
    html = _get(app.ui + "/balance/")
    assert '<a class="nav-link' in html and ">Balance<" in html  # a tab in Spark's header
    _check_rows(html, app.records[-KEPT:])
    assert f"Showing {KEPT} of {KEPT} records kept (at most {KEPT})" in html
    state = [r for r in app.records if r["kind"] == "state"]
    ops = _table(html, "sparkbalance-operators").rows
    assert list(ops) == [OPERATOR]
    assert int(ops[OPERATOR]["batches"]) == len(state)
    assert int(ops[OPERATOR]["migrations"]) == sum(map(_is_migration, state))
    assert int(ops[OPERATOR]["keys_moved"]) == sum(r.get("keys_moved", 0) for r in state)


def test_metrics_json_and_prometheus_match_the_records(app):
    recs = app.records
    plans = [r for r in recs if r.get("plan_seconds") is not None]
    migrations = [r for r in recs if _is_migration(r)]
    last = plans[-1]
    want_counters = {"records": len(recs), "plans": len(plans), "migrations": len(migrations),
                     "keysMoved": sum(r.get("keys_moved", 0) for r in migrations),
                     "bytesMoved": sum(r.get("bytes_moved", 0) for r in migrations)}
    want_gauges = {"lastMaxLoad": last["max_after"], "lastAvgLoad": last["avg_after"],
                   "lastMaxLoadBefore": last["max_before"], "lastLowerBound": last["lower_bound"],
                   "lastTableSize": last.get("table_size", 0), "listenerDroppedEvents": 0}
    m = json.loads(_get(app.ui + "/metrics/json"))
    key = f"{app.app_id}.driver.{PREFIX}"
    for name, v in want_counters.items():
        assert m["counters"][key + name]["count"] == v, name
    for name, v in want_gauges.items():
        assert m["gauges"][key + name]["value"] == pytest.approx(v), name
    assert m["histograms"][key + "planMicros"]["count"] == len(plans)
    assert m["histograms"][key + "migrationMicros"]["max"] == round(
        max(r["migration_seconds"] for r in migrations) * 1e6)
    assert m["histograms"][key + "migrationMicros"]["count"] == len(migrations)

    prom = _get(app.ui + "/metrics/prometheus")
    pkey = re.sub("[^a-zA-Z0-9]", "_", f"metrics_{app.app_id}_driver_{PREFIX}")
    values = {}
    for line in prom.splitlines():
        if line.startswith(pkey):
            name, _, value = line.rpartition(" ")
            values[name[len(pkey):].split("{")[0]] = float(value)
    for name, v in want_counters.items():
        assert values[name + "_Count"] == v, name
    for name, v in want_gauges.items():
        assert values[name + "_Value"] == pytest.approx(v), name
    assert values["planMicros_Count"] == len(plans)


def test_stage_skew_view_lists_every_stage_as_spark_measures_it(app):
    """One row per stage attempt with Spark's own median / max task run time (its REST
    task summary), skewed ones flagged by the rule, linked to the record whose jobs ran them."""
    api = f"{app.ui}/api/v1/applications/{app.app_id}"
    stages = json.loads(_get(api + "/stages"))
    job_stages = {s: j["jobId"] for j in json.loads(_get(api + "/jobs")) for s in j["stageIds"]}
    by_job = {j: r["id"] for r in app.records[-KEPT:] for j in r["job_ids"]}
    by_rdd = {i: r["id"] for r in app.records[-KEPT:] for i in r.get("rdd_ids", ())}
    html = _get(app.ui + "/balance/")
    t = _table(html, "sparkbalance-stages")
    # skipped stages (their shuffle reused: no tasks) are counted, not listed
    skipped = [s for s in stages if s["status"] == "SKIPPED"]
    stages = [s for s in stages if s["status"] != "SKIPPED"]
    assert skipped, "the keyed state's batches skip the stage whose shuffle they reuse"
    assert f"{len(skipped)} skipped stages (shuffle output reused, no tasks) not listed" in html
    assert set(t.rows) == {f"{s['stageId']}.{s['attemptId']}" for s in stages}
    skewed = 0
    for s in stages:
        row = t.rows[f"{s['stageId']}.{s['attemptId']}"]
        if s["status"] != "COMPLETE":  # still running or failed: no full summary
            continue
        summary = json.loads(_get(f"{api}/stages/{s['stageId']}/{s['attemptId']}/taskSummary"
                                  "?quantiles=0.5,1.0"))
        median, mx = summary["executorRunTime"]
        assert (float(row["median_ms"]), float(row["max_ms"])) == (median, mx), s["stageId"]
        is_skewed = int(row["tasks"]) >= 2 and mx >= 5 * max(median, 1)  # skewMinMillis=0
        assert row["skewed"] == str(is_skewed).lower()
        skewed += is_skewed
        want = by_job.get(job_stages.get(s["stageId"]))
        if want is None:  # a lazy RDD operation: the stage computing the RDD it returned
            want = next((by_rdd[i] for i in s.get("rddIds", ()) if i in by_rdd), None)
        assert _num(row["record"]) == want
        if want is None and is_skewed:
            assert "sb.diagnose(" in t.text[f"{s['stageId']}.{s['attemptId']}"]["record"]
    assert f"{skewed} of {len(stages)} stage attempts skewed" in html
    # the section on its own page (linked from the list's heading): the same rows
    only = _get(app.ui + "/balance/?view=stages")
    assert "/balance/?view=stages" in html
    assert set(_table(only, "sparkbalance-stages").rows) == set(t.rows)
    linked = {int(r["record"]) for r in t.rows.values() if r["record"] not in ("", "null")}
    pkg = app.records[1]
    assert pkg["rdd_ids"] and (pkg["id"] in linked or pkg["id"] not in
                                {r["id"] for r in app.records[-KEPT:]})


def test_browser_renders_the_tab_and_a_detail_page(app):
    dom = _chromium(["--dump-dom"], app.ui + "/balance/")
    _check_rows(dom, app.records[-KEPT:])
    state = [r for r in app.records if r["kind"] == "state"]
    migrated = next(r for r in state if _is_migration(r))
    dom = _chromium(["--dump-dom"], f"{app.ui}/balance/operation/?id={migrated['id']}")
    assert f'data-id="{migrated["id"]}"' in dom
    # load bars: one group per partition with the batch's measured loads
    bars = re.findall(r'<g class="partition" data-partition="(\d+)" data-before="([^"]+)"', dom)
    assert [float(b) for _, b in bars] == migrated["loads_before"]
    # the operator's timeline: every batch, migrations marked where the records say
    t = _table(dom, "sparkbalance-timeline")
    assert list(t.rows) == [r["id"] for r in state]
    for r in state:
        assert _num(t.rows[r["id"]]["max_before"]) == r["max_before"]
        assert _num(t.rows[r["id"]]["avg_before"]) == r["avg_before"]
    # a move is drawn on the batch whose plan decided it (it rode in the next batch)
    marks = re.findall(r'<g class="migration" data-batch="(\d+)"', dom)
    assert [int(b) for b in marks] == [r.get("moved_for_batch", r["batch"]) for r in state
                                       if _is_migration(r)]
    assert all(r["moved_for_batch"] == r["batch"] - 1 for r in state if r.get("keys_moved"))
    # both series per batch: as run (before) and under the layout its plan made (after)
    for which in ("before", "after"):
        points = re.findall(rf'<circle class="batch {which}"[^>]*data-imbalance="([^"]+)"', dom)
        assert [float(p) for p in points] == pytest.approx(
            [r[f"max_{which}"] / r[f"avg_{which}"] for r in state])
    after = [r["max_after"] / r["avg_after"] for r in state]
    assert max(after) < min(r["max_before"] / r["avg_before"] for r in state if r.get("keys_planned"))
    bars = re.findall(r'<g class="partition" data-partition="\d+" data-before="([^"]+)" '
                      r'data-after="([^"]+)"', dom)
    assert [float(a) for _, a in bars] == migrated["loads_after"]
    hot = _table(dom, "sparkbalance-hot-keys")
    assert [int(k) for k in hot.rows] == [h["key"] for h in migrated["hot_keys"]]
    # the DataFrame groupBy's page: its plan's loads before and after, per partition
    df = app.records[3]
    dom = _chromium(["--dump-dom"], f"{app.ui}/balance/operation/?id={df['id']}")
    bars = re.findall(r'<g class="partition" data-partition="(\d+)" data-before="([^"]+)" '
                      r'data-after="([^"]+)"', dom)
    assert [(float(b), float(a)) for _, b, a in bars] == list(
        zip(df["loads_before"], df["loads_after"]))
    assert re.search(r'<text class="hot-key-label" data-which="before" data-partition="'
                     rf'{app.spark_put_hot_key}"[^>]*>hot key 0<', dom)
    # the 200-partition plan: every partition drawn, the chart wider than the page (scrolls)
    wide = app.records[len(OPS) - 1]
    dom = _chromium(["--dump-dom"], f"{app.ui}/balance/operation/?id={wide['id']}")
    assert f'data-partitions="{WIDE}"' in dom and 'class="sparkbalance-scroll"' in dom
    widths = re.findall(r'<g class="partition" data-partition="\d+"[^>]*>.*?<rect [^>]*'
                        r'width="([^"]+)"', dom)
    assert len(widths) == WIDE and min(float(w) for w in widths) >= 4
    # and a page-wide chart of the peaks (max of every 4 partitions): the hot key's after
    peaks = re.findall(r'<g class="partition-group" data-partition="\d+" data-before="([^"]+)" '
                       r'data-after="([^"]+)"', dom)
    assert len(peaks) == WIDE // 4 and max(float(a) for _, a in peaks) == max(wide["loads_after"])
    # the dchoices record: its split key and its (estimated) loads after
    dch = app.records[2]
    dom = _chromium(["--dump-dom"], f"{app.ui}/balance/operation/?id={dch['id']}")
    split = _table(dom, "sparkbalance-split-keys")
    assert list(split.rows)[:1] == ["u0"] and "+" in split.text["u0"]["after"]
    paths = [_shot(app.ui + "/balance/", "list.png", 1800),
             _shot(f"{app.ui}/balance/operation/?id={df['id']}", "record.png", 1300),
             _shot(f"{app.ui}/balance/operation/?id={migrated['id']}", "operator.png", 1700),
             _shot(f"{app.ui}/balance/operation/?id={wide['id']}", "record-200-partitions.png", 1000),
             _shot(f"{app.ui}/balance/operation/?id={dch['id']}", "record-split-keys.png", 1300),
             _shot(f"{app.ui}/balance/?view=stages", "stages.png", 1200)]
    print("screenshots:", *paths)


def test_history_server_renders_the_finished_application(app, tmp_path):
    app.stop()  # completes the event log; keep this test last in the file
    assert app.proc.returncode == 0
    logs = list(app.event_dir.rglob("*"))
    assert any("io.sparkbalance.bridge.BalanceEvent" in p.read_text(errors="replace")
               for p in logs if p.is_file() and "events" in p.name), \
        "records not in the event log"
    port = _free_port()
    import pyspark

    spark_home = Path(pyspark.__file__).parent
    env = dict(os.environ, SPARK_HOME=str(spark_home), SPARK_LOCAL_IP=LOOPBACK,
               SPARK_DAEMON_CLASSPATH=str(JAR), SPARK_LOG_DIR=str(tmp_path),
               SPARK_HISTORY_OPTS=" ".join([
                   f"-Dspark.history.fs.logDirectory={app.event_dir.as_uri()}",
                   f"-Dspark.history.ui.port={port}",
                   "-Dspark.history.fs.update.interval=1s"]))
    log = open(tmp_path / "history.log", "w")
    hs = subprocess.Popen(
        [str(spark_home / "bin" / "spark-class"), "org.apache.spark.deploy.history.HistoryServer"],
        env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        base = f"http://{LOOPBACK}:{port}"
        deadline = time.monotonic() + 240
        while True:
            try:
                apps = json.loads(_get(base + "/api/v1/applications", timeout=10))
                if any(a["id"] == app.app_id and a["attempts"][0]["completed"] for a in apps):
                    break
            except (OSError, ValueError):  # not up yet, or busy (URLError is an OSError)
                pass
            assert hs.poll() is None, (tmp_path / "history.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the History Server did not list the app"
            time.sleep(1)
        # The History Server replays every event; its own maxRecords (default 3000) applies.
        tab = f"{base}/history/{app.app_id}/balance/"
        _check_rows(_get(tab), app.records)
        assert json.loads(_get(f"{base}/history/{app.app_id}/balance/json")) == app.records
        _check_rows(_chromium(["--dump-dom"], tab), app.records)
        print("screenshot:", _shot(tab, "history-list.png", 1100))
    finally:
        hs.terminate()
        try:
            hs.wait(timeout=60)
        except subprocess.TimeoutExpired:
            hs.kill()
        log.close()
