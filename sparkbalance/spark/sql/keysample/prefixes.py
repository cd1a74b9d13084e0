"""Counting the first rows of chosen partitions of a key projection: the reads the key sample
(:mod:`sparkbalance.spark.sql.keysample`) is made of.

The projection's columns are the key columns, then each key's partition under Spark's hash
placement. :class:`PrefixReader` reads partitions of it (or of its input coalesced to the
sample's runs), each cut to its first rows, and counts (key, home) pairs, in one of two
ways:

* **in the JVM**, when the session has the bridge (brought in on first use) and every key
  column is an integer, string, binary or boolean: one py4j call
  (``io.sparkbalance.bridge.KeyLook.counts``) runs the job over the projection's own query
  execution (planned once, when the sample read its plan; no second query for the
  per-partition limit), counts each task's prefix there and returns the distinct pairs with
  their counts as one byte array: no socket server, no pickled rows, no Row per sampled row,
  a few driver round trips instead of ~30;
* **over PySpark's socket** otherwise (no bridge, other key types): Spark's per-partition
  ``LocalLimit`` of the projection, planned once per cut, run by ``PythonRDD.runJob`` over
  the chosen partitions, the pickled rows read as plain tuples.

Both read the same rows: a task's first ``per`` rows of its partition (a coalesced run reads
its input partitions in order), one task per chosen partition, in one job.
"""
from __future__ import annotations

import io
import pickle
import struct
from collections import Counter
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

__all__ = ["PrefixReader", "key_look", "py_value", "decode_counts", "KEY_LOOK_CLASS",
           "FIELD_SEP"]

#: The bridge class counting prefixes in the JVM.
KEY_LOOK_CLASS = "io.sparkbalance.bridge.KeyLook"
#: The bridge class stamping what a planned query reads (its files and their sizes).
INPUT_STAMP_CLASS = "io.sparkbalance.bridge.InputStamp"
#: Between the expressions of one ``KeyLook.projection`` string (none of them holds it).
FIELD_SEP = "\u241e"
#: Version of KeyLook's encoding read here (``KeyLook.protocol()``).
KEY_LOOK_PROTOCOL = 1
#: Partition-id lists kept per JVM at most, over 4 (the sample's runs: look, spread, both).
_MAX_PARTITION_RUNS = 16


class PrefixReader:
    """(key, home) counts of the first rows of chosen partitions of the key projection
    ``keys`` (``width`` key columns, then the home), whose input has ``inputs`` partitions
    and whose spread reads ``tasks`` runs of them (see the module docstring); ``group``:
    the job group and description its jobs run in (set in the JVM on the JVM path: no
    round trips of its own).

    Examples
    --------
    >>> reader = PrefixReader(keys, 1, inputs=8, tasks=8)         # doctest: +SKIP
    >>> reader.counts(False, 1_000, [0])                          # doctest: +SKIP
    Counter({(3, 5): 120, ...})
    """

    def __init__(self, keys: "DataFrame", width: int, inputs: int, tasks: int,
                 group: tuple[str, str] | None = None) -> None:
        self._keys = keys
        self._group = group
        self._width = int(width)
        self._inputs = int(inputs)
        self._tasks = int(tasks)
        self._look = _key_look(keys)
        self._planned: dict[tuple[bool, int], Any] = {}

    @property
    def in_jvm(self) -> bool:
        """Whether the reads may run in the JVM (the bridge's KeyLook is at hand)."""
        return self._look is not None

    def counts(self, runs: bool, per: int, parts: Sequence[int]) -> Counter:
        """Counts over partitions ``parts`` (consecutive ids) of the projection coalesced to
        the sample's runs (``runs``) or of the projection as it is, each cut to its first
        ``per`` rows: one job of one task per partition."""
        parts = list(parts)
        if parts != list(range(parts[0], parts[0] + len(parts))):
            raise ValueError(f"parts={parts!r}; expected consecutive partition ids")
        if self._look is not None:
            from sparkbalance.spark.session.jobs import job_description
            group, description = self._group or (None, None)
            data = self._look.counts(self._keys._jdf, self._width,
                                     self._tasks if runs else self._inputs, int(per),
                                     parts[0], parts[-1] + 1, group,
                                     None if group is None else job_description(description))
            if data is not None:
                return decode_counts(data, self._width)
            self._look = None             # a key type the encoding does not hold
        jrdd = self._planned.get((runs, int(per)))
        if jrdd is None:
            df = (self._keys.coalesce(self._tasks) if runs and self._inputs > self._tasks
                  else self._keys)
            jrdd = self._planned[(runs, int(per))] = _limited(df, int(per))
        sc = self._keys.sparkSession.sparkContext
        if self._group is None:
            return _prefixes(sc, jrdd, parts, self._width)
        from sparkbalance.spark.session.jobs import sparkbalance_job_group
        with sparkbalance_job_group(sc, *self._group):
            return _prefixes(sc, jrdd, parts, self._width)


def _key_look(keys: "DataFrame") -> Any:
    """The bridge's ``KeyLook`` in ``keys``'s session (brought in if it can be), or None:
    an object whose ``counts`` is the static method, resolved once per bridge (py4j resolves
    a static member in a round trip of its own)."""
    from sparkbalance.spark.session.jvm_loader import bridge
    b = bridge(keys.sparkSession)
    if b is None or not b.has(KEY_LOOK_CLASS):
        return None
    got = _LOOKS.get(id(b))
    if got is None or got[0] is not b:
        stamp = b.cls(INPUT_STAMP_CLASS).planned if b.has(INPUT_STAMP_CLASS) else None
        got = _LOOKS[id(b)] = (b, _Look(b.cls(KEY_LOOK_CLASS), stamp))
    return got[1]


def key_look(df: "DataFrame") -> Any:
    """The bridge's ``KeyLook`` in ``df``'s session, its static methods resolved
    (``projection``, ``planText``, ``partitions``, ``counts``), or None without the bridge
    (Spark Connect, no jar)."""
    return _key_look(df)


class _Look:
    """KeyLook's static methods, each resolved once, and ``InputStamp.planned`` (the plan's
    text and the stamp of what it reads, in one call; None with a jar that lacks the
    class: ``planText`` then, and no sample is used again)."""

    def __init__(self, cls: Any, stamp: Any = None) -> None:
        self.stamp = stamp
        self.counts = cls.counts
        self.projection = cls.projection
        self.planText = cls.planText
        self.partitions = cls.partitions


#: id(bridge) -> (that bridge, its resolved KeyLook).
_LOOKS: dict[int, tuple[Any, _Look]] = {}


def decode_counts(data: bytes, width: int) -> Counter:
    """KeyLook's byte array as (key, home) counts: one key column a bare value, more a
    tuple (the values as :func:`py_value` gives them: int, str, bytes, bool).

    Examples
    --------
    >>> import struct
    >>> one = struct.pack(">ii", 3, 1) + struct.pack(">iib", 3, 5, 2) + struct.pack(">i", 1) + b"a"
    >>> decode_counts(one, 1)
    Counter({('a', 5): 3})
    """
    read, distinct = struct.unpack_from(">ii", data, 0)
    pos = 8
    got: Counter = Counter()
    unpack = struct.unpack_from
    for _ in range(distinct):
        count, home = unpack(">ii", data, pos)
        pos += 8
        values = []
        for _ in range(width):
            tag = data[pos]
            pos += 1
            if tag == 1:
                values.append(unpack(">q", data, pos)[0])
                pos += 8
            elif tag == 4:
                values.append(data[pos] != 0)
                pos += 1
            else:
                size = unpack(">i", data, pos)[0]
                raw = bytes(data[pos + 4:pos + 4 + size])
                pos += 4 + size
                values.append(raw.decode("utf-8") if tag == 2 else raw)
        got[(values[0] if width == 1 else tuple(values), home)] += count
    if sum(got.values()) != read:  # pragma: no cover - a malformed array
        raise ValueError(f"KeyLook counted {read} rows, its pairs hold {sum(got.values())}")
    return got


def py_value(v: Any) -> Any:
    """A collected key value as a hashable Python key: ARRAY values come back as lists
    (tuples here, as the routing takes them), BINARY as bytearray (bytes).

    Examples
    --------
    >>> py_value([1, bytearray(b"x")]), py_value("a")
    ((1, b'x'), 'a')
    """
    if isinstance(v, bytearray):
        return bytes(v)
    if isinstance(v, list):
        return tuple(py_value(x) for x in v)
    if isinstance(v, tuple) and any(isinstance(x, (list, bytearray, tuple)) for x in v):
        return tuple(py_value(x) for x in v)  # a struct (Row) holding arrays
    return v



def _pairs(rows: Any, width: int) -> Iterator[tuple]:
    """(key, home) of each sampled row (a Row or a plain tuple): one column a bare value,
    more a tuple."""
    if width == 1:
        return ((py_value(r[0]), int(r[1])) for r in rows)
    return ((tuple(py_value(v) for v in r[:width]), int(r[width])) for r in rows)


def _tuple(*values: Any) -> tuple:
    return values


class _RowTuples(pickle.Unpickler):
    """An unpickler of the JVM's pickled rows that builds plain tuples where PySpark would
    build a ``Row`` holding the same values (a row type none of whose fields needs
    converting: integers, strings, booleans, binary); other rows come as PySpark builds
    them. A Row per sampled row was most of the driver's time over the sample."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "pyspark.sql.types" and name == "_create_row_inbound_converter":
            return _inbound
        return super().find_class(module, name)


def _inbound(data_type: Any) -> Callable:
    if getattr(data_type, "_needSerializeAnyField", True):
        from pyspark.sql.types import _create_row_inbound_converter
        return _create_row_inbound_converter(data_type)
    return _tuple


def _tuple_serializer() -> Any:
    """PySpark's batched pickle serializer, reading rows with :class:`_RowTuples`."""
    from pyspark.serializers import BatchedSerializer, CPickleSerializer

    class _Tuples(CPickleSerializer):
        def loads(self, obj: bytes, encoding: str = "bytes") -> Any:
            return _RowTuples(io.BytesIO(obj), encoding=encoding).load()
    return BatchedSerializer(_Tuples())


def _limited(df: "DataFrame", per: int) -> Any:
    """The JVM's pickled rows of ``df``, each partition cut to its first ``per`` rows (Spark's
    per-partition limit: the scan stops there); planned once, run by :func:`_prefixes`."""
    return _local_limit(df, per)._jdf.javaToPython()


def _prefixes(sc: Any, jrdd: Any, parts: list[int], width: int) -> Counter:
    """(key, home) counts of partitions ``parts`` of ``jrdd`` (:func:`_limited`): one job of
    one task per partition, in the JVM (``PythonRDD.runJob`` over those partitions only)."""
    from pyspark.rdd import _load_from_socket
    sock = sc._jvm.PythonRDD.runJob(sc._jsc.sc(), jrdd, _java_ints(sc, parts))
    stream = _load_from_socket(sock, _tuple_serializer())
    if hasattr(stream, "__enter__"):     # PySpark 4: a context manager closing the socket
        with stream as rows:
            return Counter(_pairs(rows, width))
    return Counter(_pairs(stream, width))  # PySpark 3.5: the rows


def _java_ints(sc: Any, parts: list[int]) -> Any:
    """``parts`` as a JVM ``ArrayList<Integer>``, built once per JVM and kept (``runJob``
    only reads it; py4j's conversion costs a round trip per element each time): a run
    ``a..b-1`` in four (``IntStream.range(a, b).boxed().collect(toList())``)."""
    jvm = sc._jvm
    key = (id(jvm), tuple(parts))
    got = _INT_LISTS.get(key)
    if got is not None and got[0] is jvm:
        return got[1]
    a = parts[0] if parts else 0
    if len(parts) > 2 and parts == list(range(a, a + len(parts))):
        streams_range, to_list = _jvm_classes(jvm)[1:]
        java = streams_range(a, a + len(parts)).boxed().collect(to_list())
    else:
        from py4j.java_collections import ListConverter
        java = ListConverter().convert(parts, sc._gateway._gateway_client)
    if len(_INT_LISTS) >= 4 * _MAX_PARTITION_RUNS:
        _INT_LISTS.clear()
    _INT_LISTS[key] = (jvm, java)
    return java


def _local_limit(df: "DataFrame", per: int) -> "DataFrame":
    """``df`` with each partition cut to its first ``per`` rows (Spark's ``LocalLimit``,
    the per-partition half of ``limit``, which the DataFrame API does not offer alone: it
    is taken from ``df.limit(per)``'s plan)."""
    from pyspark.sql import DataFrame
    local = df.limit(int(per))._jdf.queryExecution().logical().child()   # LocalLimit
    if local.nodeName() != "LocalLimit":  # pragma: no cover - not seen
        return df.limit(int(per))         # one prefix: still a sample
    jdf = _jvm_classes(df.sparkSession._jvm)[0].ofRows(df.sparkSession._jsparkSession, local)
    return DataFrame(jdf, df.sparkSession)


#: id(JVM view) -> (it, Spark's Dataset class, ``IntStream.range``, ``Collectors.toList``):
#: looked up once (each package of a class name and each static member py4j resolves is a
#: round trip of its own).
_CLASSES: dict[int, tuple[Any, Any, Any, Any]] = {}
#: (id(JVM view), partition ids) -> (that view, the ids as a JVM ArrayList) (:func:`_java_ints`).
_INT_LISTS: dict[tuple[int, tuple[int, ...]], tuple[Any, Any]] = {}


def _jvm_classes(jvm: Any) -> tuple[Any, Any, Any]:
    got = _CLASSES.get(id(jvm))
    if got is None or got[0] is not jvm:
        from py4j.java_gateway import JavaClass
        cls = jvm.org.apache.spark.sql.classic.Dataset     # Spark 4
        if not isinstance(cls, JavaClass):                 # Spark 3.5: the sql package
            cls = jvm.org.apache.spark.sql.Dataset
        got = _CLASSES[id(jvm)] = (jvm, cls, jvm.java.util.stream.IntStream.range,
                                   jvm.java.util.stream.Collectors.toList)
    return got[1:]


