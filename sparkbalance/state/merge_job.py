"""The one job of a keyed-state batch: run the merge, cache it, collect its statistics.

:func:`run_merge` runs a batch's merged RDD
(:class:`~sparkbalance.state.frames.framed_state.Merged`) in one Spark job under the
operator's job group, with the cache bookkeeping around it
(:class:`~sparkbalance.state.frames.caching.BatchCache`): the merged RDD is persisted (its
lineage cut every ``truncate_every`` batches), the state carried by a riding migration is
cut after the job, and what the batch holds is handed to the cache only once the job ran
(a failed job releases them; the operator's rollback does the rest). A riding migration
is checked: the keys that left must be the keys that arrived. ``with_outputs``: the same
job also brings the batch's outputs to the driver (:attr:`MergeRun.outputs`), for a caller
that reads them all at once (the stateful drop-in), instead of a job of their own, and
with them their outputs frames (:attr:`MergeRun.out_frames`), which the commit then writes
from the driver instead of in a job of their own. ``write_state``: the same job also
writes the merged state's files for the batch's commit (:func:`stats_outputs_written`),
instead of the commit's job of its own.
"""
from __future__ import annotations

import time
from typing import Any, NamedTuple

from sparkbalance.spark.session.jobs import sparkbalance_job_group
from sparkbalance.state.durability.state_files import FileTable, write_selected
from sparkbalance.state.frames import format as fr
from sparkbalance.state.frames.caching import BatchCache
from sparkbalance.state.frames.framed_state import Merged, stats_of_frames

__all__ = ["MergeRun", "run_merge"]


class MergeRun(NamedTuple):
    """What one batch's merge job returned and took."""

    stats: list[tuple]         # per-partition statistics (:meth:`Merged.stats`)
    merge_seconds: float       # the job's wall time
    keys_moved: int            # keys (or key groups) a riding migration moved (0: none)
    bytes_moved: float         # their Σ S(k) (0.0 without a riding migration)
    seconds: float             # wall time up to the cache handover (the migration's)
    outputs: list | None = None   # the (key, output) list, with_outputs (None: not read)
    out_frames: list | None = None    # its outputs frames, for the checkpoint (bytes)
    state_files: dict | None = None   # the state frames written (a ``FileTable``; ``write_state``)


def stats_outputs_written(merged: Merged, store: Any, name: str
                          ) -> tuple[list[tuple], list, list[bytes], FileTable]:
    """``merged``'s statistics, ``(key, output)`` list and outputs frames (as
    :meth:`Merged.stats_and_outputs`) and its state frames written to ``store``'s
    sub-directory ``name`` (their file table, as a checkpoint records it), in one job,
    with or without the bridge jar."""
    table, back = write_selected(store, name, merged.rdd, fr.TAG_STATE,
                                 (fr.TAG_STATS, fr.TAG_BYPASS, fr.TAG_OUTPUTS),
                                 merged.layout.num_physical)
    # per partition its T frame, then its U frames (stats_of_frames' order); O frames apart
    raw = [f for fs in back for t in (fr.TAG_STATS, fr.TAG_BYPASS) for f in fs if f[0] == t]
    frames = [f for fs in back for f in fs if f[0] == fr.TAG_OUTPUTS]
    stats = stats_of_frames(raw, merged.base.num_groups)
    if len(stats) != merged.layout.num_physical:
        raise RuntimeError(f"merge produced statistics of {len(stats)} partitions; "
                           f"expected {merged.layout.num_physical}")
    return stats, [o for f in frames for o in fr.frame_payload(f)], frames, table


def _written(merged: Merged, target: tuple[Any, str]) -> tuple | None:
    """:func:`stats_outputs_written`, or None when its job failed: the merge (a user
    function's error, raised again by the caller's job without the write, as before) or
    the write (the commit then writes the state itself and names the directory in its
    ``CheckpointError``, as before). Files of the failed write were never committed:
    removed after the next commit, as any uncommitted save's."""
    try:
        return stats_outputs_written(merged, *target)
    except Exception:  # noqa: BLE001 - told apart by running the merge alone
        return None


def run_merge(merged: Merged, cache: BatchCache, group: str, description: str, *,
              truncated: bool, rebasing: bool, with_outputs: bool = False,
              write_state: tuple[Any, str] | None = None) -> MergeRun:
    """Run ``merged`` (one job in job group ``group``, described as ``description``).

    ``truncated``: cut the merged RDD's lineage (every ``truncate_every`` batches);
    ``rebasing``: the state is based on each commit's files, so neither the merged RDD nor
    a riding migration's carried state is cut. A migration whose keys out and in differ
    is a ``RuntimeError`` (the state stays as before the batch). ``with_outputs``: the
    outputs come back with the statistics (with the bridge jar; else not read).
    ``write_state``: ``(store, name)``, where the same job writes the merged state frames
    (:func:`stats_outputs_written`; the outputs then come back with or without the jar),
    for a commit of this batch that then writes none (:attr:`MergeRun.state_files`).

    Examples
    --------
    >>> run = run_merge(merged, op_cache, "group", "batch 3", truncated=False,
    ...                 rebasing=False)                             # doctest: +SKIP
    >>> run.keys_moved                                              # doctest: +SKIP
    0
    """
    cache.persist(merged.rdd, truncated)
    if merged.moves and not rebasing:
        cache.cut(merged.carried)
    t0 = time.perf_counter()
    got, nbytes, outputs, out_frames, files = 0, 0.0, None, None, None
    try:
        with sparkbalance_job_group(cache.sc, group, description):
            both = None if write_state is None else _written(merged, write_state)
            if both is not None:
                stats, outputs, out_frames, files = both
                if not with_outputs:
                    outputs = out_frames = None
            elif with_outputs and merged.base.ops.jvm:
                stats, outputs, out_frames = merged.stats_and_outputs()
            else:
                stats = merged.stats()
        if merged.moves:
            out, got, nbytes = Merged.moved(stats)
            if out != got:
                raise RuntimeError(f"migration moved {out} keys out but {got} arrived; "
                                   "refusing the new layout (state kept as before)")
    except BaseException:
        merged.rdd.unpersist()
        if merged.moves:
            merged.carried.unpersist()
        raise
    merge_s = time.perf_counter() - t0
    cache.begin(merged.rdd, truncated)
    if merged.moves:
        # A truncated merge no longer reads the carried state; else keep it until the
        # next truncation (a recomputation of this batch reads it, not the old state).
        if truncated or rebasing:
            cache.hold(merged.carried)
        else:
            cache.keep_until_truncation(merged.carried)
    return MergeRun(stats, merge_s, got, nbytes, time.perf_counter() - t0, outputs,
                    out_frames, files)

