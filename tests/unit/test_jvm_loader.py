"""The bridge on first use, without Spark: the once-per-session decision and its log line.

A real session is in ``integration/test_bridge_on_demand.py``; here a stand-in context
answers the few py4j calls :mod:`sparkbalance.spark.session.jvm_loader` makes (a class
that loads only once the jar's URL was added, ``addURL``, ``addJar``), so the log lines,
the once-per-session memo and the refusals are checked in milliseconds.
"""
from __future__ import annotations

import logging
import zipfile
from types import SimpleNamespace

import pytest

from sparkbalance.spark.session import executor_python, jvm_loader
from sparkbalance.spark.session.bridge import RECORDER_CLASS

LOGGER = "sparkbalance.spark.session.jvm_loader"


class _StandIn:
    """A SparkContext whose JVM has no bridge until a URL is added to its class loader."""

    def __init__(self, refuse: bool = False) -> None:
        self.urls: list[str] = []
        self.jars: list[str] = []
        self.refuse = refuse
        self._jsc = SimpleNamespace(addJar=self.jars.append)
        loader = SimpleNamespace(addURL=self._add_url, getParent=lambda: None,
                                 getClass=lambda: SimpleNamespace(
                                     getSimpleName=lambda: "MutableURLClassLoader"))
        url = SimpleNamespace(toURL=lambda: "file:/x/sparkbalance-bridge.jar")
        file = SimpleNamespace(getAbsoluteFile=lambda: SimpleNamespace(toURI=lambda: url))
        self._jvm = SimpleNamespace(
            org=SimpleNamespace(apache=SimpleNamespace(spark=SimpleNamespace(util=SimpleNamespace(
                Utils=SimpleNamespace(classForName=self._class_for_name))))),
            java=SimpleNamespace(
                io=SimpleNamespace(File=lambda path: file),
                lang=SimpleNamespace(
                    Class=SimpleNamespace(forName=lambda name: SimpleNamespace(
                        isInstance=lambda obj: obj is loader)),
                    Thread=SimpleNamespace(currentThread=lambda: SimpleNamespace(
                        getContextClassLoader=lambda: loader)))))

    def _add_url(self, url: str) -> None:
        if self.refuse:
            raise PermissionError("class loader closed to new paths")
        self.urls.append(url)

    def _class_for_name(self, name: str, init: bool, loader: bool) -> None:
        if not (self.urls and name.startswith("io.sparkbalance.bridge.")):
            raise LookupError(f"ClassNotFoundException: {name}")


@pytest.fixture(autouse=True)
def _jar_and_no_python_check(monkeypatch, tmp_path):
    jar = tmp_path / "sparkbalance-bridge.jar"
    jar.write_bytes(b"")
    monkeypatch.setattr(jvm_loader, "bridge_jar_path", lambda: str(jar))
    # the executors' Python check is executor_python's (tested below and on a cluster)
    monkeypatch.setattr(jvm_loader, "ensure_executor_python", lambda sc: "importable")
    return jar


def _lines(caplog, text):
    return [r for r in caplog.records if r.name == LOGGER and text in r.getMessage()]


def test_the_jar_is_loaded_once_per_session_with_one_log_line(caplog):
    sc = _StandIn()
    with caplog.at_level(logging.INFO, logger=LOGGER):
        handles = [jvm_loader.bridge(sc) for _ in range(3)]
    assert all(h is handles[0] for h in handles) and handles[0].loaded == "on demand"
    assert len(sc.urls) == 1 and len(sc.jars) == 1          # driver and executors, once
    assert len(_lines(caplog, "loaded the bridge jar")) == 1
    assert jvm_loader.bridge_has(sc, "MapStats") and jvm_loader.bridge_has(sc, RECORDER_CLASS)
    other = _StandIn()                                      # a new session: its own line
    with caplog.at_level(logging.INFO, logger=LOGGER):
        jvm_loader.bridge(other)
    assert len(_lines(caplog, "loaded the bridge jar")) == 2


def test_a_session_with_the_jar_at_launch_loads_nothing_and_says_nothing(caplog):
    sc = _StandIn()
    sc.urls.append("file:/launch/sparkbalance-bridge.jar")  # spark.jars at launch
    with caplog.at_level(logging.INFO, logger=LOGGER):
        assert jvm_loader.bridge(sc).loaded == "at launch"
    assert sc.jars == [] and not [r for r in caplog.records if r.name == LOGGER]


def test_a_refused_jar_leaves_the_python_paths_with_one_warning(caplog):
    sc = _StandIn(refuse=True)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        assert [jvm_loader.bridge(sc) for _ in range(3)] == [None] * 3
    warned = _lines(caplog, "could not load the bridge jar")
    assert len(warned) == 1 and warned[0].levelno == logging.WARNING
    assert "PermissionError" in warned[0].getMessage()
    assert "sparkbalance.configure" in warned[0].getMessage()
    assert not jvm_loader.bridge_has(sc, "MapStats")
    with pytest.raises(RuntimeError, match=r"MapStats is not loadable.*sparkbalance.configure"):
        jvm_loader.bridge_class(sc, "MapStats")


def test_no_jar_in_the_installation_warns_once(monkeypatch, caplog):
    monkeypatch.setattr(jvm_loader, "bridge_jar_path", lambda: None)
    sc = _StandIn()
    with caplog.at_level(logging.INFO, logger=LOGGER):
        assert jvm_loader.bridge(sc) is None and jvm_loader.bridge(sc) is None
    assert len(_lines(caplog, "no bridge jar")) == 1 and sc.urls == []


def test_no_live_context_has_no_bridge():
    assert jvm_loader.bridge(None) is None and jvm_loader.bridge(42) is None
    assert not jvm_loader.bridge_has(None, "MapStats")
    with pytest.raises(RuntimeError, match="sparkbalance.configure"):
        jvm_loader.bridge_class(None, "MapStats")


def test_executor_probe_answers_here_and_the_zip_carries_the_package():
    scope: dict = {"__name__": "sparkbalance_executor_probe"}
    exec(executor_python.PROBE_SOURCE, scope)
    assert scope["probe"]() == [True] * (1 + len(executor_python._DEPENDENCIES))
    assert executor_python.ensure_executor_python(None) == "no context"
    path = executor_python._shipped_zip()
    assert path.rsplit("/", 1)[1].startswith("sparkbalance-") and path.endswith(".zip")
    assert "sparkbalance/spark/session/jvm_loader.py" in zipfile.ZipFile(path).namelist()
    assert executor_python._shipped_zip() == path             # built once per process


def test_the_off_switch_leaves_the_python_paths_with_one_line(monkeypatch, caplog):
    sc = _StandIn()
    monkeypatch.setenv(jvm_loader.BRIDGE_SWITCH_ENV, "off")
    with caplog.at_level(logging.INFO, logger=LOGGER):
        assert [jvm_loader.bridge(sc) for _ in range(3)] == [None] * 3
    lines = [r for r in caplog.records if r.name == LOGGER]
    assert len(lines) == 1 and "switched off" in lines[0].getMessage()
    assert "bounded sample" in lines[0].getMessage() and sc.urls == []
    monkeypatch.delenv(jvm_loader.BRIDGE_SWITCH_ENV)
    assert jvm_loader.bridge(sc).loaded == "on demand"      # switched back on: loads


def test_the_launch_conf_switches_the_bridge_off(caplog):
    sc = _StandIn()
    sc._conf = SimpleNamespace(get=lambda key, default: "off" if key == jvm_loader.CONF_BRIDGE
                               else default)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        assert jvm_loader.bridge(sc) is None and jvm_loader.bridge(sc) is None
    assert len(_lines(caplog, "spark.sparkbalance.bridge=off")) == 1 and sc.urls == []
