"""The user's sink, written once per micro-batch id.

A replayed batch (Spark re-runs the last batch after a restart when its commit was not
recorded) must not write twice. Each sink records the batch ids it completed:

- **files** (``parquet``, ``json``, ``csv``, ``orc``, ``text``): the batch is written to
  ``<path>/_sparkbalance_staging/<id>``, its files are renamed into ``<path>`` as
  ``part-b<id>-...``, then ``<path>/_sparkbalance_commits/<id>`` is created. A replay of a
  committed id writes nothing; of an uncommitted one it first deletes that id's files.
  Readers of ``<path>`` skip ``_``-prefixed folders, as they skip Spark's ``_spark_metadata``.
- **memory**: rows kept on the driver by batch id; the table ``queryName`` is a temp view
  over them (as Spark's memory sink).
- **foreachBatch**: the user's function with the batch's output DataFrame and the source
  batch id (at least once, as in Spark: a replayed id is passed again and the function
  is idempotent by id).
- **console**: ``show`` of each batch.
"""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["sink_for", "FileSink", "MemorySink", "ForeachBatchSink", "ConsoleSink",
           "FILE_FORMATS"]

FILE_FORMATS = ("parquet", "json", "csv", "orc", "text")


class ForeachBatchSink:
    """The user's ``foreachBatch(func)``."""

    def __init__(self, func: Callable[[Any, int], Any]) -> None:
        if not callable(func):
            raise TypeError(f"foreachBatch({func!r}); expected a callable (df, batch_id)")
        self.func = func

    def write(self, df: Any, batch_id: int) -> None:
        self.func(df, batch_id)


class ConsoleSink:
    """``format("console")``: prints each batch."""

    def __init__(self, options: dict) -> None:
        self.rows = int(options.get("numRows", 20))
        self.truncate = str(options.get("truncate", "true")).lower() == "true"

    def write(self, df: Any, batch_id: int) -> None:
        print(f"-------------------------------------------\nBatch: {batch_id}\n"
              "-------------------------------------------")
        df.show(self.rows, self.truncate)


class MemorySink:
    """``format("memory").queryName(name)``: a temp view over every batch's rows."""

    def __init__(self, spark: Any, name: str | None, schema: Any) -> None:
        if not name:
            raise ValueError("format('memory') needs queryName(name): the table to query")
        self.spark, self.name, self.schema = spark, name, schema
        self.batches: dict[int, list] = {}

    def write(self, df: Any, batch_id: int) -> None:
        if batch_id in self.batches:
            return
        self.batches[batch_id] = df.collect()
        rows = [r for b in sorted(self.batches) for r in self.batches[b]]
        self.spark.createDataFrame(rows, self.schema).createOrReplaceTempView(self.name)


class FileSink:
    """A file format at ``path``, exactly once per batch id (see module docstring)."""

    def __init__(self, spark: Any, fmt: str, path: str, options: dict,
                 partition_by: list | None) -> None:
        if not path:
            raise ValueError(f"format({fmt!r}) needs a path: start(path) or option('path', ...)")
        self.spark, self.fmt, self.path = spark, fmt, str(path)
        self.options, self.partition_by = dict(options), partition_by
        jvm = spark.sparkContext._jvm
        conf = spark.sparkContext._jsc.hadoopConfiguration()
        self._Path = jvm.org.apache.hadoop.fs.Path
        self._root = self._Path(self.path)
        self._fs = self._root.getFileSystem(conf)

    def _marker(self, batch_id: int) -> Any:
        return self._Path(self._root, f"_sparkbalance_commits/{batch_id}")

    def committed(self, batch_id: int) -> bool:
        """True when ``batch_id`` was written completely."""
        return bool(self._fs.exists(self._marker(batch_id)))

    def write(self, df: Any, batch_id: int) -> None:
        if self.committed(batch_id):
            return
        prefix = f"part-b{batch_id:010d}-"
        if self._fs.exists(self._root):
            for st in self._fs.listStatus(self._root):
                if st.getPath().getName().startswith(prefix):
                    self._fs.delete(st.getPath(), True)
        staging = self._Path(self._root, f"_sparkbalance_staging/{batch_id}")
        w = df.write.mode("overwrite").format(self.fmt).options(**self.options)
        if self.partition_by:
            w = w.partitionBy(*self.partition_by)
        w.save(staging.toString())
        self._move(staging, self._root, prefix)
        self._fs.delete(staging, True)
        self._fs.create(self._marker(batch_id), True).close()

    def _move(self, src: Any, dst: Any, prefix: str) -> None:
        # Partition folders (partitionBy) are kept: files move into the same folder names.
        for st in self._fs.listStatus(src):
            name = st.getPath().getName()
            if name.startswith("_") or name.startswith("."):
                continue
            if st.isDirectory():
                sub = self._Path(dst, name)
                self._fs.mkdirs(sub)
                self._move(st.getPath(), sub, prefix)
            else:
                self._fs.mkdirs(dst)
                self._fs.rename(st.getPath(), self._Path(dst, prefix + name))


def sink_for(spark: Any, fmt: str | None, path: str | None, options: dict,
             query_name: str | None, schema: Any, foreach_batch: Callable | None,
             partition_by: list | None) -> Any:
    """The sink the user's ``writeStream`` settings name.

    Examples
    --------
    >>> sink_for(None, "console", None, {}, None, None, None, None).rows
    20
    """
    if foreach_batch is not None:
        return ForeachBatchSink(foreach_batch)
    fmt = (fmt or spark.conf.get("spark.sql.sources.default", "parquet")).lower()
    if fmt == "memory":
        return MemorySink(spark, query_name, schema)
    if fmt == "console":
        return ConsoleSink(options)
    if fmt in FILE_FORMATS:
        return FileSink(spark, fmt, path or options.get("path"),
                        {k: v for k, v in options.items()
                         if k not in ("path", "checkpointLocation")}, partition_by)
    raise ValueError(f"format({fmt!r}); expected one of memory, console, foreachBatch, "
                     f"{', '.join(FILE_FORMATS)} (other sinks: use foreachBatch with a "
                     "write idempotent by batch id)")
