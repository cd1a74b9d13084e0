"""The bridge jar at build time: found, compiled, or its absence said loudly (setup.py's step).

Every install path of the README ends here: ``pip install sparkbalance`` (a wheel, built by
``make dist`` with the jar inside), a wheel built from the sdist (``pip wheel
sparkbalance-0.1.0.tar.gz``), ``pip install .`` from a clone, and ``pip install -e .``.
:func:`ensure_jar` gives the jar to put into the wheel (or to leave in
``jvm_bridge/build/`` for an editable install), trying in this order:

1. ``$SPARKBALANCE_BRIDGE_JAR``, a jar built elsewhere;
2. ``jvm_bridge/build/sparkbalance-bridge.jar`` when it is newer than every Java source:
   the prebuilt jar the sdist ships, or the one ``make setup`` compiled in a checkout;
3. compiled now by ``jvm_bridge/build.sh`` (``javac --release 17`` against PySpark's
   jars) when ``javac`` is on the PATH and an interpreter with PySpark 4.x is found:
   ``$SPARKBALANCE_BUILD_PYTHON``; the interpreter running the build; the same
   interpreter outside pip's build isolation (pip runs the build with the target
   environment's interpreter and hides its site-packages through ``PYTHONPATH``, so a
   ``pip install .`` into an environment that already has PySpark compiles against it);
   ``python3`` on the PATH;
4. a stale jar from step 2 (with a warning that it is older than its sources);
5. none: the build goes on without the jar and says so in a boxed warning on stderr
   (``pip install -v`` shows it; pip hides a successful build's output), or fails when
   ``SPARKBALANCE_REQUIRE_JAR=1`` (``make dist`` sets it). At run time sparkbalance then
   logs one warning at first use (no Balance tab, no JVM metrics, no JVM paths).

``SPARKBALANCE_COMPILE=0`` skips step 3 (use a jar that is there, or none).

Examples
--------
>>> ensure_jar(Path("."))         # in a checkout after `make setup`      # doctest: +SKIP
PosixPath('jvm_bridge/build/sparkbalance-bridge.jar')
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Sequence

__all__ = ["JAR_NAME", "COMPILE_MAJOR", "ensure_jar", "find_jar", "newest_source",
           "pyspark_pythons", "pyspark_major", "missing_jar_message", "shout"]

JAR_NAME = "sparkbalance-bridge.jar"
#: Environment variables that pip's build isolation sets to hide the target
#: environment's site-packages from the build (pip's BuildEnvironment).
_ISOLATION_VARS = ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONNOUSERBASE")
#: PySpark's major versions build.sh compiles against (it refuses 3.x: the one jar serves
#: 3.5 and 4.x, its 3.5 pages compiled against stubs).
COMPILE_MAJOR = 4
_PROBE = "import pyspark; print(pyspark.__version__)"


def newest_source(bridge: Path) -> float:
    """The newest modification time among the bridge's Java sources and resources (0.0
    when there are none, e.g. a wheel's tree)."""
    times = [p.stat().st_mtime for p in (bridge / "src").rglob("*") if p.is_file()]
    return max(times, default=0.0)


def pyspark_major(python: str, env: dict[str, str]) -> int | None:
    """PySpark's major version as ``python`` run in ``env`` imports it, or None."""
    try:
        out = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True,
                             env=env, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    try:
        return int(out.stdout.strip().split(".")[0])
    except ValueError:
        return None


def pyspark_pythons() -> list[tuple[str, dict[str, str]]]:
    """Interpreters (with the environment to run them in) that may have PySpark, in the
    order :func:`ensure_jar` tries them (the module docstring's step 3)."""
    env = dict(os.environ)
    outside = {k: v for k, v in env.items() if k not in _ISOLATION_VARS}
    found = []
    given = env.get("SPARKBALANCE_BUILD_PYTHON")
    if given:
        found.append((given, outside))
    found.append((sys.executable, env))
    found.append((sys.executable, outside))
    system = shutil.which("python3", path=env.get("PATH"))
    if system:
        found.append((system, outside))
    return found


def _compile(bridge: Path, log: list[str]) -> Path | None:
    if os.environ.get("SPARKBALANCE_COMPILE", "1") == "0":
        log.append("compiling skipped (SPARKBALANCE_COMPILE=0)")
        return None
    if shutil.which("javac") is None or shutil.which("jar") is None:
        log.append("no javac/jar on the PATH (install a JDK 17+)")
        return None
    script = bridge / "build.sh"
    if not script.is_file():
        log.append(f"no {script}")
        return None
    seen = set()
    for python, env in pyspark_pythons():
        key = (python, tuple(sorted(env.items())))
        if key in seen:
            continue
        seen.add(key)
        major = pyspark_major(python, env)
        if major is None:
            continue
        if major < COMPILE_MAJOR:
            log.append(f"{python} has PySpark {major}.x; build.sh compiles against 4.x")
            continue
        out = subprocess.run(["bash", str(script), python], env=env, capture_output=True,
                             text=True)
        jar = bridge / "build" / JAR_NAME
        if out.returncode == 0 and jar.is_file():
            return jar
        log.append(f"build.sh with {python} failed:\n{out.stdout}{out.stderr}")
        return None
    log.append("no interpreter with PySpark 4.x found (set SPARKBALANCE_BUILD_PYTHON, or "
               "build with pip's --no-build-isolation in an environment that has pyspark)")
    return None


def find_jar(root: Path, *, log: list[str] | None = None) -> Path | None:
    """The jar for the package built from ``root`` (a checkout or an unpacked sdist), or
    None; ``log`` collects why each step did not give one."""
    log = [] if log is None else log
    given = os.environ.get("SPARKBALANCE_BRIDGE_JAR")
    if given:
        if Path(given).is_file():
            return Path(given)
        log.append(f"SPARKBALANCE_BRIDGE_JAR={given!r} is no file")
    bridge = root / "jvm_bridge"
    built = bridge / "build" / JAR_NAME
    if built.is_file() and built.stat().st_mtime >= newest_source(bridge):
        return built
    jar = _compile(bridge, log)
    if jar is not None:
        return jar
    if built.is_file():
        shout(f"sparkbalance: using {built}, older than its Java sources (it could not be "
              "compiled anew: " + "; ".join(log) + ")")
        return built
    return None


def missing_jar_message(log: Sequence[str]) -> str:
    """The warning of a build without the jar: what is lost, why, and how to get it."""
    why = "\n".join(f"  - {line}" for line in log) or "  - (no reason recorded)"
    return ("sparkbalance is being built WITHOUT its JVM bridge jar: no Balance tab, no JVM "
            "task metrics, no JVM data paths (everything else works).\nWhy:\n" + why +
            "\nTo get it: install a JDK 17+ and pyspark>=4 into this environment, then "
            "`pip install --no-build-isolation .` (or set SPARKBALANCE_BUILD_PYTHON to a "
            "python with pyspark); or build the jar with `bash jvm_bridge/build.sh PYTHON` "
            "and set SPARKBALANCE_BRIDGE_JAR. See docs/troubleshooting.md.")


def shout(text: str) -> None:
    """Print ``text`` boxed on stderr, where a build's warnings go."""
    bar = "!" * 78
    print(f"\n{bar}\n{text}\n{bar}\n", file=sys.stderr, flush=True)


def ensure_jar(root: Path) -> Path | None:
    """:func:`find_jar`, with the loud warning (or, with ``SPARKBALANCE_REQUIRE_JAR=1``,
    the error) when there is none."""
    log: list[str] = []
    jar = find_jar(root, log=log)
    if jar is None:
        text = missing_jar_message(log)
        if os.environ.get("SPARKBALANCE_REQUIRE_JAR") == "1":
            raise SystemExit(text + "\n(SPARKBALANCE_REQUIRE_JAR=1: failing)")
        shout(text)
    return jar
