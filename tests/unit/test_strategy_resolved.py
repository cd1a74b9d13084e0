"""A strategy resolved once (Spark-free paths): the registry's resolver is called once per
fit, per diagnose strategy and per keyed-state controller; the record it returns is
immutable and fits without resolving again; θ and A_max defaults have one definition."""
from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from sparkbalance import strategies
from sparkbalance.planning.base import DEFAULT_MAX_TABLE, DEFAULT_THETA
from sparkbalance.stats.keystats import KeyStats

PACKAGE = Path(__file__).resolve().parents[2] / "sparkbalance"
STATS = KeyStats.from_counts({f"k{i}": (200 if i < 3 else 1 + i % 5) for i in range(120)})


def test_the_record_is_checked_and_immutable():
    r = strategies.resolve("mixed", {"theta": 0.1})
    assert (r.name, r.kind, r.theta, r.max_table, r.splits_keys) == (
        "mixed", "table", 0.1, DEFAULT_MAX_TABLE, False)
    with pytest.raises(TypeError):
        r.params["theta"] = 0.2
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.spec = None
    with pytest.raises(ValueError, match="theta=-1"):
        strategies.resolve("mintable", {"theta": -1})   # values checked once, up front
    with pytest.raises(ValueError, match="min_gain=2"):
        strategies.resolve("auto", {"min_gain": 2})


def test_settings_fill_what_the_call_leaves_unset():
    settings = {"strategy": "mintable", "theta": 0.3, "max_table": 9}.get
    r = strategies.resolve(None, {"theta": 0.1}, setting=settings)
    assert (r.name, r.theta, r.max_table) == ("mintable", 0.1, 9)
    assert dict(strategies.resolve("keygroups", {}, setting=settings).params) == {}


def test_zero_pass_options_are_split_off_once():
    r = strategies.resolve(None, {"min_gain": 0.1, "num_groups": 64},
                           map_output=lambda: True)
    assert dict(r.map_output) == {"min_gain": 0.1, "num_groups": 64} and not r.needs_stats
    assert strategies.resolve(None, {"theta": 0.1}, map_output=lambda: True).map_output is None
    assert strategies.resolve(None, {}, map_output=lambda: False).map_output is None
    with pytest.raises(ValueError, match="strategy must be 'auto'"):
        strategies.resolve("mixed", {}, asked=True)


def test_fitting_resolves_once(calls):
    strategies.fit("mixed", STATS, 4, theta=0.1)
    assert calls == ["mixed"]
    record = strategies.resolve("keygroups", {"tau": 0.3})
    calls.clear()
    record.fit(STATS, 4)
    assert calls == []


def test_plan_report_fit_takes_the_record_without_resolving(calls):
    from sparkbalance.spark.report import plan_report as pr
    pr.fit("mintable", STATS, 4)
    assert calls == ["mintable"]
    calls.clear()
    pr.fit(strategies.resolve("mintable"), STATS, 4)
    assert calls == ["mintable"]          # the one resolve of this line, none inside fit


def test_fit_partitioner_resolves_once(calls):
    from sparkbalance.spark.fit import fit_partitioner
    f = fit_partitioner(None, 4, strategy="mixed", stats=STATS, theta=0.1)
    assert f.num_partitions == 4 and calls == ["mixed"]


def test_diagnose_fit_all_resolves_each_strategy_once(calls):
    from sparkbalance.spark.diagnose.skew_report import fit_all
    assert sorted(fit_all(STATS, 4, ["hash", "mixed", "keygroups"], theta=0.1)) == [
        "hash", "keygroups", "mixed"]
    assert calls == ["hash", "mixed", "keygroups"]


def test_the_keyed_state_builds_its_planner_through_the_registry(calls):
    from sparkbalance.state.control.controller import Controller
    c = Controller("mintable", 0.2, max_table=50, planner_params={"compact": True})
    assert calls == ["mintable"]
    assert type(c.planner) is strategies.planner_class("mintable")
    assert (c.planner.max_table, c.planner.theta) == (50, pytest.approx(c.theta_plan))
    assert type(Controller("ssm", 0.2).planner) is strategies.planner_class("ssm")


def test_planner_classes_are_listed_only_in_the_registry():
    assert strategies.planner_class("llfd").__name__ == "LLFD"
    with pytest.raises(ValueError, match="planner='pkg'"):
        strategies.planner_class("pkg")
    from sparkbalance.strategies import tables
    assert not hasattr(tables, "PLANNERS")


def _literal_theta_defaults() -> list[str]:
    """Parameters named theta / max_table whose default is θ = 0.08 or A_max = 3000 written
    in place (other defaults, e.g. LLFD's exact balance theta=0.0, mean something else)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in ("bench", "demo"):  # experiments state their own settings
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            a = node.args
            named = list(zip(a.args[len(a.args) - len(a.defaults):], a.defaults)) + [
                (k, d) for k, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
            for arg, default in named:
                if arg.arg in ("theta", "max_table") and isinstance(default, ast.Constant) \
                        and default.value in (0.08, 3000) \
                        and not isinstance(default.value, bool):
                    found.append(f"{rel}:{node.lineno} {node.name}({arg.arg}={default.value})")
    return found


def test_theta_and_a_max_defaults_are_defined_once():
    assert _literal_theta_defaults() == []
    assert strategies.get("mixed").defaults["theta"] is DEFAULT_THETA
    assert strategies.get("mixed").defaults["max_table"] is DEFAULT_MAX_TABLE
    from sparkbalance.spark.session import conf
    assert conf.KEYS["theta"].default is DEFAULT_THETA
    assert conf.KEYS["max_table"].default is DEFAULT_MAX_TABLE
