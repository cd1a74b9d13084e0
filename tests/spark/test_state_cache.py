"""What the keyed state keeps cached, and where.

A batch's outputs stay cached from their first read while the caller holds them, so a late
read does not recompute the batches before it. A rebased keyed state keeps its cache
locality: the scheduler places partition ``i``'s tasks on the executor caching the state's
block ``i``, on Spark 3.5 as on 4.x.

The rebased state reads its cached blocks through the block manager, not as a dependency
(:func:`sparkbalance.state.durability.checkpoint.rebased`), so the scheduler would not see where they
are. Two preferences name them: ``Rebased.getPreferredLocations`` (Spark 4.x only: on 3.5
the override matches nothing) and the files' index RDD (``StateFiles.parts`` with
``near``), which the scheduler finds by walking narrow dependencies on both lines. Checked
with the scheduler's own answer, ``SparkContext.getPreferredLocs``.
"""
from __future__ import annotations

import gc
import operator

import pytest

from sparkbalance.state.frames.rdds import frame_ops
from sparkbalance.state.operator import KeyedStateOperator

N_PARTS = 3


@pytest.fixture(autouse=True)
def _needs_bridge(sc):
    if not frame_ops(sc).jvm:
        pytest.skip("the bridge jar is not on spark.jars")


def _scheduler_prefers(sc, rdd, i: int) -> set[str]:
    locs = sc._jsc.sc().getPreferredLocs(rdd._jrdd.rdd(), i)
    return {locs.apply(j).toString() for j in range(locs.size())}


def _block_holders(sc, rdd_id: int, i: int) -> set[str]:
    holders = sc._jvm.io.sparkbalance.bridge.StateFiles.blockLocations(rdd_id, i + 1)[i]
    return set(holders)


def test_the_scheduler_places_each_partition_where_its_block_is_cached(sc, tmp_path):
    from sparkbalance.state.durability.manifest import read_manifest
    from sparkbalance.state.durability.state_files import read_parts
    from sparkbalance.state.durability.store import store_for

    op = KeyedStateOperator(sc, N_PARTS, update=operator.add, initial=0, planner="none",
                            checkpoint_dir=tmp_path / "ck")
    try:
        for t in range(2):
            op.process(sc.parallelize([(k, 1) for k in range(60)], 2), batch_id=t)
        state = op._state
        anchor = state.anchor
        assert anchor is not None and anchor.is_cached
        for i in range(N_PARTS):
            holders = _block_holders(sc, anchor._jrdd.rdd().id(), i)
            assert holders and all(h.startswith("executor_") for h in holders)
            # the rebased state as the scheduler sees it (4.x: Rebased's own preference;
            # 3.5: the index RDD under the files)
            assert _scheduler_prefers(sc, state.rdd, i) == holders
        # the files' read alone, the preference Spark 3.5 relies on
        store = store_for(sc, tmp_path / "ck")
        man = read_manifest(store)
        files = read_parts(sc, store, man.state_dir, man.state_files, man.num_physical,
                           near=anchor)
        for i in range(N_PARTS):
            assert _scheduler_prefers(sc, files, i) == \
                _block_holders(sc, anchor._jrdd.rdd().id(), i)
        # without near: no preference (a resume reads files no executor caches)
        plain = read_parts(sc, store, man.state_dir, man.state_files, man.num_physical)
        assert all(not _scheduler_prefers(sc, plain, i) for i in range(N_PARTS))
        assert dict(op.collect_state()) == {k: 2 for k in range(60)}
    finally:
        op.close()


@pytest.mark.parametrize("planner", ["none", "mixed"])
def test_outputs_read_once_stay_cached_while_held(sc, planner):
    op = KeyedStateOperator(sc, N_PARTS, update=operator.add, initial=0, planner=planner,
                            theta=0.02, trigger="paper", truncate_every=100)
    try:
        held, want = None, None
        for t in range(6):
            out = op.process(sc.parallelize([(k % (7 + t), 1) for k in range(90)], 2))
            got = sorted(out.collect())           # the caller reads its outputs once
            if t == 1:
                held, want = out, got
        frames = held.prev                        # the outputs frames the RDD reads
        rid = frames._jrdd.rdd().id()
        assert rid in set(sc._jsc.getPersistentRDDs().keys())
        assert all(_block_holders(sc, rid, i) for i in range(N_PARTS))
        assert sorted(held.map(lambda kv: kv).collect()) == want   # a late read, from cache
        del held, out, frames
        gc.collect()
        assert rid not in set(sc._jsc.getPersistentRDDs().keys())
    finally:
        op.close()
