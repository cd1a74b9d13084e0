"""Shipping sparkbalance to a cluster: the ``--py-files`` zip and the ``spark-submit`` arguments.

Executors import PySpark code from ``.zip``/``.egg``/``.py`` files on ``--py-files`` only (a
wheel there is not put on their path), so :func:`pyfiles_zip` zips the installed package's
Python sources; :func:`submit_args` adds the bridge jar (``--jars``) and, when the jar holds
it, the plugin (``--conf spark.plugins=...``). ``python -m sparkbalance submit-args`` prints
them for this installation.

Examples
--------
>>> args = submit_args(zip_path="/tmp/sb.zip")        # doctest: +SKIP
>>> " ".join(args)                                    # doctest: +SKIP
'--py-files /tmp/sb.zip --jars /.../sparkbalance-bridge.jar --conf spark.plugins=...'
"""
from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path

from sparkbalance import __version__
from sparkbalance.spark.session.bridge import PLUGIN_CLASS, bridge_jar, jar_has_class

__all__ = ["pyfiles_zip", "default_zip_path", "submit_args"]

_PACKAGE_DIR = Path(__file__).resolve().parents[2]  # .../sparkbalance
#: Suffixes of the package files the zip carries (code and small package data; no jar:
#: the JVM gets it from --jars).
_SHIPPED = (".py", ".json", ".txt", ".typed")


def default_zip_path() -> str:
    """Where :func:`submit_args` writes the zip when not told: a per-user temp folder."""
    return os.path.join(tempfile.gettempdir(), f"sparkbalance-{__version__}-pyfiles.zip")


def pyfiles_zip(out: str | os.PathLike[str] | None = None) -> str:
    """Zip the ``sparkbalance`` package for ``spark-submit --py-files``; returns the path.

    The zip holds ``sparkbalance/...`` at its root (the layout executors import from), the
    Python files only, in a fixed order with fixed dates, so the same sources give the same
    bytes. Written to a temporary name and renamed, so a running job never reads half a zip.

    Parameters
    ----------
    out : destination (default :func:`default_zip_path`).

    Examples
    --------
    >>> import zipfile
    >>> path = pyfiles_zip(tempfile.mkdtemp() + "/sb.zip")
    >>> "sparkbalance/__init__.py" in zipfile.ZipFile(path).namelist()
    True
    """
    out = Path(out if out is not None else default_zip_path())
    out.parent.mkdir(parents=True, exist_ok=True)
    files = sorted(p for p in _PACKAGE_DIR.rglob("*")
                   if p.is_file() and p.suffix in _SHIPPED and "__pycache__" not in p.parts)
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for p in files:
            arc = "sparkbalance/" + p.relative_to(_PACKAGE_DIR).as_posix()
            info = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, p.read_bytes())
    os.replace(tmp, out)
    return str(out)


def submit_args(zip_path: str | os.PathLike[str] | None = None, *,
                build_zip: bool = True) -> list[str]:
    """The ``spark-submit`` arguments that ship this installation to a cluster.

    ``--py-files <zip>`` (built by :func:`pyfiles_zip` unless ``build_zip=False``), then
    ``--jars <bridge jar>`` and ``--conf spark.plugins=<plugin>`` when there is a jar (and
    it holds the plugin). Without a jar only ``--py-files`` is given: the Python fallbacks
    then run.

    Examples
    --------
    >>> args = submit_args(tempfile.mkdtemp() + "/sb.zip")
    >>> args[0]
    '--py-files'
    """
    zip_path = str(zip_path if zip_path is not None else default_zip_path())
    if build_zip:
        zip_path = pyfiles_zip(zip_path)
    args = ["--py-files", zip_path]
    jar = bridge_jar()
    if jar is not None:
        args += ["--jars", jar]
        if jar_has_class(jar, PLUGIN_CLASS):
            args += ["--conf", f"spark.plugins={PLUGIN_CLASS}"]
    return args
