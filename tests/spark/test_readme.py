"""Every ```python block of README.md runs as written, in the shared session.

The snippets create their session with ``SparkSession.builder...getOrCreate()``, which
returns the session the tests already started, so nothing is replaced. Each block runs in a
fresh namespace: a snippet must be complete (imports, data, session).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
SNIPPETS = BLOCK.findall(README.read_text(encoding="utf-8"))


def test_readme_has_snippets():
    assert len(SNIPPETS) >= 2


@pytest.mark.parametrize("source", SNIPPETS, ids=[f"block{i}" for i in range(len(SNIPPETS))])
def test_readme_snippet_runs(spark, source, capsys):
    assert ".stop()" not in source, "a README snippet must not stop the (shared) session"
    exec(compile(source, f"README.md block", "exec"), {"__name__": "__readme__"})
    assert not spark.sparkContext._jsc.sc().isStopped()
