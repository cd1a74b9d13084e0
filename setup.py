"""Packaging for sparkbalance: metadata in pyproject.toml; this file adds the jar step.

The wheel carries the JVM bridge jar as package data, ``sparkbalance/jars/
sparkbalance-bridge.jar``, so a pip user gets the JVM recorder, the JVM frame selection and
the plugin without a checkout. The jar is the one ``jvm_bridge/build.sh`` compiles (plain
``javac --release 17`` against the PySpark jars): taken from ``$SPARKBALANCE_BRIDGE_JAR`` or
``jvm_bridge/build/`` when already built (``make dist`` builds it first), else compiled here
with ``$SPARKBALANCE_BUILD_PYTHON`` (an interpreter that has pyspark; the isolated build
environment has none). With no JDK or pyspark the wheel is built without the jar and says
so, unless ``SPARKBALANCE_REQUIRE_JAR=1``, which makes that an error.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
JAR_NAME = "sparkbalance-bridge.jar"


def _bridge_jar() -> Path | None:
    env = os.environ.get("SPARKBALANCE_BRIDGE_JAR")
    if env and Path(env).is_file():
        return Path(env)
    built = HERE / "jvm_bridge" / "build" / JAR_NAME
    if built.is_file():
        return built
    script = HERE / "jvm_bridge" / "build.sh"
    python = os.environ.get("SPARKBALANCE_BUILD_PYTHON")
    if script.is_file() and python:
        subprocess.run(["bash", str(script), python], check=True)
        return built if built.is_file() else None
    return None


class BuildWithJar(build_py):
    """``build_py`` that also copies the bridge jar into ``sparkbalance/jars/``."""

    def run(self) -> None:
        super().run()
        jar = _bridge_jar()
        if jar is None:
            msg = ("sparkbalance: no bridge jar (run `bash jvm_bridge/build.sh PYTHON`, or set "
                   "SPARKBALANCE_BUILD_PYTHON to an interpreter with pyspark); building "
                   "without it")
            if os.environ.get("SPARKBALANCE_REQUIRE_JAR") == "1":
                raise SystemExit(msg.replace("building without it", "SPARKBALANCE_REQUIRE_JAR=1"))
            print(msg)
            return
        dest = Path(self.build_lib) / "sparkbalance" / "jars"
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(jar, dest / JAR_NAME)


setup(cmdclass={"build_py": BuildWithJar})
