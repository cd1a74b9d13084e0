"""The bridge on first use: a session built the README's way gets the jar and the package.

Each case starts its own session in a child process (``bridge_on_demand_app.py``: one Spark
JVM per process, and this module's sessions must not have the jar at launch). The executors'
interpreter is a virtual environment with this environment's packages (pyspark, numpy,
cloudpickle) but without sparkbalance, and no ``PYTHONPATH`` reaches them, so every
sparkbalance task there needs the zip sparkbalance ships itself. A plain session
(``SparkSession.builder...getOrCreate()``) must then run the zero-pass statistics, a
balanced reduce and the keyed state with its frames selected in the JVM, on the executors,
with the same results as a session built with ``sparkbalance.configure(builder)``, and say
once each that it loaded the jar and shipped the zip. Under a PySpark 3.5 environment
(``.venv35`` in the checkout, or ``$SPARKBALANCE_PY35``) the plain case runs on 3.5 too.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sparkbalance.spark.session.bridge import bridge_jar_path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CLUSTER = "local-cluster[2,1,1024]"
LOADED = "loaded the bridge jar"
SHIPPED = "shipped"
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(bridge_jar_path() is None, reason="bridge jar not built")]


def _bare_python(dest: Path, python: str) -> str:
    """A venv of ``python`` that sees that interpreter's packages, but not sparkbalance:
    the editable install's own ``.pth`` is not processed from a path a ``.pth`` adds."""
    subprocess.run([python, "-m", "venv", "--without-pip", str(dest)], check=True)
    py = str(dest / "bin" / "python")
    query = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = subprocess.run([py, "-c", query], capture_output=True, text=True,
                          check=True).stdout.strip()
    deps = subprocess.run([python, "-c", "import sysconfig; p = sysconfig.get_paths(); "
                           "print(p['purelib']); print(p['platlib'])"],
                          capture_output=True, text=True, check=True).stdout.split()
    Path(site, "deps.pth").write_text("\n".join(sorted(set(deps))) + "\n")
    probe = subprocess.run([py, "-c", "import sparkbalance"], capture_output=True, cwd=dest,
                           env=_env())
    assert probe.returncode != 0, "the bare interpreter must not import sparkbalance"
    return py


def _env(**extra: str) -> dict[str, str]:
    """This environment without the variables that would hand the package to a child."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "SPARK_HOME", "PYSPARK_SUBMIT_ARGS", "PYSPARK_PYTHON",
                        "PYSPARK_DRIVER_PYTHON")}
    return {**env, **extra}


def _run(python: str, master: str, mode: str, tmp: Path,
         executors_python: str) -> tuple[dict, str]:
    env = _env(PYSPARK_PYTHON=executors_python)
    out = tmp / f"{mode}.json"
    run = subprocess.run([python, str(HERE / "bridge_on_demand_app.py"), master, mode, str(out)],
                         cwd=tmp, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-8000:]
    return json.loads(out.read_text()), run.stderr


def _assert_plain_session_got_everything(got: dict, log: str) -> None:
    assert got["at_start"] is False                   # the README's session has no jar
    assert got["driver_module"].startswith(str(ROOT / "sparkbalance"))
    assert got["bridge"] == repr("on demand")
    assert got["python"] == "shipped"
    assert got["probe_before"] == [False, True, True]   # no sparkbalance; numpy, cloudpickle
    assert got["executor_modules"] and all(
        "sparkbalance-" in m and ".zip" in m for m in got["executor_modules"]), got
    assert got["zero_pass"]["records"] and got["zero_pass"]["placed_as_fitted"]
    assert got["zero_pass"]["fitted"] == "GroupMapPartitioner"
    assert got["state"]["jvm_frames"] and got["state"]["exact"], got["state"]
    assert any(j.endswith("sparkbalance-bridge.jar") for j in got["jars"]), got["jars"]
    lines = [x for x in log.splitlines() if x.startswith("[app]")]
    assert sum(LOADED in x for x in lines) == 1, lines
    assert sum(SHIPPED in x for x in lines) == 1, lines
    assert "No module named" not in log


@pytest.fixture(scope="module")
def bare(tmp_path_factory) -> str:
    return _bare_python(tmp_path_factory.mktemp("bare") / "venv", sys.executable)


@pytest.fixture(scope="module")
def on_cluster(bare, tmp_path_factory) -> dict[str, tuple[dict, str]]:
    """Both applications at once (independent child processes, one local cluster each):
    most of each one's time is its JVMs starting, which overlap."""
    modes = ("plain", "configured")
    with ThreadPoolExecutor(len(modes)) as pool:
        runs = {mode: pool.submit(_run, sys.executable, CLUSTER, mode,
                                  tmp_path_factory.mktemp(mode), bare)
                for mode in modes}
        return {mode: run.result() for mode, run in runs.items()}


@pytest.mark.timeout(1800)
def test_plain_session_on_local_cluster_gets_the_jar_and_the_zip(on_cluster):
    got, log = on_cluster["plain"]
    _assert_plain_session_got_everything(got, log)


@pytest.mark.timeout(1800)
def test_plain_session_equals_the_configured_one(on_cluster):
    plain, _ = on_cluster["plain"]
    configured, log = on_cluster["configured"]
    assert configured["at_start"] is True and configured["bridge"] == repr("at launch")
    assert LOADED not in log                      # nothing to bring: no line
    for part in ("zero_pass", "reduce"):
        assert plain[part] == configured[part], part
    assert plain["state"]["items"] == configured["state"]["items"]
    assert configured["state"]["jvm_frames"] and configured["state"]["exact"]


@pytest.mark.timeout(900)
def test_plain_session_on_local_master(bare, tmp_path):
    # local[2]: the executor lives in the driver JVM, its loader a child of the driver's
    got, log = _run(sys.executable, "local[2]", "plain", tmp_path, bare)
    _assert_plain_session_got_everything(got, log)


def _python35() -> str | None:
    for cand in (os.environ.get("SPARKBALANCE_PY35"), str(ROOT / ".venv35" / "bin" / "python")):
        if cand and Path(cand).is_file():
            return cand
    return None


@pytest.mark.timeout(1800)
@pytest.mark.skipif(_python35() is None, reason="no PySpark 3.5 environment (.venv35)")
def test_plain_session_on_pyspark35_local_cluster(tmp_path):
    py35 = _python35()
    version = subprocess.run([py35, "-c", "import pyspark; print(pyspark.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert version.startswith("3.5"), version
    bare35 = _bare_python(tmp_path / "bare35", py35)
    got, log = _run(py35, CLUSTER, "plain", tmp_path, bare35)
    assert got["spark"].startswith("3.5")
    _assert_plain_session_got_everything(got, log)
