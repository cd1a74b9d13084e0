"""Packaging for sparkbalance: metadata in pyproject.toml; this file adds the jar step.

The wheel carries the JVM bridge jar as package data, ``sparkbalance/jars/
sparkbalance-bridge.jar``, so a pip user gets the Balance tab, the JVM recorder and the JVM
paths without a checkout; the sdist carries it prebuilt (``jvm_bridge/build/``), so a wheel
built from the sdist has it without a JDK. Where the jar comes from (a prebuilt one, or
compiled now by ``jvm_bridge/build.sh`` with ``javac`` against PySpark's jars), and the loud
warning when neither is possible, are :mod:`tools.build_jar`'s.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "tools"))   # setuptools.build_meta does not add it
import build_jar  # noqa: E402  (tools/build_jar.py, shipped in the sdist)


class BuildWithJar(build_py):
    """``build_py`` that also puts the bridge jar into ``sparkbalance/jars/`` (an editable
    install uses it in ``jvm_bridge/build/``, where it was found or compiled)."""

    def run(self) -> None:
        super().run()
        jar = build_jar.ensure_jar(HERE)
        if jar is None:
            return
        dest = Path(self.build_lib) / "sparkbalance" / "jars"
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(jar, dest / build_jar.JAR_NAME)


class SdistWithJar(sdist):
    """``sdist`` that ships the jar prebuilt (``jvm_bridge/build/``, MANIFEST.in), so a
    wheel built from it needs no JDK."""

    def run(self) -> None:
        build_jar.ensure_jar(HERE)
        super().run()


setup(cmdclass={"build_py": BuildWithJar, "sdist": SdistWithJar})
