"""``spark-submit --py-files <zip> --jars <jar>`` on ``local-cluster[2,1,1024]`` with a Python
that does not have sparkbalance: the way PySpark code reaches a cluster's executors.

The driver and executor interpreter is a fresh virtual environment whose only packages are
those of this interpreter's environment (pyspark, numpy, cloudpickle...) put on its path by
a plain ``.pth`` line; the editable install's own ``.pth`` is not processed there, so
``import sparkbalance`` fails in it (checked first). The package reaches both sides from the
zip of :func:`sparkbalance.spark.session.submit.pyfiles_zip` only; the application
(``submit_app.py``) compares RDD adapters, DataFrame groupBy/join and a keyed-state stream
with migrations and the JVM recorder against plain Spark.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from sparkbalance.spark.session.bridge import bridge_jar_path
from sparkbalance.spark.session.submit import submit_args

HERE = Path(__file__).resolve().parent
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> str:
    """An interpreter with this environment's packages but without sparkbalance."""
    env_dir = tmp_path_factory.mktemp("bare") / "venv"
    venv.create(env_dir, with_pip=False)
    py = str(env_dir / "bin" / "python")
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(site, "deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    return py


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "SPARK_HOME", "PYSPARK_SUBMIT_ARGS")}
    env.update(extra)
    return env


def test_the_bare_interpreter_has_no_sparkbalance(bare_python, tmp_path):
    probe = subprocess.run([bare_python, "-c", "import sparkbalance"], cwd=tmp_path,
                           capture_output=True, text=True, env=_env())
    assert probe.returncode != 0 and "No module named 'sparkbalance'" in probe.stderr
    ok = subprocess.run([bare_python, "-c", "import pyspark, numpy, cloudpickle"],
                        cwd=tmp_path, capture_output=True, text=True, env=_env())
    assert ok.returncode == 0, ok.stderr


@pytest.mark.timeout(1800)  # a whole application on two executor JVMs
def test_spark_submit_with_py_files_and_jars_equals_plain_spark(bare_python, tmp_path):
    if bridge_jar_path() is None:
        pytest.skip("bridge jar not built (bash jvm_bridge/build.sh PYTHON)")
    import pyspark
    spark_submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    args = submit_args(tmp_path / "sparkbalance-pyfiles.zip")
    assert args[:1] == ["--py-files"] and "--jars" in args
    result = tmp_path / "result.json"
    cmd = [str(spark_submit), "--master", "local-cluster[2,1,1024]",
           "--conf", "spark.executor.memory=768m", "--conf", "spark.driver.memory=1g",
           "--conf", "spark.ui.enabled=false", "--conf", "spark.ui.showConsoleProgress=false",
           "--conf", "spark.sql.shuffle.partitions=4",
           *args, str(HERE / "submit_app.py"), str(result)]
    run = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=1500,
                         env=_env(PYSPARK_PYTHON=bare_python,
                                  PYSPARK_DRIVER_PYTHON=bare_python))
    steps = "\n".join(x for x in run.stderr.splitlines() if x.startswith("[submit_app"))
    assert run.returncode == 0, steps + "\n" + run.stdout[-3000:] + run.stderr[-6000:]
    out = json.loads(result.read_text())
    zip_path = args[1]
    assert out["driver_module"].startswith(zip_path), out
    assert out["executor_modules"] and all(
        "sparkbalance-pyfiles.zip" in m for m in out["executor_modules"]), out
    assert out["bridge"] is True
    assert out["rdd"] == {"mixed": True, "pkg": True, "keygroups": True}
    assert out["dataframe"] == {"group_by": True, "join": True}
    state = out["state"]
    assert state["exact"] and state["migrations"] >= 1, state
    assert state["recorder"] == "JvmTaskMetricsListener" and state["tasks_recorded"] > 0
