"""Where checkpoints live: a local directory, or any Hadoop file system (HDFS, S3, GCS, ...).

A plain path (``"/data/ckpt"``, a :class:`pathlib.Path`) is a :class:`LocalStore`; a URI
with a scheme (``"hdfs://nn/ckpt"``, ``"s3a://bucket/ckpt"``, ``"file:///tmp/ckpt"``) is a
:class:`HadoopStore`, which goes through the driver JVM's Hadoop ``FileSystem`` (py4j),
with the session's Hadoop configuration (credentials, endpoints). The state itself is
written by the executors (``saveAsPickleFile``) to :meth:`uri` of the same store; on a
cluster use a shared file system: a local path would scatter the state over the
executors' own disks.

Operations: ``write_atomic`` (replace whole or not at all; ``durable=False``: without
the sync, for a file a later synced commit names and checks by its digest),
``create_exclusive`` (create
only when absent: the lease), ``rename`` (move aside, never over an existing name),
``sizes`` (the files of a sub-directory and their lengths: truncated state files),
``list``, ``remove``, ``read_bytes``. Failures are ``OSError`` naming the file.

Atomic commit (the manifest):

- local: temp file, ``fsync``, ``os.replace``;
- HDFS and other file systems with atomic rename: temp file, ``hsync``, then
  ``FileContext.rename(..., OVERWRITE)``;
- object stores (``s3a``, ``gs``, ``abfs``, ...), where rename is a copy: one ``create``
  with overwrite — an object becomes visible whole, when its writer closes, or not at all.
"""
from __future__ import annotations

import builtins
import os
import re
import shutil
from pathlib import Path
from typing import Any

__all__ = ["LocalStore", "HadoopStore", "store_for", "OBJECT_STORE_SCHEMES", "error_cause"]

#: Schemes whose rename is not atomic but whose single-object writes are.
OBJECT_STORE_SCHEMES = frozenset({"s3", "s3a", "s3n", "gs", "abfs", "abfss", "wasb", "wasbs",
                                  "oss", "cos", "cosn", "obs"})


class LocalStore:
    """A checkpoint directory on the local (or a mounted shared) file system."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def mkdirs(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)

    def uri(self, name: str = "") -> str:
        return str(self.root / name) if name else str(self.root)

    display = uri

    def exists(self, name: str) -> bool:
        return (self.root / name).exists()

    def read_bytes(self, name: str) -> bytes:
        return (self.root / name).read_bytes()

    def write_atomic(self, name: str, data: bytes, durable: bool = True) -> None:
        path = self.root / name
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)

    def create_exclusive(self, name: str, data: bytes) -> bool:
        """Create ``name`` holding ``data`` only if it does not exist; False if it does.
        Written to a temporary file first and hard-linked (``link`` fails on an existing
        name, atomically), so a reader never sees a partial file."""
        path = self.root / name
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{id(data):x}.new")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        finally:
            tmp.unlink(missing_ok=True)
        return True

    def rename(self, src: str, dst: str) -> bool:
        """Move ``src`` to ``dst`` (a fresh name); False when ``src`` is gone."""
        try:
            os.rename(self.root / src, self.root / dst)
        except FileNotFoundError:
            return False
        return True

    def sizes(self, name: str) -> dict[str, int]:
        """``{file: bytes}`` of the visible files of sub-directory ``name`` ({} if absent)."""
        d = self.root / name
        if not d.is_dir():
            return {}
        return {p.name: p.stat().st_size for p in d.iterdir()
                if p.is_file() and not p.name.startswith((".", "_"))}

    def remove(self, name: str) -> None:
        p = self.root / name
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            try:
                p.unlink()
            except OSError:
                pass

    def list(self) -> builtins.list[str]:  # builtins: the method shadows `list`
        return sorted(p.name for p in self.root.iterdir()) if self.root.exists() else []

    def __repr__(self) -> str:
        return f"LocalStore({str(self.root)!r})"


class HadoopStore:
    """A checkpoint directory on a Hadoop file system, driven from the driver over py4j.

    Examples
    --------
    >>> store = HadoopStore(sc, "hdfs://namenode/ckpt")      # doctest: +SKIP
    """

    def __init__(self, sc: Any, uri: str) -> None:
        self.sc = sc
        jvm = sc._jvm
        self._jvm = jvm
        self._conf = sc._jsc.hadoopConfiguration()
        self.root_uri = uri.rstrip("/")
        self._root = jvm.org.apache.hadoop.fs.Path(self.root_uri)
        self.fs = self._root.getFileSystem(self._conf)
        self.scheme = str(self.fs.getUri().getScheme() or "").lower()

    def _path(self, name: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(self._root, name) if name else self._root

    def mkdirs(self) -> None:
        self.fs.mkdirs(self._root)

    def uri(self, name: str = "") -> str:
        return f"{self.root_uri}/{name}" if name else self.root_uri

    display = uri

    def exists(self, name: str) -> bool:
        return bool(self.fs.exists(self._path(name)))

    def read_bytes(self, name: str) -> bytes:
        try:
            stream = self.fs.open(self._path(name))
        except Exception as e:  # noqa: BLE001 - py4j wraps FileNotFoundException & co.
            raise OSError(_java_message(e)) from None
        try:
            return bytes(self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
        finally:
            stream.close()

    def _write(self, path: Any, data: bytes, durable: bool = True) -> None:
        out = self.fs.create(path, True)
        try:
            out.write(bytearray(data))
            if durable:
                out.hsync()        # durable on HDFS; a no-op flush elsewhere
        finally:
            out.close()

    def write_atomic(self, name: str, data: bytes, durable: bool = True) -> None:
        try:
            self._write_atomic(name, data, durable)
        except Exception as e:  # noqa: BLE001 - py4j wraps IOException & co.
            if isinstance(e, OSError):
                raise
            raise OSError(f"{self.uri(name)}: {_java_message(e)}") from None

    def _write_atomic(self, name: str, data: bytes, durable: bool = True) -> None:
        target = self._path(name)
        if self.scheme in OBJECT_STORE_SCHEMES:
            self._write(target, data)     # an object appears whole on close, or not at all
            return
        tmp = self._path(name + ".tmp")
        self._write(tmp, data, durable)
        jvm = self._jvm
        fc = jvm.org.apache.hadoop.fs.FileContext.getFileContext(self.fs.getUri(), self._conf)
        opts = self.sc._gateway.new_array(jvm.org.apache.hadoop.fs.Options.Rename, 1)
        opts[0] = jvm.org.apache.hadoop.fs.Options.Rename.OVERWRITE
        fc.rename(tmp, target, opts)

    def create_exclusive(self, name: str, data: bytes) -> bool:
        """Create ``name`` only if absent: a temporary file renamed without overwrite (HDFS
        ``rename`` refuses an existing target, atomically). Object stores have no atomic
        rename: ``create(overwrite=False)`` there (exclusive on stores with conditional
        writes; best effort elsewhere, the commit-time lease check is the fence)."""
        target = self._path(name)
        try:
            if self.scheme in OBJECT_STORE_SCHEMES:
                if self.fs.exists(target):
                    return False
                out = self.fs.create(target, False)
                try:
                    out.write(bytearray(data))
                finally:
                    out.close()
                return True
            tmp = self._path(f"{name}.{id(data):x}.new")
            self._write(tmp, data)
            ok = bool(self.fs.rename(tmp, target))
            if not ok:
                self.fs.delete(tmp, False)
            return ok
        except Exception as e:  # noqa: BLE001
            if "FileAlreadyExists" in str(e):
                return False
            raise OSError(f"{self.uri(name)}: {_java_message(e)}") from None

    def rename(self, src: str, dst: str) -> bool:
        try:
            return bool(self.fs.rename(self._path(src), self._path(dst)))
        except Exception as e:  # noqa: BLE001
            raise OSError(f"{self.uri(src)}: {_java_message(e)}") from None

    def sizes(self, name: str) -> dict[str, int]:
        p = self._path(name)
        if not self.fs.exists(p):
            return {}
        out = {}
        for st in self.fs.listStatus(p):
            n = str(st.getPath().getName())
            if st.isFile() and not n.startswith((".", "_")):
                out[n] = int(st.getLen())
        return out

    def remove(self, name: str) -> None:
        try:
            self.fs.delete(self._path(name), True)
        except Exception:  # noqa: BLE001 - best effort, like LocalStore
            pass

    def list(self) -> builtins.list[str]:  # builtins: the method shadows `list`
        if not self.fs.exists(self._root):
            return []
        return sorted(str(s.getPath().getName()) for s in self.fs.listStatus(self._root))

    def __repr__(self) -> str:
        return f"HadoopStore({self.root_uri!r})"


def _java_message(e: Exception) -> str:
    jex = getattr(e, "java_exception", None)
    if jex is not None:
        return f"{jex.getClass().getSimpleName()}: {jex.getMessage()}"
    return str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__


_PY_ERROR = re.compile(r"^\s*(?:[\w.]+\.)?(\w*(?:Error|Exception)): (.+)$", re.M)


def error_cause(e: BaseException, limit: int = 400) -> str:
    """The cause of ``e`` in one line: for a Spark job failure (py4j), the Python error
    raised in a task (its last ``XxxError: message`` line) or else the root Java cause
    (class and message) — not the last line of a Java stack trace.

    Examples
    --------
    >>> error_cause(ValueError("part-00001: checksum differs"))
    'ValueError: part-00001: checksum differs'
    """
    jex = getattr(e, "java_exception", None)
    if jex is None:
        text = str(e).strip()
        found = _PY_ERROR.findall(text) if "Traceback (most recent call last)" in text else []
        if found:
            name, msg = found[-1]
            return f"{name}: {msg.strip()}"[:limit]
        return (f"{type(e).__name__}: {text.splitlines()[0] if text else ''}")[:limit]
    chain = []
    seen = 0
    while jex is not None and seen < 20:
        chain.append((str(jex.getClass().getSimpleName()), str(jex.getMessage() or "")))
        jex, seen = jex.getCause(), seen + 1
    for cls, msg in chain:
        if cls == "PythonException" or "Traceback (most recent call last)" in msg:
            found = [f for f in _PY_ERROR.findall(msg) if f[0] != "PythonException"]
            if found:
                name, text = found[-1]
                return f"{name}: {text.strip()}"[:limit]
    cls, msg = chain[-1]
    first = msg.strip().splitlines()[0] if msg.strip() else ""
    return f"{cls}: {first}"[:limit]


def _has_scheme(s: str) -> bool:
    head, sep, _ = s.partition("://")
    return bool(sep) and head.replace("+", "").replace("-", "").replace(".", "").isalnum()


def store_for(sc: Any, directory: str | Path | Any) -> LocalStore | HadoopStore:
    """The store of ``directory``: a store as is, a URI with a scheme → Hadoop, else local.

    Examples
    --------
    >>> store_for(None, "/tmp/ckpt")
    LocalStore('/tmp/ckpt')
    """
    if isinstance(directory, (LocalStore, HadoopStore)):
        return directory
    if isinstance(directory, Path):
        return LocalStore(directory)
    if not isinstance(directory, str) or not directory:
        raise TypeError(f"checkpoint_dir={directory!r}; expected a path or a URI such as "
                        "'hdfs://namenode/dir' or 's3a://bucket/dir'")
    if _has_scheme(directory):
        if sc is None:
            raise ValueError(f"checkpoint_dir={directory!r} is a Hadoop URI; it needs a "
                             "SparkContext")
        return HadoopStore(sc, directory)
    return LocalStore(directory)
