"""Every script in ``examples/`` runs inside the shared session and checks its own result.

Each example exposes ``main(spark=None)``; given the session it neither creates nor stops
one. New examples are picked up by the glob below.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from pyspark.sql import DataFrame

#: Examples of the DataFrame adapters, which place rows with ``DataFrame.repartitionById``
#: (Spark >= 4.1).
NEEDS_REPARTITION_BY_ID = {"dataframe_groupby_join"}
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
    if path.stem in NEEDS_REPARTITION_BY_ID and not hasattr(DataFrame, "repartitionById"):
        pytest.skip("DataFrame adapters need DataFrame.repartitionById (Spark >= 4.1)")
    module = _load(path)
    assert module.__doc__ and "How to run" in module.__doc__, "say what it shows and how to run it"
    module.main(spark)          # each example asserts its result against plain Spark
    assert not spark.sparkContext._jsc.sc().isStopped(), "an example must not stop the session"

