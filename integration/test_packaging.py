"""The built wheel carries the bridge jar, and an installed copy finds it (no checkout).

Builds the wheel with pip (the jar compiled by ``jvm_bridge/build.sh`` against this
interpreter's pyspark), installs it with ``--no-deps`` into a fresh virtual environment
(nothing else in it: ``import sparkbalance``, the jar lookup and ``submit-args`` need
neither pyspark nor numpy) and asks that interpreter, from a folder outside the checkout,
where the jar is.
"""
from __future__ import annotations

import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _run(cmd: list[str], **kw) -> str:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "SPARKBALANCE_BRIDGE_JAR")}
    env.update(kw.pop("env", {}))
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, **kw)
    assert out.returncode == 0, f"{cmd} failed:\n{out.stdout}\n{out.stderr}"
    return out.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out),
          str(REPO)], env={"SPARKBALANCE_BUILD_PYTHON": sys.executable,
                           "SPARKBALANCE_REQUIRE_JAR": "1"})
    (whl,) = out.glob("sparkbalance-*.whl")
    return whl


def test_the_wheel_holds_the_jar_as_package_data(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "sparkbalance/jars/sparkbalance-bridge.jar" in names
    assert not any("__pycache__" in n or n.startswith("tests/") for n in names)


def test_an_installed_wheel_finds_its_jar(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = str(env_dir / "bin" / "python")
    _run([py, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)])
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    jar = _run([py, "-c", "import sparkbalance; print(sparkbalance.bridge_jar())"],
               cwd=outside).strip()
    assert jar.startswith(str(env_dir)) and jar.endswith(
        "sparkbalance/jars/sparkbalance-bridge.jar"), jar
    assert Path(jar).is_file()
    args = _run([py, "-m", "sparkbalance", "submit-args", "--zip", str(tmp_path / "sb.zip")],
                cwd=outside).split()
    assert args[:2] == ["--py-files", str(tmp_path / "sb.zip")]
    assert args[2:4] == ["--jars", jar]
    assert "sparkbalance/spark/rdd/adapters.py" in zipfile.ZipFile(tmp_path / "sb.zip").namelist()
