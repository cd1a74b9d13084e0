"""Where checkpoints live: a local directory, or any Hadoop file system (HDFS, S3, GCS, ...).

A plain path (``"/data/ckpt"``, a :class:`pathlib.Path`) is a :class:`LocalStore`; a URI
with a scheme (``"hdfs://nn/ckpt"``, ``"s3a://bucket/ckpt"``, ``"file:///tmp/ckpt"``) is a
:class:`HadoopStore`, which goes through the driver JVM's Hadoop ``FileSystem`` (py4j),
with the session's Hadoop configuration (credentials, endpoints). The state itself is
written by the executors (``saveAsPickleFile``) to :meth:`uri` of the same store; on a
cluster use a shared file system: a local path would scatter the state over the
executors' own disks.

Atomic commit (the manifest):

- local: temp file, ``fsync``, ``os.replace``;
- HDFS and other file systems with atomic rename: temp file, ``hsync``, then
  ``FileContext.rename(..., OVERWRITE)``;
- object stores (``s3a``, ``gs``, ``abfs``, ...), where rename is a copy: one ``create``
  with overwrite — an object becomes visible whole, when its writer closes, or not at all.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

__all__ = ["LocalStore", "HadoopStore", "store_for", "OBJECT_STORE_SCHEMES"]

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

    def write_atomic(self, name: str, data: bytes) -> None:
        path = self.root / name
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    def remove(self, name: str) -> None:
        p = self.root / name
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            try:
                p.unlink()
            except OSError:
                pass

    def list(self) -> list[str]:
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

    def _write(self, path: Any, data: bytes) -> None:
        out = self.fs.create(path, True)
        try:
            out.write(bytearray(data))
            out.hsync()            # durable on HDFS; a no-op flush elsewhere
        finally:
            out.close()

    def write_atomic(self, name: str, data: bytes) -> None:
        target = self._path(name)
        if self.scheme in OBJECT_STORE_SCHEMES:
            self._write(target, data)     # an object appears whole on close, or not at all
            return
        tmp = self._path(name + ".tmp")
        self._write(tmp, data)
        jvm = self._jvm
        fc = jvm.org.apache.hadoop.fs.FileContext.getFileContext(self.fs.getUri(), self._conf)
        opts = self.sc._gateway.new_array(jvm.org.apache.hadoop.fs.Options.Rename, 1)
        opts[0] = jvm.org.apache.hadoop.fs.Options.Rename.OVERWRITE
        fc.rename(tmp, target, opts)

    def remove(self, name: str) -> None:
        try:
            self.fs.delete(self._path(name), True)
        except Exception:  # noqa: BLE001 - best effort, like LocalStore
            pass

    def list(self) -> list[str]:
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
