"""A riding migration written by the batch's own map tasks (``StateRide``,
:mod:`sparkbalance.state.frames.riding`): exact for any batch partition count (fewer,
as many and more than the state's), any batch input (RDD, pipelined, cached, DataFrame),
routing tables and key groups; as many map tasks as the batch has partitions; a batch of
no partition carries the state in a task of its own."""
from __future__ import annotations

import operator

import pytest

from sparkbalance.bench.shifting import batch_records, shifting_zipf_counts
from sparkbalance.state.operator import KeyedStateOperator

N_PARTS = 3


def _stream(n_batches=6, num_keys=120, records=360, seed=11):
    return [batch_records(k, c, seed=t) for t, (k, c) in enumerate(
        shifting_zipf_counts(num_keys, N_PARTS, n_batches, z=1.1, records_per_batch=records,
                             f=2.0, seed=seed))]


@pytest.fixture
def rides(sc):
    from sparkbalance.state.frames.rdds import frame_ops
    if not frame_ops(sc).rides:
        pytest.skip("bridge jar without StateRide (jvm_bridge/build.sh)")


def _map_tasks(sc, op, t: int, before: set) -> int:
    tracker = sc.statusTracker()
    group = f"sparkbalance-state-{id(op)}-{t}"
    (job,) = set(tracker.getJobIdsForGroup(group)) - before
    routed = sorted(tracker.getJobInfo(job).stageIds)[-2]   # the batch's map stage
    return tracker.getStageInfo(routed).numTasks


def _run(sc, planner, batches, make_batch, parts):
    """Every batch through an operator that moves often; (map tasks, riding) per batch."""
    op = KeyedStateOperator(sc, N_PARTS, update=operator.add, initial=0, planner=planner,
                            theta=0.02, trigger="paper")
    tracker = sc.statusTracker()
    ref: dict = {}
    tasks, riding = [], []
    for t, b in enumerate(batches):
        for k, v in b:
            ref[k] = ref.get(k, 0) + v
        riding.append(op.pending_migration)
        before = set(tracker.getJobIdsForGroup(f"sparkbalance-state-{id(op)}-{t}"))
        out = dict(op.process(make_batch(b, parts), batch_id=t).collect())
        assert out == {k: ref[k] for k, _ in b}
        tasks.append(_map_tasks(sc, op, t, before))
    assert any(riding), riding
    assert len(op.migrations) == sum(riding)
    assert op.collect_state() == ref
    op.close()
    return tasks, riding


@pytest.mark.parametrize("planner", ["mixed", "ssm"])
@pytest.mark.parametrize("parts", [1, N_PARTS, 5])
def test_the_batchs_map_tasks_carry_the_state_at_any_partition_count(sc, rides, planner,
                                                                     parts):
    """Fewer batch partitions than the state's (the state coalesced), as many, more (the
    state padded): exact, and never a map task more than the batch's."""
    tasks, riding = _run(sc, planner, _stream(), lambda b, p: sc.parallelize(b, p), parts)
    assert tasks == [parts] * len(riding), list(zip(riding, tasks))


@pytest.mark.parametrize("kind", ["pipelined", "cached", "dataframe", "strings"])
def test_any_batch_input_rides_exactly(sc, spark, rides, kind):
    """The batch's own pipeline runs after the frames: a mapped RDD, a cached one (read
    from its blocks), a DataFrame's rows, string keys."""
    makers = {
        "pipelined": lambda b, p: sc.parallelize([(k, v - 1) for k, v in b], p).map(
            lambda kv: (kv[0], kv[1] + 1)),
        "cached": lambda b, p: sc.parallelize(b, p).cache(),
        "dataframe": lambda b, p: spark.createDataFrame(b, ["key", "value"]).repartition(p),
        "strings": lambda b, p: sc.parallelize(b, p),
    }
    batches = _stream(n_batches=5)
    if kind == "strings":
        batches = [[(f"k{k}", v) for k, v in b] for b in batches]
    tasks, riding = _run(sc, "mixed", batches, makers[kind], 2)
    assert tasks == [2] * len(riding)


def test_a_batch_of_no_partition_carries_the_state_in_a_task_of_its_own(sc, rides):
    """An empty batch RDD has no map task to carry the state in: a task of its own
    carries it, and the move completes."""
    op = KeyedStateOperator(sc, N_PARTS, update=operator.add, initial=0, planner="mixed",
                            theta=0.02, trigger="paper")
    ref: dict = {}
    for t, b in enumerate(_stream(n_batches=6)):
        if op.pending_migration:
            assert op.process(sc.emptyRDD(), batch_id=t).collect() == []
            assert not op.pending_migration
            break
        for k, v in b:
            ref[k] = ref.get(k, 0) + v
        op.process(sc.parallelize(b, 2), batch_id=t)
    else:
        pytest.fail("no migration was decided")
    assert op.migrations
    assert op.collect_state() == ref
    op.close()
