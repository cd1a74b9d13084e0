"""Every install path the README names carries the bridge jar, or says loudly that it cannot.

The paths, each built for real by pip from a copy of this checkout (its tracked files; no
jar in it to begin with) and installed with ``--no-deps`` into one fresh virtual environment
(``import sparkbalance`` and its jar lookup need neither pyspark nor numpy):

* ``pip install .`` into an environment without PySpark: the build asks for PySpark as a
  build requirement (tools/build_backend.py; pip takes it from its cache), compiles the jar
  with javac and installs it as package data (~90 s: PySpark unpacked into the build
  environment, javac ~25 s);
* the wheel: ``pip wheel`` of the checkout holds the jar, and an installed copy finds it
  from a folder outside the checkout (~15 s: the jar is the one compiled above);
* the sdist: ``python -m build --sdist`` ships the jar prebuilt, and a wheel built from it
  with compiling turned off (as on a machine without a JDK) still holds it (~30 s);
* ``pip install -e .``: the installed package uses the checkout's ``jvm_bridge/build`` jar
  (~10 s);
* no JDK (a PATH without javac): the build goes on without the jar and prints why (``pip
  -v`` shows it), or fails with ``SPARKBALANCE_REQUIRE_JAR=1`` (~20 s).

The times are on an idle 2-core machine; under load they stretch several-fold. Only the
first build runs in pip's build isolation (the path a user takes); the others reuse this
interpreter's setuptools (``--no-build-isolation``), which changes nothing the jar depends on.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
JAR = "sparkbalance/jars/sparkbalance-bridge.jar"
BUILT = Path("jvm_bridge") / "build" / "sparkbalance-bridge.jar"
pytestmark = pytest.mark.slow
#: The builds after the first (which shows pip's isolated build fetching PySpark) reuse the
#: fresh environment's setuptools (``builder``): a build environment each costs ~10-20 s and
#: proves nothing more about the jar.
_NO_ISOLATION = ("--no-build-isolation",)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "SPARKBALANCE_BRIDGE_JAR", "SPARKBALANCE_BUILD_PYTHON",
                        "SPARKBALANCE_REQUIRE_JAR", "SPARKBALANCE_COMPILE")}
    env.update(extra)
    return env


def _run(cmd: list[str], *, ok: bool = True, env: dict[str, str] | None = None,
         **kw) -> subprocess.CompletedProcess:
    out = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                         env=_env() if env is None else env, timeout=900, **kw)
    if ok:
        assert out.returncode == 0, f"{cmd} failed:\n{out.stdout}\n{out.stderr}"
    return out


def _copy_checkout(dest: Path) -> Path:
    """The checkout's tracked (and new, unignored) files: no jar, no build output."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], cwd=REPO, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, names):
        src = REPO / name
        if src.is_file() and not src.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    assert not (dest / BUILT).exists()
    return dest


def _jar_of(py: Path, cwd: Path) -> str:
    return _run([py, "-c", "import sparkbalance; print(sparkbalance.bridge_jar())"],
                cwd=cwd).stdout.strip()


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    return _copy_checkout(tmp_path_factory.mktemp("checkout"))


@pytest.fixture(scope="module")
def env_py(tmp_path_factory) -> Path:
    """One fresh environment without PySpark, shared by every install below."""
    d = tmp_path_factory.mktemp("venv")
    venv.create(d, with_pip=True)
    return d / "bin" / "python"


@pytest.fixture(scope="module")
def builder(env_py) -> Path:
    """The fresh environment with the build tools, for the builds without isolation."""
    _run([env_py, "-m", "pip", "install", "--quiet", "build", "setuptools>=64", "wheel"])
    return env_py


@pytest.fixture(scope="module")
def outside(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("elsewhere")


@pytest.fixture(scope="module")
def installed(checkout, env_py, outside) -> str:
    """``pip install .`` from the checkout into the environment without PySpark."""
    _run([env_py, "-m", "pip", "install", "--quiet", "--no-deps", checkout])
    return _jar_of(env_py, outside)


def test_pip_install_dot_compiles_the_jar_with_pyspark_fetched_for_the_build(
        installed, env_py, checkout):
    assert installed.startswith(str(env_py.parents[1])) and installed.endswith(JAR), installed
    assert Path(installed).is_file() and (checkout / BUILT).is_file()
    probe = _run([env_py, "-c", "import importlib.util as u; print(u.find_spec('pyspark'))"])
    assert probe.stdout.strip() == "None"      # PySpark was the build's, not installed


def test_the_wheel_holds_the_jar_and_an_installed_wheel_finds_it(
        installed, checkout, env_py, builder, outside, tmp_path):
    _run([builder, "-m", "pip", "wheel", "--quiet", "--no-deps", *_NO_ISOLATION,
          "-w", tmp_path, checkout], env=_env(SPARKBALANCE_REQUIRE_JAR="1"))
    (wheel,) = tmp_path.glob("sparkbalance-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert JAR in names
    assert not any("__pycache__" in n or n.startswith(("tests/", "tools/")) for n in names)
    _run([env_py, "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall",
          wheel])
    jar = _jar_of(env_py, outside)
    assert jar.startswith(str(env_py.parents[1])) and jar.endswith(JAR), jar
    args = _run([env_py, "-m", "sparkbalance", "submit-args", "--zip", tmp_path / "sb.zip"],
                cwd=outside).stdout.split()
    assert args[:2] == ["--py-files", str(tmp_path / "sb.zip")]
    assert args[2:4] == ["--jars", jar]
    assert "sparkbalance/spark/rdd/adapters.py" in zipfile.ZipFile(
        tmp_path / "sb.zip").namelist()


def test_the_sdist_ships_the_jar_prebuilt_and_its_wheel_needs_no_jdk(
        installed, checkout, builder, tmp_path):
    _run([builder, "-m", "build", "--sdist", "--no-isolation", "--skip-dependency-check",
          "--outdir", tmp_path, checkout], env=_env(SPARKBALANCE_REQUIRE_JAR="1"))
    (sdist,) = tmp_path.glob("sparkbalance-*.tar.gz")
    names = tarfile.open(sdist).getnames()
    top = names[0].split("/")[0]
    assert f"{top}/{BUILT.as_posix()}" in names and f"{top}/tools/build_jar.py" in names
    assert not any(n.endswith(".class") or "__pycache__" in n for n in names)
    # as where no JDK is: compiling off, the prebuilt jar goes into the wheel
    _run([builder, "-m", "pip", "wheel", "--quiet", "--no-deps", *_NO_ISOLATION,
          "-w", tmp_path, sdist], env=_env(SPARKBALANCE_COMPILE="0",
                                           SPARKBALANCE_REQUIRE_JAR="1"))
    (wheel,) = tmp_path.glob("sparkbalance-*.whl")
    assert JAR in zipfile.ZipFile(wheel).namelist()


def test_an_editable_install_uses_the_checkouts_jar(installed, checkout, env_py, builder,
                                                    outside):
    _run([builder, "-m", "pip", "install", "--quiet", "--no-deps", *_NO_ISOLATION, "-e",
          checkout])
    try:
        assert _jar_of(env_py, outside) == str(checkout / BUILT)
    finally:
        _run([env_py, "-m", "pip", "uninstall", "--quiet", "--yes", "sparkbalance"])


def test_without_a_jdk_the_build_says_so_or_fails_when_the_jar_is_required(builder,
                                                                            tmp_path):
    bare = _copy_checkout(tmp_path / "bare")
    no_jdk = tmp_path / "bin"            # a PATH with bash and git but no javac
    no_jdk.mkdir()
    for tool in ("bash", "git", "uname"):
        if shutil.which(tool):
            (no_jdk / tool).symlink_to(shutil.which(tool))
    env = _env(PATH=str(no_jdk))
    out = _run([builder, "-m", "pip", "wheel", "-v", "--no-deps", *_NO_ISOLATION,
                "-w", tmp_path, bare], env=env)
    said = out.stdout + out.stderr
    assert "WITHOUT its JVM bridge jar" in said and "no javac" in said, said[-3000:]
    (wheel,) = tmp_path.glob("sparkbalance-*.whl")
    assert JAR not in zipfile.ZipFile(wheel).namelist()
    failed = _run([builder, "-m", "pip", "wheel", "--no-deps", *_NO_ISOLATION,
                   "-w", tmp_path / "w2", bare], env=dict(env, SPARKBALANCE_REQUIRE_JAR="1"),
                  ok=False)
    assert failed.returncode != 0
    assert "SPARKBALANCE_REQUIRE_JAR=1" in failed.stdout + failed.stderr
