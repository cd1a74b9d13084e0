"""Delta migration of the keyed state (seed 000 §4 Fig. 5 steps 3-7, in Spark terms).

Given the cached state (one block per physical partition) and a new layout ``F'``:

1. *stays*: ``state.mapPartitionsWithIndex(keep k with F'(k) == pid)`` — narrow, in place;
2. *moved* (Δ): the other entries, ``partitionBy(P', F')`` — the only shuffle, and it
   carries exactly the moved keys' state — then grouped back into one block per partition;
3. ``stays.zip(moved).map(join)`` — a narrow ``ZippedPartitionsRDD2``: no second shuffle.

Growing the physical partition count appends empty blocks with ``sc.union`` (a narrow
``UnionRDD``: positions are kept, only the partitioner is lost, which we never rely on).
The new layout (table version) is used for routing only after this RDD is materialised:
the stage boundary is the paper's pause/resume.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .blocks import block_summary, join_moved, moved_of, stays_of

__all__ = ["MigrationResult", "migrate", "full_repartition", "pad_blocks", "blocks_of"]


@dataclass(frozen=True)
class MigrationResult:
    rdd: Any                 # new state RDD (persisted, materialised)
    keys_moved: int
    bytes_moved: float       # Σ S(k) of the moved entries (what the shuffle carried)
    num_keys: int
    state_bytes: float


def blocks_of(pairs_rdd: Any, num_physical: int, fn: Any) -> Any:
    """Route ``(key, x)`` pairs with ``fn`` and group them into one dict per partition."""
    return (pairs_rdd.partitionBy(num_physical, fn)
            .mapPartitions(lambda it: [dict(it)], preservesPartitioning=True))


def pad_blocks(sc: Any, rdd: Any, num_physical: int) -> Any:
    """``rdd`` (one block per partition) extended with empty blocks to ``num_physical``."""
    have = rdd.getNumPartitions()
    if have > num_physical:
        raise ValueError(f"cannot shrink {have} physical partitions to {num_physical} narrowly")
    if have == num_physical:
        return rdd
    empty = sc.parallelize([], num_physical - have).mapPartitions(lambda it: [{}])
    return sc.union([rdd, empty])


def _summaries(rdd: Any) -> tuple[int, float]:
    rows = rdd.mapPartitionsWithIndex(lambda pid, it: [block_summary(pid, b) for b in it]
                                      ).collect()
    if len(rows) != rdd.getNumPartitions():
        raise RuntimeError(f"state has {len(rows)} blocks for {rdd.getNumPartitions()} "
                           "partitions; expected exactly one block per partition")
    return sum(r[1] for r in rows), sum(r[2] for r in rows)


def migrate(sc: Any, state: Any, fn: Any, num_physical: int, storage_level: Any,
            expected_keys: int | None = None) -> MigrationResult:
    """Move only the entries whose partition under ``fn`` differs from where they are.

    ``state`` must be cached (one dict per partition). Raises ``RuntimeError`` when the
    number of keys changes (a key lost or duplicated) — never silently.
    """
    moved_acc = sc.accumulator(0)
    bytes_acc = sc.accumulator(0.0)

    def _stays(pid: int, it: Any) -> Any:
        for block in it:
            yield stays_of(pid, block, fn)

    def _moved(pid: int, it: Any) -> Any:
        for block in it:
            out = moved_of(pid, block, fn)
            moved_acc.add(len(out))
            bytes_acc.add(float(sum(e[1] for _, e in out)))
            yield from out

    stays = pad_blocks(sc, state.mapPartitionsWithIndex(_stays), num_physical)
    arrived = blocks_of(state.mapPartitionsWithIndex(_moved), num_physical, fn)
    new = stays.zip(arrived).map(lambda p: join_moved(p[0], p[1]))
    new.persist(storage_level)
    num_keys, total = _summaries(new)
    if expected_keys is not None and num_keys != expected_keys:
        new.unpersist()
        raise RuntimeError(f"migration changed the number of keys from {expected_keys} to "
                           f"{num_keys}; refusing the new layout (state kept as before)")
    return MigrationResult(new, int(moved_acc.value), float(bytes_acc.value), num_keys, total)


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
    return MigrationResult(new, int(count_acc.value), float(bytes_acc.value), num_keys, total)
