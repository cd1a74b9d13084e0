"""Frame files of a checkpoint: written with a checksum per part file, read back verified.

A frame RDD (state frames, or a batch's outputs frames) is written by the executors as
``(pid, frame)`` pairs (``saveAsPickleFile``: ``part-<pid>`` per partition). While a task
writes partition ``pid`` it computes the partition's **digest** — sha256 over the sorted
sha256 of its frames (independent of the order the frames are read back in) — and its
frame count, sent to the driver with the task's result (an accumulator: a retried or
failed task's values are not merged twice, and the digest of a partition is the same on
every attempt). The driver then lists the part files' lengths. The manifest records, per
part file, ``[bytes, digest, frames]``.

Reading back checks before any job that every part file is there with its recorded length
(a truncated file is named, instead of a Java ``EOFException`` deep in a task), then, per
partition, the digest of the frames read against the manifest's before a single frame is
passed on: a changed byte is a :class:`ValueError` naming the part file (wrapped in a
``CheckpointError`` by the caller), never accepted state.
"""
from __future__ import annotations

import hashlib
from typing import Any, Callable, Iterable

from pyspark.accumulators import AccumulatorParam

from sparkbalance.state.frames.rdds import as_frames, built_rdd, frame_ops

__all__ = ["frames_digest", "part_name", "write_frames", "write_selected", "check_files",
           "read_frames", "read_parts", "FileTable"]

#: ``{part file: [bytes, digest, frames]}`` as recorded in the manifest.
FileTable = dict


def part_name(pid: int) -> str:
    """The part file Hadoop's output committer writes for partition ``pid``.

    Examples
    --------
    >>> part_name(3), part_name(123456)
    ('part-00003', 'part-123456')
    """
    return f"part-{pid:05d}"


def frames_digest(frames: Iterable[bytes]) -> tuple[str, int]:
    """Order-independent digest of a partition's frames and their number.

    Examples
    --------
    >>> frames_digest([b"a", b"b"]) == frames_digest([b"b", b"a"])
    True
    >>> frames_digest([b"a", b"b"]) == frames_digest([b"a", b"c"])
    False
    """
    return _combine([hashlib.sha256(f).digest() for f in frames])


def _combine(each: list[bytes]) -> tuple[str, int]:
    h = hashlib.sha256()
    for d in sorted(each):
        h.update(d)
    return h.hexdigest(), len(each)


class _ListParam(AccumulatorParam):
    def zero(self, value: list) -> list:
        return []

    def addInPlace(self, a: list, b: list) -> list:
        a.extend(b)
        return a


def write_frames(store: Any, name: str, rdd: Any) -> FileTable:
    """Write the frame RDD ``rdd`` to ``store``'s sub-directory ``name``; return its file
    table. ``OSError`` when the files are not all there afterwards; a Spark job failure
    propagates (the caller names the directory).

    Examples
    --------
    >>> write_frames(store, "state-00000004-1a2b3c4d", state.rdd)   # doctest: +SKIP
    {'part-00000': [1234, '9f86d0...', 17], ...}
    """
    return _write(store, name, rdd, None, ())[0]


def write_selected(store: Any, name: str, rdd: Any, tag: int, collect: tuple[int, ...],
                   num_partitions: int | None = None
                   ) -> tuple[FileTable, list[list[bytes]]]:
    """As :func:`write_frames` for the frames of ``rdd`` whose first byte is ``tag``
    (those an ``ops.select(rdd, tag)`` keeps, in the same order), in the same job that
    brings the frames of the tags in ``collect`` back to the driver: ``(table, frames)``,
    ``frames[pid]`` partition ``pid``'s, in its order. One job where a select written and
    a select collected take two: the keyed state's commit writes the state frames while
    its merge job brings the statistics and outputs back. ``num_partitions``: ``rdd``'s,
    when the caller knows it (else read from the JVM, two round trips).

    Examples
    --------
    >>> table, back = write_selected(store, "state-00000004-1a2b3c4d", merged.rdd,
    ...                              fr.TAG_STATE, (fr.TAG_STATS,))    # doctest: +SKIP
    >>> len(back) == merged.rdd.getNumPartitions()                     # doctest: +SKIP
    True
    """
    return _write(store, name, rdd, tag, tuple(collect), num_partitions)


def _write(store: Any, name: str, rdd: Any, tag: int | None, collect: tuple[int, ...],
           num_partitions: int | None = None) -> tuple[FileTable, list[list[bytes]]]:
    sc = rdd.context
    from pyspark.serializers import NoOpSerializer
    ops = frame_ops(sc)
    if (tag is not None and ops.writes
            and isinstance(rdd._jrdd_deserializer, NoOpSerializer)):
        # the JVM writes them in the same format (bridge ``StateWrite``): the merge task
        # runs no second Python pass over its frames
        raw = ops.static("StateWrite", "write")(
            ops.passes.built(rdd), int(tag), bytes(bytearray(collect)), store.uri(name))
        return _table(store, name, rdd, num_partitions, _jvm_results(bytes(raw)))
    acc = sc.accumulator([], _ListParam())

    def _tagged(pid: int, it: Iterable[bytes]) -> Iterable[tuple[int, bytes]]:
        hashes, back = [], []
        for f in it:
            if tag is not None and f[0] != tag:
                if f[0] in collect:
                    back.append(bytes(f))
                continue
            hashes.append(hashlib.sha256(f).digest())
            yield pid, f
        digest, n = _combine(hashes)
        acc.add([(pid, digest, n, back)])

    # saveAsPickleFile's own steps (batches of 10 pickled pairs, saveAsObjectFile), the
    # Python pass built in one bridge call where it can be (frames.passes)
    from pyspark.serializers import BatchedSerializer, CPickleSerializer
    tagged = rdd.mapPartitionsWithIndex(_tagged)._reserialize(
        BatchedSerializer(CPickleSerializer(), 10))
    ops.passes.built(tagged).saveAsObjectFile(store.uri(name))
    return _table(store, name, rdd, num_partitions, acc.value)


def _jvm_results(raw: bytes) -> list[tuple[int, str, int, list[bytes]]]:
    """``StateWrite.write``'s per-partition records as ``(pid, digest, frames, back)``.

    Examples
    --------
    >>> import struct
    >>> rec = struct.pack(">ii", 1, 2) + b"ab" * 32 + struct.pack(">ii", 1, 3) + b"xyz"
    >>> _jvm_results(rec)
    [(1, 'abababababababababababababababababababababababababababababababab', 2, [b'xyz'])]
    """
    import struct
    out, at = [], 0
    while at < len(raw):
        pid, n = struct.unpack_from(">ii", raw, at)
        digest = raw[at + 8:at + 72].decode("ascii")
        (nb,) = struct.unpack_from(">i", raw, at + 72)
        at += 76
        back = []
        for _ in range(nb):
            (size,) = struct.unpack_from(">i", raw, at)
            back.append(raw[at + 4:at + 4 + size])
            at += 4 + size
        out.append((pid, digest, n, back))
    return out


def _table(store: Any, name: str, rdd: Any, num_partitions: int | None,
           results: list) -> tuple[FileTable, list[list[bytes]]]:
    """The file table and the frames brought back, from the writing tasks' ``(pid,
    digest, frames, back)`` records, checked against the files written."""
    digests: dict[int, tuple[str, int]] = {}
    frames: dict[int, list[bytes]] = {}
    for pid, digest, n, back in results:
        if digests.setdefault(pid, (digest, n)) != (digest, n):
            raise OSError(f"{store.display(name)}: two attempts of partition {pid} wrote "
                          "different frames (non-deterministic state)")
        frames.setdefault(pid, back)
    P = rdd.getNumPartitions() if num_partitions is None else int(num_partitions)
    if sorted(digests) != list(range(P)):
        raise OSError(f"{store.display(name)}: checksums of {len(digests)} of {P} partitions "
                      "came back from the writing tasks")
    if not store.exists(f"{name}/_SUCCESS"):
        raise OSError(f"{store.display(name)}: no _SUCCESS marker after the write")
    sizes = store.sizes(name)
    table: FileTable = {}
    for pid in range(P):
        part = part_name(pid)
        if part not in sizes:
            raise OSError(f"{store.display(name)}/{part}: missing after the write")
        table[part] = [sizes[part], digests[pid][0], digests[pid][1]]
    return table, [frames[pid] for pid in range(P)]


def check_files(store: Any, name: str, table: FileTable) -> None:
    """Every part file of ``table`` is in ``name`` with its recorded length; ``ValueError``
    names the first that is missing or of another length (truncated, or appended to)."""
    sizes = store.sizes(name)
    for part, (size, _, _) in sorted(table.items()):
        if part not in sizes:
            raise ValueError(f"{store.display(name)}/{part}: missing")
        if sizes[part] != size:
            raise ValueError(f"{store.display(name)}/{part}: {sizes[part]} bytes; the manifest "
                             f"records {size} (the file is truncated or was changed)")


def _verifier(store: Any, name: str, table: FileTable, num_physical: int,
              check: Callable[[int, bytes], Any] | None, kind: str = "state") -> Callable:
    """The per-partition check of frames read back: ``(pid, frames) -> frames``; a bad
    file is named as a ``kind`` file ("state" or "outputs")."""
    if len(table) != num_physical:
        raise ValueError(f"{store.display(name)}: the manifest lists {len(table)} part files; "
                         f"the layout has {num_physical} partitions")
    expected = {pid: tuple(table[part_name(pid)][1:]) for pid in range(num_physical)}
    where = store.display(name)

    def _verify(pid: int, it: Iterable[tuple[int, bytes]]) -> Iterable[bytes]:
        frames = []
        try:
            for p, f in it:
                if p != pid:
                    raise ValueError(f"{where}: a frame of partition {p} read as partition "
                                     f"{pid}")
                frames.append(f)
        except ValueError:
            raise
        except Exception as e:  # noqa: BLE001 - unpickling garbage: name the file
            raise ValueError(f"{where}/{part_name(pid)}: unreadable ({type(e).__name__}: "
                             f"{e}; the {kind} file is corrupt)") from e
        digest, n = frames_digest(frames)
        want_digest, want_n = expected[pid]
        if (digest, n) != (want_digest, want_n):
            raise ValueError(f"{where}/{part_name(pid)}: checksum {digest[:12]}... of {n} "
                             f"frames; the manifest records {want_digest[:12]}... of {want_n} "
                             f"(the {kind} file is corrupt)")
        if check is not None:
            for f in frames:
                check(pid, f)
        return frames

    return _verify


def read_frames(sc: Any, store: Any, name: str, table: FileTable, num_physical: int,
                check: Callable[[int, bytes], Any] | None = None, kind: str = "state") -> Any:
    """The frames of ``name`` as an RDD of ``num_physical`` partitions (lazy): partition
    ``pid`` holds the frames written from partition ``pid``, verified against ``table``'s
    digest (all frames of the partition before the first is passed on) and by
    ``check(pid, frame)``. A mismatch raises ``ValueError`` naming the part file in the
    job that reads it (as a ``kind`` file: "state" or "outputs"). Reads through a shuffle
    (any file split), so it needs no bridge."""
    verify = _verifier(store, name, table, num_physical, check, kind)
    return as_frames(sc.pickleFile(store.uri(name)).partitionBy(num_physical, lambda p: p)
                     .mapPartitionsWithIndex(verify, preservesPartitioning=True))


def read_parts(sc: Any, store: Any, name: str, table: FileTable, num_physical: int,
               check: Callable[[int, bytes], Any] | None = None, near: Any = None) -> Any:
    """As :func:`read_frames`, but partition ``pid`` reads part file ``pid`` alone (the
    bridge's ``StateFiles.parts``: a narrow read, no shuffle), so a lost partition costs
    one file. Needs the bridge jar. With ``near`` (a cached RDD of as many partitions, the
    state the files were written from), partition ``pid`` prefers the executors that hold
    ``near``'s block ``pid`` now: a task reading it runs where the state is cached.

    Examples
    --------
    >>> read_parts(sc, store, man.state_dir, man.state_files, 4).count()   # doctest: +SKIP
    17
    """
    from pyspark.serializers import BatchedSerializer, CPickleSerializer

    verify = _verifier(store, name, table, num_physical, check)
    parts = frame_ops(sc).static("StateFiles", "parts")
    jrdd = (parts(sc._jsc, store.uri(name), int(num_physical)) if near is None else
            parts(sc._jsc, store.uri(name), int(num_physical), near._jrdd))
    # saveAsPickleFile's batches (batchSize 10): one pickled list per JVM element
    raw = built_rdd(jrdd, sc, BatchedSerializer(CPickleSerializer(), 10))
    return as_frames(raw.mapPartitionsWithIndex(verify, preservesPartitioning=True))
