"""configure(builder), the --py-files zip and submit-args, without starting Spark."""
from __future__ import annotations

import logging
import zipfile

import pytest

import sparkbalance
from sparkbalance.__main__ import main
from sparkbalance.spark.session import bridge
from sparkbalance.spark.session.bridge import PLUGIN_CLASS, configure, jar_has_class
from sparkbalance.spark.session.submit import pyfiles_zip, submit_args


@pytest.fixture(autouse=True)
def _no_running_jvm(monkeypatch):
    """These tests are about the builder alone: a session another test module started in
    this process (``make test`` runs the Spark tests first) must not lend its launch values."""
    monkeypatch.setattr(bridge, "_launch_default", lambda key: None)


class _Builder:
    def __init__(self, **options):
        self._options = dict(options)

    def config(self, key, value):
        self._options[key] = value
        return self


def _jar(path, *classes):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
        for c in classes:
            z.writestr(c.replace(".", "/") + ".class", b"\xca\xfe\xba\xbe")
    return path


def test_configure_merges_the_jar_and_the_plugin_with_the_users(monkeypatch, tmp_path):
    jar = _jar(tmp_path / "sparkbalance-bridge.jar", bridge.RECORDER_CLASS, PLUGIN_CLASS)
    monkeypatch.setenv("SPARKBALANCE_BRIDGE_JAR", str(jar))
    b = configure(_Builder(**{"spark.jars": "/opt/a.jar", "spark.plugins": "com.x.P"}))
    assert b._options["spark.jars"] == f"/opt/a.jar,{jar}"
    assert b._options["spark.plugins"] == f"com.x.P,{PLUGIN_CLASS}"
    again = configure(b)._options  # idempotent: each item once
    assert again["spark.jars"].count(str(jar)) == 1
    assert again["spark.plugins"].count(PLUGIN_CLASS) == 1


def test_configure_adds_no_plugin_the_jar_does_not_hold(monkeypatch, tmp_path):
    jar = _jar(tmp_path / "sparkbalance-bridge.jar", bridge.RECORDER_CLASS)
    monkeypatch.setenv("SPARKBALANCE_BRIDGE_JAR", str(jar))
    assert not jar_has_class(jar, PLUGIN_CLASS) and jar_has_class(jar, bridge.RECORDER_CLASS)
    assert configure(_Builder())._options == {"spark.jars": str(jar)}


def test_configure_without_a_jar_warns_and_changes_nothing(monkeypatch, tmp_path, caplog):
    monkeypatch.delenv("SPARKBALANCE_BRIDGE_JAR", raising=False)
    monkeypatch.setattr(bridge, "_PACKAGE_DIR", tmp_path / "sparkbalance")
    with caplog.at_level(logging.WARNING, logger="sparkbalance.spark.session.bridge"):
        assert configure(_Builder())._options == {}
    assert "jar not found" in caplog.text
    assert sparkbalance.bridge_jar() is None


def test_the_pyfiles_zip_holds_the_package_sources_only(tmp_path):
    path = pyfiles_zip(tmp_path / "sb.zip")
    names = zipfile.ZipFile(path).namelist()
    assert "sparkbalance/__init__.py" in names and "sparkbalance/spark/rdd/adapters.py" in names
    assert not any("__pycache__" in n or n.endswith((".pyc", ".jar")) for n in names)
    assert zipfile.ZipFile(pyfiles_zip(tmp_path / "b.zip")).read("sparkbalance/__init__.py") \
        == zipfile.ZipFile(path).read("sparkbalance/__init__.py")


def test_submit_args_name_the_zip_the_jar_and_the_plugin(monkeypatch, tmp_path, capsys):
    jar = _jar(tmp_path / "sparkbalance-bridge.jar", PLUGIN_CLASS)
    monkeypatch.setenv("SPARKBALANCE_BRIDGE_JAR", str(jar))
    zp = str(tmp_path / "sb.zip")
    assert submit_args(zp) == ["--py-files", zp, "--jars", str(jar),
                               "--conf", f"spark.plugins={PLUGIN_CLASS}"]
    assert main(["submit-args", "--zip", zp]) == 0
    assert capsys.readouterr().out.split() == submit_args(zp, build_zip=False)
