"""The keyed state's data path: lineage stays a chain across migrations, a migration runs
no job of its own, and the state a batch does not touch never enters Python.

A migration used to make the new state refer to the batch's merged RDD three times
(untouched frames, stays, moved keys); once that RDD was unpersisted, every recomputation
re-evaluated each level once per reference and the lineage grew as 3^batches (47, 173,
551, 1685, ... ``toDebugString`` lines). Now a migration rides in the next batch's shuffle
and the carried state's lineage is cut, so each batch adds a constant number of lines and
no RDD is reachable from the state along two paths.
"""
from __future__ import annotations

import operator

import pytest

from sparkbalance.state.operator import KeyedStateOperator
from sparkbalance.bench.shifting import batch_records, shifting_zipf_counts

N_PARTS = 3
N_BATCHES = 20


def _stream(n_batches=N_BATCHES, num_keys=120, records=360, seed=7):
    return [batch_records(k, c, seed=t) for t, (k, c) in enumerate(
        shifting_zipf_counts(num_keys, N_PARTS, n_batches, z=1.1, records_per_batch=records,
                             f=2.0, seed=seed))]


def _paths(jrdd) -> tuple[int, int]:
    """(distinct RDDs, RDD visits) of a walk over every dependency path from ``jrdd``
    down to checkpointed or source RDDs: equal when no RDD is reached twice."""
    seen: set[int] = set()
    visits = 0
    stack = [jrdd]
    while stack:
        rdd = stack.pop()
        visits += 1
        seen.add(rdd.id())
        deps = rdd.dependencies()
        for i in range(deps.size()):
            stack.append(deps.apply(i).rdd())
    return len(seen), visits


# truncate_every=10 runs 20 batches (its late read crosses two truncations); 100 never
# truncates and shows the chain in 12 (every batch migrates on this stream; 20 repeated it)
@pytest.mark.timeout(1800)   # 20 + 12 batches; minutes on a loaded machine
@pytest.mark.parametrize("truncate_every, n_batches", [(10, 20), (100, 12)], ids=["10", "100"])
def test_lineage_is_a_chain_after_migrations_in_most_batches(sc, truncate_every, n_batches):
    batches = _stream(n_batches)
    op = KeyedStateOperator(sc, N_PARTS, update=operator.add, initial=0, planner="mixed",
                            theta=0.02, truncate_every=truncate_every, trigger="paper")
    ref: dict = {}
    refs, outs, lines = [], [], []
    for t, b in enumerate(batches):
        for k, v in b:
            ref[k] = ref.get(k, 0) + v
        refs.append({k: ref[k] for k, _ in b})
        outs.append(op.process(sc.parallelize(b, 2), batch_id=t))
        jrdd = op._state.rdd._jrdd.rdd()
        lines.append(len(jrdd.toDebugString().splitlines()))
        if t in (5, n_batches - 3, n_batches - 1):   # a py4j walk per RDD: now and then
            distinct, visits = _paths(jrdd)
            assert distinct == visits, (t, distinct, visits)   # no RDD reached twice
    moved = sum(h.rebalanced for h in op.history)
    assert moved >= n_batches // 2, moved
    # at most a constant number of lines per batch since the last truncation
    per_batch = max(b - a for a, b in zip(lines, lines[1:]))
    assert per_batch <= 20, lines
    assert max(lines) <= 20 * min(truncate_every, n_batches) + 20, lines
    # an early batch's outputs, read late, are still exact (recomputed once per level).
    # With truncate_every=10 this read crosses two local truncations: the lineage bounds
    # above always held, but the truncation released the local checkpoints (and carried
    # states) the old outputs recompute from (CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND); they
    # are now lent to the outputs RDDs held here (BatchCache.lend).
    for t in (2, n_batches - 3):
        assert dict(outs[t].collect()) == refs[t]
    assert op.collect_state() == ref
    op.close()


def test_riding_migration_runs_no_extra_job(sc):
    """A batch whose shuffle carries a migration runs as many jobs as one without."""
    batches = _stream(n_batches=8)
    op = KeyedStateOperator(sc, N_PARTS, update=operator.add, initial=0, planner="mixed",
                            theta=0.02, trigger="paper")
    tracker = sc.statusTracker()
    jobs, riding = [], []
    ref: dict = {}
    for t, b in enumerate(batches):
        for k, v in b:
            ref[k] = ref.get(k, 0) + v
        rides = op.pending_migration
        group = f"sparkbalance-state-{id(op)}-{t}"
        before = set(tracker.getJobIdsForGroup(group))   # id(op) of an earlier test's op
        op.process(sc.parallelize(b, 2), batch_id=t)
        jobs.append(len(set(tracker.getJobIdsForGroup(group)) - before))
        riding.append(rides)
    assert any(riding) and not all(riding), riding
    assert set(jobs) == {1}, list(zip(riding, jobs))
    assert len(op.migrations) == sum(riding)
    assert op.collect_state() == ref
    op.close()


@pytest.mark.parametrize("planner", ["mixed", "ssm"])
def test_riding_migration_reads_the_state_in_the_batchs_map_tasks(sc, planner):
    """With the bridge jar, the state a migration carries is read by the batch's own map
    tasks (``StateRide``): a riding batch runs as many map tasks as one without, not one
    more (on n slots that one waited for a slot, a wave of its own); the result stays
    exact."""
    from sparkbalance.state.frames.rdds import frame_ops
    if not frame_ops(sc).jvm:
        pytest.skip("bridge jar not on spark.jars (jvm_bridge/build.sh)")
    op = KeyedStateOperator(sc, N_PARTS, update=operator.add, initial=0, planner=planner,
                            theta=0.02, trigger="paper")
    tracker = sc.statusTracker()
    ref: dict = {}
    map_tasks, riding = [], []
    for t, b in enumerate(_stream(n_batches=8)):
        for k, v in b:
            ref[k] = ref.get(k, 0) + v
        rides = op.pending_migration
        group = f"sparkbalance-state-{id(op)}-{t}"
        before = set(tracker.getJobIdsForGroup(group))
        op.process(sc.parallelize(b, 2), batch_id=t)
        (job,) = set(tracker.getJobIdsForGroup(group)) - before
        # the batch's shuffle-map stage: the job's newest but one (the older ones are the
        # earlier batches' shuffles, skipped: the state is cached)
        routed = sorted(tracker.getJobInfo(job).stageIds)[-2]
        map_tasks.append(tracker.getStageInfo(routed).numTasks)
        riding.append(rides)
    assert any(riding), riding
    assert map_tasks == [2] * len(riding), list(zip(riding, map_tasks))
    assert len(op.migrations) == sum(riding)
    assert op.collect_state() == ref
    op.close()


def test_untouched_frames_bypass_python(sc):
    """With the bridge jar, the merge reads only the frames of the groups the batch
    touches: the JVM's summary (``U`` frame) counts every other key, unread."""
    from sparkbalance.routing.keygroups import key_group
    from sparkbalance.state.frames import format as fr
    from sparkbalance.state.frames.rdds import frame_ops
    if not frame_ops(sc).jvm:
        pytest.skip("bridge jar not on spark.jars (jvm_bridge/build.sh)")
    op = KeyedStateOperator(sc, 2, update=operator.add, initial=0, planner="none")
    op.process(sc.parallelize([(k, 1) for k in range(2000)], 2))
    G = op._state.num_groups
    one = [(7, 1)]
    frames = op.merge_rdd(sc.parallelize(one, 1)).collect()
    bypassed = sum(fr.bypass_summary(f)[0] for f in frames if f[0] == fr.TAG_BYPASS)
    fn = op.partition_function
    same = [k for k in range(2000) if key_group(k, G) == key_group(7, G) and fn(k) == fn(7)]
    assert bypassed == 2000 - len(same)
    # and the batch itself is exact, the untouched keys kept
    out = op.process(sc.parallelize(one, 1)).collect()
    assert out == [(7, 2)]
    state = op.collect_state()
    assert len(state) == 2000 and state[7] == 2 and state[8] == 1
    op.close()


@pytest.mark.parametrize("planner", ["mixed", "ssm"])
def test_riding_migration_in_small_chunks_is_exact(sc, monkeypatch, planner):
    """The map task carrying a migration writes its items in bounded chunks (here after
    every frame it reads): every key still arrives once, the state exact."""
    from sparkbalance.state.frames import riding
    monkeypatch.setattr(riding, "CARRY_CHUNK", 1)
    op = KeyedStateOperator(sc, N_PARTS, update=operator.add, initial=0, planner=planner,
                            theta=0.02, trigger="paper")
    ref: dict = {}
    for t, b in enumerate(_stream(n_batches=6)):
        for k, v in b:
            ref[k] = ref.get(k, 0) + v
        op.process(sc.parallelize(b, 2), batch_id=t)
    assert op.migrations
    assert op.collect_state() == ref
    op.close()


def test_steady_merge_is_one_python_pass(sc):
    """With the bridge jar a batch reaches the merge as its routing shuffle's chunks: the
    merge stage runs one Python pass (the merge), not a grouping pass before it."""
    from sparkbalance.state.frames.rdds import frame_ops
    if not frame_ops(sc).jvm:
        pytest.skip("bridge jar not on spark.jars (jvm_bridge/build.sh)")
    assert frame_ops(sc).chunks
    # a routing table that does not migrate here (θ = 5): a riding migration's batch is
    # grouped with the state it carries, in a Python pass of its own
    op = KeyedStateOperator(sc, 2, update=operator.add, initial=0, planner="mixed", theta=5)
    op.process(sc.parallelize([(k % 50, 1) for k in range(500)], 2))
    assert op._pending is None
    lineage = op.merge_rdd(sc.parallelize([(1, 1), (2, 5)], 2))._jrdd.rdd().toDebugString()
    merge_stage = lineage.split("ShuffledRDD")[0]
    assert merge_stage.count("PythonRDD[") == 1, lineage
    assert sorted(op.process(sc.parallelize([(1, 1), (2, 5)], 2)).collect()) == \
        [(1, 11), (2, 15)]
    op.close()


def test_a_bridge_without_chunk_frames_is_detected(sc):
    """A bridge jar older than R frames (no ``StateFrames.protocol``) reads as protocol 1,
    so the state keeps grouping the batch in Python (else the JVM would set aside the
    state of the batch's groups)."""
    from sparkbalance.state.frames.rdds import _protocol
    assert _protocol(sc._jvm.java.lang.Math) == 1


@pytest.mark.parametrize("planner", ["mixed", "ssm"])
def test_riding_merge_is_one_python_pass(sc, planner):
    """A batch that carries a migration reaches the merge as chunks too (the batch's and
    the carried state's): one Python pass in its merge stage, the state exact."""
    from sparkbalance.state.frames.rdds import frame_ops
    if not frame_ops(sc).chunks:
        pytest.skip("bridge jar not on spark.jars (jvm_bridge/build.sh)")
    op = KeyedStateOperator(sc, N_PARTS, update=operator.add, initial=0, planner=planner,
                            theta=0.02, trigger="paper")
    ref: dict = {}
    checked = 0
    for t, b in enumerate(_stream(n_batches=6)):
        for k, v in b:
            ref[k] = ref.get(k, 0) + v
        if op.pending_migration:
            lineage = op.merge_rdd(sc.parallelize(b, 2))._jrdd.rdd().toDebugString()
            assert lineage.split("ShuffledRDD")[0].count("PythonRDD[") == 1, lineage
            checked += 1
        op.process(sc.parallelize(b, 2), batch_id=t)
    assert checked
    assert op.collect_state() == ref
    op.close()
