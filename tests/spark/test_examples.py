"""Every script in ``examples/`` runs inside the shared session and checks its own result;
so does the quickstart's first balanced job (docs/quickstart.md).

Each example exposes ``main(spark=None)``; given the session it neither creates nor stops
one. New examples are picked up by the glob below.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.py"))


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"sparkbalance_example_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_examples_are_there():
    assert {p.name for p in EXAMPLES} >= {"rdd_reduce.py", "dataframe_groupby_join.py",
                                          "keyed_state_stream.py", "time_aware_weights.py"}


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(spark, path):
    module = _load(path)
    assert module.__doc__ and "How to run" in module.__doc__, "say what it shows and how to run it"
    module.main(spark)          # each example asserts its result against plain Spark
    assert not spark.sparkContext._jsc.sc().isStopped(), "an example must not stop the session"



def test_the_quickstarts_first_balanced_job_runs(spark):
    """docs/quickstart.md section 3, as written (its getOrCreate returns this session)."""
    text = (ROOT / "docs" / "quickstart.md").read_text()
    section = text.split("## 3.", 1)[1].split("## 4.", 1)[0]
    code = section.split("```python", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/quickstart.md", "exec"), {})
    assert not spark.sparkContext._jsc.sc().isStopped()
