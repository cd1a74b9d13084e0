"""Every ```python block of README.md runs as written, in the shared session.

The snippets create their session with ``SparkSession.builder...getOrCreate()``, which
returns the session the tests already started, so nothing is replaced. Each block runs in a
fresh namespace: a snippet must be complete (imports, data, session).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from pyspark.sql import DataFrame

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
SNIPPETS = BLOCK.findall(README.read_text(encoding="utf-8"))


def test_readme_has_snippets():
    assert len(SNIPPETS) >= 2


#: The DataFrame adapters place rows with ``DataFrame.repartitionById`` (Spark >= 4.1).
NEEDS_REPARTITION_BY_ID = ("sb.group_by(", "sb.join(", "sb.repartition(")


@pytest.mark.parametrize("source", SNIPPETS, ids=[f"block{i}" for i in range(len(SNIPPETS))])
def test_readme_snippet_runs(spark, source):
    if any(call in source for call in NEEDS_REPARTITION_BY_ID) and \
            not hasattr(DataFrame, "repartitionById"):
        pytest.skip("DataFrame adapters need DataFrame.repartitionById (Spark >= 4.1)")
    assert ".stop()" not in source, "a README snippet must not stop the (shared) session"
    exec(compile(source, "README.md", "exec"), {"__name__": "__readme__"})
    assert not spark.sparkContext._jsc.sc().isStopped()
