"""The Balance tab's pages on Spark 3.5: one jar, the 3.5 page classes chosen by the JVM.

The bridge jar is compiled once, against PySpark 4.x; its Spark 3.5 pages
(``jvm_bridge/src/spark35/``, javax servlets and Scala 2.12 signatures) are picked by
``BalanceTab`` when ``WebUIPage.render`` takes a ``javax`` request. A child process starts a
loopback ``local[2]`` session through :func:`sparkbalance.configure` (jar and plugin), runs one
balanced reduce and fetches the list page, the detail page and their JSON twins. Under PySpark
4.x this module skips: ``integration/test_balance_ui.py`` covers the tab there in a browser
(and runs under 3.5 too, when given to ``make test-spark35``).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark")

ROOT = Path(__file__).resolve().parents[1]
JAR = ROOT / "jvm_bridge" / "build" / "sparkbalance-bridge.jar"
PATHS = ("/balance/", "/balance/json", "/balance/operation/?id=0", "/balance/operation/json?id=0")

pytestmark = [
    pytest.mark.skipif(not pyspark.__version__.startswith("3."),
                       reason="Spark 4.x pages: integration/test_balance_ui.py"),
    pytest.mark.skipif(not JAR.is_file(), reason=f"bridge jar not built ({JAR})"),
]

_CHILD = r"""
import json, operator, sys, urllib.request
from pyspark.sql import SparkSession
import sparkbalance as sb
b = (SparkSession.builder.master("local[2]").appName("sparkbalance-ui35")
     .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
     .config("spark.ui.port", "0").config("spark.ui.showConsoleProgress", "false"))
spark = sb.configure(b).getOrCreate()
sc = spark.sparkContext
pairs = sc.parallelize([(0, 1)] * 300 + [(k, 1) for k in range(1, 80)], 4)
sb.reduce_by_key(pairs, operator.add, 4, "mixed").count()
sc._jvm.io.sparkbalance.bridge.BalancePlugin.flush(30000)
out = {"version": spark.version, "pages": {}}
for path in json.loads(sys.argv[1]):
    try:
        out["pages"][path] = urllib.request.urlopen(sc.uiWebUrl + path, timeout=60).read().decode()
    except Exception as exc:  # noqa: BLE001 - reported to the test
        out["pages"][path] = f"FAILED {exc!r}"
print("UI35 " + json.dumps(out), flush=True)
spark.stop()
"""


@pytest.fixture(scope="module")
def pages():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]),
        PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(PATHS)], env=env,
                          capture_output=True, text=True, timeout=600)
    lines = [x for x in proc.stdout.splitlines() if x.startswith("UI35 ")]
    assert proc.returncode == 0 and lines, (proc.stdout[-2000:], proc.stderr[-4000:])
    out = json.loads(lines[0][5:])
    assert out["version"].startswith("3.5"), out["version"]
    return out["pages"]


def test_list_and_detail_pages_render_on_spark35(pages):
    for path in ("/balance/", "/balance/operation/?id=0"):
        assert not pages[path].startswith("FAILED"), (path, pages[path])
        assert "<html" in pages[path] and "Balance" in pages[path], (path, pages[path][:500])
    assert "reduce_by_key" in pages["/balance/"]


def test_json_endpoints_serve_the_record_on_spark35(pages):
    listed = json.loads(pages["/balance/json"])
    assert [r["operation"] for r in listed] == ["reduce_by_key"]
    one = json.loads(pages["/balance/operation/json?id=0"])
    assert one["id"] == 0 and one["num_partitions"] == 4
