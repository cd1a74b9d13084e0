"""The build backend: setuptools', asking for PySpark at build time when the jar needs it.

``pip install .`` into a fresh environment builds before it installs the dependencies, so
PySpark, whose jars ``javac`` compiles the bridge against, is nowhere yet. This backend is
``setuptools.build_meta`` with one change: when a wheel (or an editable install) is built
where a JDK is at hand but neither a jar (``$SPARKBALANCE_BRIDGE_JAR``, or a prebuilt one
newer than its sources, as in the sdist) nor an interpreter with PySpark 4.x is, it asks for
``pyspark>=4,<5`` as a build requirement. pip then installs it into the isolated build
environment (from its cache when the environment gets the same PySpark as a dependency) and
:mod:`build_jar` compiles against it. The sdist never asks for it.

Examples
--------
>>> extra_requires()            # a checkout with a fresh jvm_bridge/build jar    # doctest: +SKIP
[]
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from setuptools import build_meta as _orig
from setuptools.build_meta import *  # noqa: F401,F403  (every hook not overridden here)

import build_jar

#: What the build asks for when it must compile and finds no PySpark 4.x.
PYSPARK_BUILD_REQUIREMENT = "pyspark>=4,<5"


def extra_requires(root: Path | None = None) -> list[str]:
    """``[PYSPARK_BUILD_REQUIREMENT]`` when compiling the jar needs a PySpark not at hand."""
    root = Path.cwd() if root is None else root
    if os.environ.get("SPARKBALANCE_BRIDGE_JAR") or \
            os.environ.get("SPARKBALANCE_COMPILE", "1") == "0":
        return []
    bridge = root / "jvm_bridge"
    built = bridge / "build" / build_jar.JAR_NAME
    if built.is_file() and built.stat().st_mtime >= build_jar.newest_source(bridge):
        return []
    if not (bridge / "build.sh").is_file() or shutil.which("javac") is None:
        return []        # nothing to compile with: build_jar says so loudly at build time
    for python, env in build_jar.pyspark_pythons():
        major = build_jar.pyspark_major(python, env)
        if major is not None and major >= build_jar.COMPILE_MAJOR:
            return []
    return [PYSPARK_BUILD_REQUIREMENT]


def get_requires_for_build_wheel(config_settings=None):  # noqa: D103 (PEP 517 hook)
    return _orig.get_requires_for_build_wheel(config_settings) + extra_requires()


def get_requires_for_build_editable(config_settings=None):  # noqa: D103 (PEP 660 hook)
    return _orig.get_requires_for_build_editable(config_settings) + extra_requires()
