"""Cache bookkeeping of the keyed-state operator: which RDDs hold cached state, when to
release them, and lineage truncation.

Batch ``i``'s merge reads batch ``i - 1``'s cached frames; once batch ``i`` is cached
(its statistics job ran) and migrated, batch ``i - 1``'s RDDs are released. Every
``truncate_every`` batches the merged RDD's lineage is cut: with the SparkContext's
checkpoint directory (``sc.setCheckpointDir``, the user's choice: we do not change global
settings) by ``RDD.checkpoint()`` — reliable, survives the loss of an executor; otherwise
by ``RDD.localCheckpoint()`` — fast, but a lost executor then loses cached blocks that
cannot be recomputed and the job fails with Spark's "checkpoint block not found" error (no
silent loss). A truncated RDD stays cached ("pinned") until the next truncation.

Lineage stays a chain: each batch's merged RDD reads the previous batch's state through
one narrow dependency, and the only other RDD it depends on beyond its own batch is the
state carried by a migration riding in its shuffle, whose lineage is cut as soon as the
batch has run (:meth:`BatchCache.cut`; kept cached until the next truncation makes it
unneeded). A lost executor or a late read of an old batch's outputs therefore recomputes
each batch since the last truncation at most once, never once per reference (a migration
that referred to the previous batch three times made it grow as 3^batches).

A local checkpoint has no copy but its cached blocks: once released, nothing computed from
it can be recomputed (Spark's ``CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND``). A batch's outputs
RDD, read after later batches, is recomputed from the chain since the truncation before
it, so the cut RDDs that chain reads are **lent** to it (:meth:`BatchCache.lend`): a
truncation that would release them keeps them cached until every outputs RDD that needs
them is garbage-collected. A reliable checkpoint (``sc.setCheckpointDir``) needs no loan.

With a ``checkpoint_dir`` committed every batch and the bridge jar, none of this is needed:
each commit rebases the state on its files (:func:`~sparkbalance.state.durability.checkpoint.rebased`),
so there is no truncation and the carried state is not cut; what stays to track is which
committed files an outputs RDD handed out may read (:class:`FileLoans`).
"""
from __future__ import annotations

import weakref
from typing import Any, Iterable

from sparkbalance.spark.session.memo import SessionMemo

__all__ = ["BatchCache", "FileLoans", "check_storage_level", "held_outputs", "persist"]

# per live context: the level's fields -> the JVM StorageLevel
_LEVELS = SessionMemo()


def persist(rdd: Any, level: Any) -> Any:
    """``rdd.persist(level)`` with the JVM's ``StorageLevel`` built once per context and
    level: PySpark builds it on every call (a class lookup, a constructor call and a
    reference to release, three round trips), and a batch persists two or three RDDs.

    Examples
    --------
    >>> persist(rdd, StorageLevel.MEMORY_AND_DISK).is_cached        # doctest: +SKIP
    True
    """
    sc = rdd.ctx
    fields = (level.useDisk, level.useMemory, level.useOffHeap, level.deserialized,
              level.replication)
    levels = _LEVELS.get(sc, dict)
    if fields not in levels:
        levels[fields] = sc._getJavaStorageLevel(level)
    rdd.is_cached = True
    rdd._jrdd.persist(levels[fields])
    return rdd


def check_storage_level(level: Any) -> Any:
    """The storage level the keyed state's frames are cached at: ``None`` gives
    ``MEMORY_AND_DISK``; anything else must be a :class:`pyspark.StorageLevel` that keeps
    the blocks (in memory or on disk) - checked before any job runs.

    A replicated level (``MEMORY_AND_DISK_2``) keeps a second copy of every cached block
    on another executor: a lost executor then loses no state block, so without a
    ``checkpoint_dir`` it costs no recomputation of the batches since the last truncation
    (a local checkpoint keeps the level's replication). The price is twice the state's
    cache and a copy over the network of each batch's new state.

    Examples
    --------
    >>> from pyspark import StorageLevel
    >>> check_storage_level(None) == StorageLevel.MEMORY_AND_DISK
    True
    >>> check_storage_level(StorageLevel.MEMORY_AND_DISK_2).replication
    2
    >>> check_storage_level("MEMORY_ONLY")
    Traceback (most recent call last):
    ...
    TypeError: storage_level='MEMORY_ONLY'; expected a pyspark.StorageLevel (e.g. StorageLevel.MEMORY_AND_DISK_2) or None
    """
    from pyspark import StorageLevel

    if level is None:
        return StorageLevel.MEMORY_AND_DISK
    if not isinstance(level, StorageLevel):
        raise TypeError(f"storage_level={level!r}; expected a pyspark.StorageLevel (e.g. "
                        "StorageLevel.MEMORY_AND_DISK_2) or None")
    if not (level.useMemory or level.useDisk) or level.replication < 1:
        raise ValueError(f"storage_level={level!r} keeps no block; the state must be cached "
                         "(e.g. StorageLevel.MEMORY_AND_DISK)")
    return level


class _Loans:
    """Cut RDDs kept cached for the outputs RDDs that may recompute from them: a count of
    live borrowers per RDD, and the RDDs the cache already released (unpersisted when
    their last borrower goes). Shared by a cache and its rollback copies."""

    def __init__(self) -> None:
        self._count: dict[int, int] = {}
        self._rdds: dict[int, Any] = {}
        self._released: set[int] = set()

    def lend(self, borrower: Any, rdds: Iterable[Any]) -> None:
        keys = []
        for r in rdds:
            k = id(r)
            self._rdds[k] = r
            self._count[k] = self._count.get(k, 0) + 1
            keys.append(k)
        if keys:
            weakref.finalize(borrower, self._give_back, tuple(keys))

    def _give_back(self, keys: tuple[int, ...]) -> None:
        for k in keys:
            n = self._count.get(k, 0) - 1
            if n > 0:
                self._count[k] = n
                continue
            self._count.pop(k, None)
            rdd = self._rdds.pop(k, None)
            if k in self._released:
                self._released.discard(k)
                _unpersist(rdd)

    def release(self, rdd: Any) -> None:
        """Unpersist ``rdd`` now, or when its last borrower is gone."""
        if self._count.get(id(rdd), 0) > 0:
            self._released.add(id(rdd))
        else:
            _unpersist(rdd)

    def close(self) -> None:
        for k in list(self._released):
            _unpersist(self._rdds.get(k))
        self._count, self._rdds, self._released = {}, {}, set()


class FileLoans:
    """Checkpoint directories that outputs RDDs handed out may still read: a batch's
    outputs recompute from the state files its merge read (a rebased state, see
    :func:`~sparkbalance.state.durability.checkpoint.rebased`), so a commit keeps those files until
    every such outputs RDD is garbage-collected.

    Examples
    --------
    >>> class Out: pass
    >>> loans, out = FileLoans(), Out()
    >>> loans.lend(out, "state-00000003-ab12cd34"); loans.names()
    ('state-00000003-ab12cd34',)
    >>> del out; loans.names()
    ()
    """

    def __init__(self) -> None:
        self._count: dict[str, int] = {}

    def lend(self, borrower: Any, name: str | None) -> None:
        """Keep ``name`` while ``borrower`` lives (nothing when ``name`` is None)."""
        if name is None:
            return
        self._count[name] = self._count.get(name, 0) + 1
        weakref.finalize(borrower, self._give_back, name)

    def _give_back(self, name: str) -> None:
        n = self._count.get(name, 0) - 1
        if n > 0:
            self._count[name] = n
        else:
            self._count.pop(name, None)

    def names(self) -> tuple[str, ...]:
        """The directories some live borrower may read."""
        return tuple(self._count)


def held_outputs(frames: Any, level: Any) -> Any:
    """The outputs RDD, ``(key, output)``, of a batch's outputs ``frames``, which stay
    cached (lazily, at ``level``) while it or an RDD derived from it is referenced.

    The batch's merged RDD the frames are selected from is released with the next batch;
    without this cache a late read of the outputs would recompute that merge, and with it
    the state chain back to the last lineage cut (up to ``truncate_every`` batches without
    a ``checkpoint_dir``). With it the first read (the caller's, or a checkpoint's write of
    the outputs) keeps the batch's outputs, and every later read is a cache read.
    """
    from sparkbalance.state.frames.format import frame_payload

    persist(frames, level)
    out = frames.flatMap(frame_payload)
    weakref.finalize(out, _unpersist, frames)
    return out


def _unpersist(rdd: Any) -> None:
    if rdd is not None:
        try:
            rdd.unpersist()
        except Exception:  # noqa: BLE001 - a stopped context must not fail a release
            pass


class BatchCache:
    """The cached RDDs of one operator.

    Parameters
    ----------
    sc : the SparkContext (its checkpoint directory decides how lineage is truncated).
    storage_level : where cached frames live (``MEMORY_AND_DISK``).

    Examples
    --------
    >>> cache = BatchCache(sc, StorageLevel.MEMORY_AND_DISK)     # doctest: +SKIP
    >>> cache.begin(merged_rdd, truncate=False)                  # doctest: +SKIP
    >>> cache.end()                                              # doctest: +SKIP
    """

    def __init__(self, sc: Any, storage_level: Any) -> None:
        self.sc = sc
        self.level = storage_level
        self._held: list[Any] = []       # cached RDDs of the current batch
        self._previous: list[Any] = []   # the previous batch's, released by end()
        self._pinned: Any = None         # last lineage-truncated RDD (kept cached)
        self._lineage: list[Any] = []    # cut RDDs the chain since _pinned still reads
        self._loans = _Loans()           # cut RDDs outputs RDDs handed out still read

    def hold(self, *rdds: Any) -> None:
        """Keep ``rdds`` cached until the batch after the current one ends."""
        self._held.extend(r for r in rdds if r is not None)

    def persist(self, rdd: Any, truncate: bool) -> None:
        """Cache a batch's merged RDD (lazily), cutting its lineage if ``truncate``."""
        persist(rdd, self.level)
        if truncate:
            if self.sc.getCheckpointDir() is not None:
                rdd.checkpoint()          # reliable: survives executor loss
            else:
                rdd.localCheckpoint()     # fast; cached blocks are the only copy

    def cut(self, rdd: Any) -> None:
        """Cut the lineage of ``rdd`` (persisted by the caller) once a job has computed it:
        reliably with the context's checkpoint directory, else locally. Used for the
        state a migration carries through a batch's shuffle: without the cut, that
        batch would refer to the previous one twice (narrow and through the shuffle)."""
        if self.sc.getCheckpointDir() is not None:
            rdd.checkpoint()
        else:
            rdd.localCheckpoint()

    def keep_until_truncation(self, *rdds: Any) -> None:
        """Keep ``rdds`` (cut RDDs the state's lineage reads) until the next truncation."""
        self._lineage.extend(r for r in rdds if r is not None)

    def pin(self, rdd: Any) -> None:
        """``rdd`` (cached, lineage cut, materialised outside a batch: a migrated state)
        is the new truncation point; what the old one kept is released at the end of the
        next batch (the current batch's outputs may still read it)."""
        self._held.extend([self._pinned, *self._lineage])
        self._lineage = []
        self._pinned = rdd

    def begin(self, rdd: Any, truncated: bool) -> None:
        """A new batch whose cached merged RDD ``rdd`` is materialised: the RDDs held so
        far become the previous batch's (released by :meth:`end`)."""
        self._previous, self._held = self._held, []
        if truncated:
            self._previous.extend([self._pinned, *self._lineage])
            self._lineage = []
            self._pinned = rdd
        else:
            self._held.append(rdd)

    def lend(self, rdd: Any) -> Any:
        """Return ``rdd`` (a batch's outputs, handed to the user), keeping the locally
        cut RDDs its recomputation reads (the truncation point and the carried states
        since) cached for as long as ``rdd`` is referenced."""
        cut = [r for r in (self._pinned, *self._lineage) if r is not None]
        # nothing cut to lend (a state rebased on its commits): no need to ask the JVM
        # for the checkpoint directory (three round trips)
        if cut and self.sc.getCheckpointDir() is None:
            self._loans.lend(rdd, cut)
        return rdd

    def end(self) -> None:
        """Release the previous batch's RDDs (never the pinned one; lent ones later)."""
        for rdd in self._previous:
            if rdd is not None and rdd is not self._pinned:
                self._loans.release(rdd)
        self._previous = []

    def reset(self, *rdds: Any) -> None:
        """Forget everything held (a restored state): hold only ``rdds``."""
        self._held, self._previous = [r for r in rdds if r is not None], []
        self._lineage = []

    def close(self, *also: Any) -> None:
        """Release every RDD held, pinned or in ``also``."""
        for rdd in self._held + self._previous + self._lineage + [self._pinned, *also]:
            if rdd is not None:
                try:
                    rdd.unpersist()
                except Exception:  # noqa: BLE001 - a stopped context must not fail close()
                    pass
        self._held, self._previous, self._lineage, self._pinned = [], [], [], None
        self._loans.close()
