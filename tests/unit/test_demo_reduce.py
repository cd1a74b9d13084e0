"""The reduce demo's rounds: medians per figure, option checks (no Spark)."""
from __future__ import annotations

import argparse
import dataclasses

import pytest

from sparkbalance.bench.workloads import RunResult
from sparkbalance.demo.reduce import _resolve, median_run


def test_median_run_takes_each_figure_over_the_rounds():
    a = RunResult("mixed", [4, 2], [0.4, 0.2], [0.3, 0.2], 1.0, 0.01, {"k": 1})
    rounds = [a, dataclasses.replace(a, wall=3.0, seconds=[1.2, 0.2]),
              dataclasses.replace(a, wall=2.0, cpu=[0.5, 0.1], records=[5, 1])]
    m = median_run(rounds)
    assert m.strategy == "mixed" and m.result == {"k": 1}
    assert m.wall == 2.0 and m.seconds == [0.4, 0.2] and m.cpu == [0.3, 0.2]
    assert m.records == [4, 2]


def test_defaults_and_refusal():
    full = _resolve(argparse.Namespace(quick=False, strategies="hash"))
    quick = _resolve(argparse.Namespace(quick=True, strategies="hash"))
    assert (full.repeats, full.records, quick.repeats) == (3, 100_000, 1)
    # the costly step waits, on as many task slots as partitions: the balance shows in wall
    assert (full.partitions, full.wait_us, quick.wait_us) == (8, 100.0, 60.0)
    with pytest.raises(ValueError, match="--wait-us -1"):
        _resolve(argparse.Namespace(quick=True, strategies="hash", wait_us=-1.0))
    with pytest.raises(ValueError, match="--partitions 0"):
        _resolve(argparse.Namespace(quick=True, strategies="hash", partitions=0))
    with pytest.raises(ValueError, match="--repeats 0; expected >= 1"):
        _resolve(argparse.Namespace(quick=True, strategies="hash", repeats=0))
