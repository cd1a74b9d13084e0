"""The Python side on first use: executors that cannot import sparkbalance get its zip.

Every sparkbalance job pickles sparkbalance objects (partition functions, routers, the
keyed state's merges) into its Python tasks, so an executor whose Python lacks the package
fails each task with a long trace ending ``No module named 'sparkbalance'``. On the first
sparkbalance operation of a session, :func:`ensure_executor_python` asks whether the
executors' Python can import it and, when it cannot but has the package's dependencies,
ships the package's own zip (:func:`sparkbalance.spark.session.submit.pyfiles_zip`) with
``SparkContext.addPyFile``, as ``spark-submit --py-files`` would. When the executors' Python
lacks the dependencies too (typically ``PYSPARK_PYTHON`` unset, so the workers run the
system ``python3`` instead of the driver's environment), a zip cannot help: one WARNING line
says what to set.

How the question is asked depends on the master:

* ``local[...]`` and ``local-cluster[...]``: the workers run on this machine, so the
  interpreter they will run (``sc.pythonExec``) is asked directly, in a subprocess with the
  ``PYTHONPATH`` they get (the JVM's environment and ``spark.executorEnv.PYTHONPATH``). No
  Spark job runs, so no job count of an operation changes.
* any other master: one task of one probe job runs the question on an executor. The probe is
  pickled by value (it references no sparkbalance module), so it runs where sparkbalance
  does not.

Examples
--------
>>> ensure_executor_python(spark)        # doctest: +SKIP
'importable'
"""
from __future__ import annotations

import atexit
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any

from sparkbalance.spark.session.bridge import spark_context
from sparkbalance.spark.session.memo import SessionMemo

__all__ = ["ensure_executor_python", "worker_imports", "PROBE_SOURCE"]

_LOG = logging.getLogger(__name__)
#: The packages the executors' Python needs besides sparkbalance (the zip does not carry
#: them): ``pyproject.toml``'s runtime dependencies that executors import.
_DEPENDENCIES = ("numpy", "cloudpickle")
#: The question, as Python source run by the workers' interpreter: which of sparkbalance and
#: its dependencies it finds (found, not imported: cheap, and no import side effects).
PROBE_SOURCE = (
    "def probe(_=None):\n"
    "    import importlib.util as u\n"
    "    return [u.find_spec(m) is not None for m in ('sparkbalance',) + %r]\n"
) % (_DEPENDENCIES,)

_MEMO = SessionMemo()


def ensure_executor_python(spark_or_sc: Any) -> str:
    """Make sure the executors can import sparkbalance; once per session.

    Returns
    -------
    str
        ``"importable"`` (nothing to do), ``"shipped"`` (the zip was added with
        ``addPyFile`` now or at launch), ``"unreachable"`` (the executors' Python lacks its
        dependencies or cannot be asked: one WARNING line said what to set) or ``"no
        context"`` (Spark Connect: the server's Python is the server's business).

    Examples
    --------
    >>> ensure_executor_python(None)
    'no context'
    """
    try:
        sc = spark_context(spark_or_sc)
    except Exception:  # noqa: BLE001 - Spark Connect refuses .sparkContext; a stopped context
        return "no context"
    return _MEMO.get(sc, lambda: _ensure(sc))


def _ensure(sc: Any) -> str:
    if any(os.path.basename(p).startswith("sparkbalance") for p in _includes(sc)):
        return "shipped"   # spark-submit --py-files <sparkbalance zip>, or shipped before
    try:
        found = worker_imports(sc)
    except Exception as exc:  # noqa: BLE001 - a missing interpreter, a failed probe job
        _LOG.warning("sparkbalance: could not ask the executors' Python (%s) whether it "
                     "imports sparkbalance (%s: %s); if tasks fail with \"No module named "
                     "'sparkbalance'\", install it there or run spark-submit with the "
                     "arguments of `python -m sparkbalance submit-args`",
                     sc.pythonExec, type(exc).__name__, (str(exc).splitlines() or [''])[0])
        return "unreachable"
    has_package, has_deps = found[0], all(found[1:])
    if has_package:
        return "importable"
    if not has_deps:
        missing = [m for m, ok in zip(_DEPENDENCIES, found[1:]) if not ok]
        _LOG.warning("sparkbalance: the executors' Python (%s) has neither sparkbalance nor "
                     "%s; set PYSPARK_PYTHON=%s (or spark.pyspark.python) before the session "
                     "starts, or install sparkbalance where the executors run",
                     sc.pythonExec, " nor ".join(missing), sys.executable)
        return "unreachable"
    path = _shipped_zip()
    sc.addPyFile(path)
    _LOG.info("sparkbalance: the executors' Python (%s) does not import sparkbalance; "
              "shipped %s with SparkContext.addPyFile", sc.pythonExec, path)
    return "shipped"


_ZIP: list[str] = []


def _shipped_zip() -> str:
    """This process's zip of the package, built once in a folder of its own: a shared path
    (``submit.default_zip_path``) could be rewritten meanwhile by another installation of
    the same version, and Spark serves the file as it is when an executor fetches it."""
    if not _ZIP:
        from sparkbalance import __version__
        from sparkbalance.spark.session.submit import pyfiles_zip
        folder = tempfile.mkdtemp(prefix="sparkbalance-ship-")
        atexit.register(shutil.rmtree, folder, True)
        _ZIP.append(pyfiles_zip(os.path.join(folder, f"sparkbalance-{__version__}-pyfiles.zip")))
    return _ZIP[0]


def _includes(sc: Any) -> list[str]:
    """The Python files shipped to the executors (``--py-files``, ``addPyFile``)."""
    shipped = list(getattr(sc, "_python_includes", None) or [])
    shipped += [p for p in str(sc.getConf().get("spark.submit.pyFiles", "") or "").split(",")
                if p]
    return shipped


def worker_imports(sc: Any) -> list[bool]:
    """Which of sparkbalance and its dependencies the executors' Python finds.

    On ``local`` and ``local-cluster`` masters asks ``sc.pythonExec`` in a subprocess with
    the workers' ``PYTHONPATH`` and working directory; elsewhere runs a one-task probe job.

    Examples
    --------
    >>> worker_imports(spark)          # doctest: +SKIP
    [True, True, True]
    """
    if str(sc.master).startswith("local"):
        return _local_probe(sc)
    return _job_probe(sc)


def _local_probe(sc: Any) -> list[bool]:
    jvm = sc._jvm
    # A Python worker's PYTHONPATH: spark.executorEnv's, then the JVM's environment
    # (PythonWorkerFactory merges both after PySpark's own paths).
    paths = [p for p in (getattr(sc, "environment", {}).get("PYTHONPATH"),
                         jvm.java.lang.System.getenv("PYTHONPATH")) if p]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths)
    # local: the workers start in the driver JVM's directory (``python -m`` puts it on
    # sys.path); local-cluster: in an executor's work directory, which holds no package.
    cwd = (jvm.java.lang.System.getProperty("user.dir")
           if not str(sc.master).startswith("local-cluster") else tempfile.gettempdir())
    code = PROBE_SOURCE + "print(' '.join(str(int(x)) for x in probe()))\n"
    out = subprocess.run([sc.pythonExec, "-c", code], env=env, cwd=cwd, capture_output=True,
                         text=True, timeout=120, check=True).stdout.split()
    return [x == "1" for x in out]


def _job_probe(sc: Any) -> list[bool]:
    scope: dict[str, Any] = {"__name__": "sparkbalance_executor_probe"}
    exec(PROBE_SOURCE, scope)  # a module that is not importable: cloudpickle ships it by value
    old = sc.getLocalProperty("spark.job.description")
    sc.setLocalProperty("spark.job.description",
                        "sparkbalance: can the executors' Python import sparkbalance?")
    try:
        return sc.parallelize([0], 1).map(scope["probe"]).collect()[0]
    finally:
        sc.setLocalProperty("spark.job.description", old)
