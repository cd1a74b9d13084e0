"""Planner specs of the stream benchmark (sparkbalance.bench.streams.parse_spec)."""
from __future__ import annotations

import pytest

from sparkbalance.bench.streams import parse_spec


def test_planner_spec_with_its_own_theta():
    assert parse_spec("mixed@0.2", 0.08) == ("mixed", 0.2)
    assert parse_spec("plain", 0.08) == ("plain", 0.08)
    assert parse_spec("ssm", 0.08) == ("ssm", 0.08)      # registry alias
    with pytest.raises(ValueError, match="mixed@x"):
        parse_spec("mixed@x", 0.08)


def test_unknown_planner_names_the_registry():
    with pytest.raises(ValueError, match="'bogus'.*plain.*mintable"):
        parse_spec("bogus@0.2", 0.08)
