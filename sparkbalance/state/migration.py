"""Delta migration of the keyed state (seed 000 §4 Fig. 5 steps 3-7, in Spark terms).

Given the cached state (one block per physical partition) and a new layout ``F'``:

1. *moved* (Δ): entries with ``F'(k) != pid``, ``partitionBy(P', F')`` — the only
   shuffle, carrying exactly the moved keys' state — grouped into one block per partition
   and cached (the arrivals);
2. *stays*: ``keep k with F'(k) == pid`` — narrow, in place, and lazy;
3. ``state.zip(arrivals).map(stays ∪ arrivals)`` — a narrow ``ZippedPartitionsRDD2``: no
   second shuffle. Steps 2-3 are fused into the next pass over the blocks (the next
   batch's merge), so the migration never copies the stays.

Growing the physical partition count appends empty blocks with ``sc.union`` (a narrow
``UnionRDD``: positions are kept, only the partitioner is lost, which we never rely on).
The new layout (table version) is used for routing only after this RDD is materialised:
the stage boundary is the paper's pause/resume.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .blocks import block_summary, join_moved, moved_of, stays_of

__all__ = ["MigrationResult", "migrate", "full_repartition", "pad_blocks", "blocks_of",
           "one_block_serde"]


def one_block_serde(rdd: Any) -> Any:
    """``rdd`` serialised as one pickled element per batch.

    PySpark's ``zip`` re-serialises both sides (an extra unpickle + pickle pass over the
    whole state) unless they share a fixed batch size; every block RDD of the state uses
    ``BatchedSerializer(CPickleSerializer(), 1)`` so the zip runs straight on the cached
    bytes. Pipelined into the producing stage: no extra pass.
    """
    from pyspark.serializers import BatchedSerializer, CPickleSerializer
    return rdd._reserialize(BatchedSerializer(CPickleSerializer(), 1))


@dataclass(frozen=True)
class MigrationResult:
    rdd: Any                 # new state RDD (one block per partition)
    keys_moved: int
    bytes_moved: float       # Σ S(k) of the moved entries (what the shuffle carried)
    num_keys: int            # -1 when not counted
    state_bytes: float       # nan when not measured
    cached: Any = None       # the RDD holding cached data to release later


def blocks_of(pairs_rdd: Any, num_physical: int, fn: Any) -> Any:
    """Route ``(key, x)`` pairs with ``fn`` and group them into one dict per partition."""
    return one_block_serde(pairs_rdd.partitionBy(num_physical, fn)
                           .mapPartitions(lambda it: [dict(it)], preservesPartitioning=True))


def pad_blocks(sc: Any, rdd: Any, num_physical: int) -> Any:
    """``rdd`` (one block per partition) extended with empty blocks to ``num_physical``."""
    have = rdd.getNumPartitions()
    if have > num_physical:
        raise ValueError(f"cannot shrink {have} physical partitions to {num_physical} narrowly")
    if have == num_physical:
        return rdd
    empty = one_block_serde(sc.parallelize([], num_physical - have)
                            .mapPartitions(lambda it: [{}]))
    return sc.union([rdd, empty])


def _summaries(rdd: Any) -> tuple[int, float]:
    rows = rdd.mapPartitionsWithIndex(lambda pid, it: [block_summary(pid, b) for b in it]
                                      ).collect()
    if len(rows) != rdd.getNumPartitions():
        raise RuntimeError(f"state has {len(rows)} blocks for {rdd.getNumPartitions()} "
                           "partitions; expected exactly one block per partition")
    return sum(r[1] for r in rows), sum(r[2] for r in rows)


def migrate(sc: Any, state: Any, fn: Any, num_physical: int, storage_level: Any,
            expected_keys: int | None = None, candidates: frozenset | None = None
            ) -> MigrationResult:
    """Move only the entries whose partition under ``fn`` differs from where they are.

    One pass over the (cached) state extracts Δ on the map side; the shuffle carries only
    Δ; the arrivals are cached as one block per partition and materialised (this is the
    move, timed as ``migration_seconds``). The new state is the *lazy, narrow* view
    ``pad(state).zip(arrivals).map(stays ∪ arrivals)``: dropping the keys that left is
    fused into the next pass over the blocks (the next batch's merge, which rewrites every
    block anyway), so the stays are never copied or re-cached by the migration itself.
    Raises ``RuntimeError`` when the keys that left and the keys that arrived differ in
    number (a key lost or duplicated) — never silently.

    ``candidates``: the only keys whose partition can change (for a routing table with an
    unchanged n: the keys of the table delta), so executors look up |Δ| keys per block
    instead of routing every key; None routes every key (key groups, a new n).
    """
    out_acc = sc.accumulator(0)

    cands = None if candidates is None else list(candidates)

    def _moved(pid: int, it: Any) -> Any:
        for block in it:
            if cands is None or len(cands) > len(block):
                out = moved_of(pid, block, fn)
            else:
                out = [(k, block[k]) for k in cands if k in block and fn(k) != pid]
            out_acc.add(len(out))
            yield from out

    def _view(pid: int, it: Any) -> Any:
        for st, arr in it:
            if cands is None or len(cands) > len(st):
                st = stays_of(pid, st, fn)
            else:  # st is this task's own deserialised copy: drop the keys that left
                for k in cands:
                    if k in st and fn(k) != pid:
                        del st[k]
            yield join_moved(st, arr)

    arrived = blocks_of(state.mapPartitionsWithIndex(_moved), num_physical, fn)
    arrived.persist(storage_level)
    rows = arrived.mapPartitionsWithIndex(
        lambda pid, it: [block_summary(pid, b) for b in it]).collect()
    keys_in = sum(r[1] for r in rows)
    left = out_acc.value
    if keys_in != left:
        # Accumulators in a map stage may double count re-run tasks: recount exactly.
        left = state.mapPartitionsWithIndex(
            lambda pid, it: [len(moved_of(pid, b, fn)) for b in it]).sum()
    if keys_in != left:
        arrived.unpersist()
        raise RuntimeError(f"migration moved {left} keys out but {keys_in} arrived; "
                           "refusing the new layout (state kept as before)")
    view = one_block_serde(pad_blocks(sc, state, num_physical).zip(arrived)
                           .mapPartitionsWithIndex(_view))
    return MigrationResult(view, keys_in, float(sum(r[2] for r in rows)),
                           -1 if expected_keys is None else expected_keys, float("nan"),
                           arrived)


def full_repartition(sc: Any, state: Any, fn: Any, num_physical: int, storage_level: Any
                     ) -> MigrationResult:
    """Baseline: shuffle *every* entry by ``fn`` (what ``repartition`` of the state does)."""
    bytes_acc = sc.accumulator(0.0)
    count_acc = sc.accumulator(0)

    def _all(it: Any) -> Any:
        for block in it:
            count_acc.add(len(block))
            bytes_acc.add(float(sum(e[1] for e in block.values())))
            yield from block.items()

    new = blocks_of(state.mapPartitions(_all), num_physical, fn)
    new.persist(storage_level)
    num_keys, total = _summaries(new)
    return MigrationResult(new, int(count_acc.value), float(bytes_acc.value), num_keys, total,
                           new)
