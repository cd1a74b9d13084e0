"""``KeyedStateOperator.rebalance``: a move planned on a forecast of the coming batch's
per-key work. The state stays exact (against a plain-Python reference), every key sits
where the new function says, the forecast's load evens out, bad forecasts fail before any
job, and a checkpoint commits the moved layout."""
from __future__ import annotations

import operator

import numpy as np
import pytest

from sparkbalance.spark.session.jobs import next_job_id
from sparkbalance.state.operator import KeyedStateOperator

N = 4


def _batches(num: int = 3, keys: int = 80) -> list[list]:
    rng = np.random.default_rng(5)
    return [[(int(k), 1) for k in rng.integers(0, keys, 400)] for _ in range(num)]


def _op(sc, planner: str, **kw) -> KeyedStateOperator:
    return KeyedStateOperator(sc, N, update=operator.add, initial=0, planner=planner,
                              trigger="paper", **kw)


def _run(sc, op, batches) -> dict:
    ref: dict = {}
    for b in batches:
        op.process(sc.parallelize(b, 2))
        for k, v in b:
            ref[k] = ref.get(k, 0) + v
    return ref


def _hot_forecast(op, keys) -> dict:
    """Six hot keys that all sit in one partition now (idle elsewhere: cost 1)."""
    fn = op.partition_function
    where = {k: fn(k) for k in keys}
    crowded = max(range(N), key=lambda p: sum(1 for w in where.values() if w == p))
    hot = [k for k in keys if where[k] == crowded][:6]
    return {k: (100.0 if k in hot else 1.0) for k in keys}


def _imbalance(fn, costs: dict) -> float:
    loads = np.bincount([fn(k) for k in costs], weights=list(costs.values()), minlength=N)
    return float(loads.max() / loads.mean())


@pytest.mark.parametrize("planner", ["mixed", "ssm", "correlation"])
def test_rebalance_moves_to_the_forecasts_layout_and_keeps_the_state(sc, planner):
    batches = _batches()
    op = _op(sc, planner, theta=0.5)      # the batches alone never trigger
    ref = _run(sc, op, batches[:2])
    assert op.collect_state() == ref
    costs = _hot_forecast(op, sorted(ref))
    before = _imbalance(op.partition_function, costs)
    version = op.version
    rec = op.rebalance(costs)
    assert rec is not None and rec.reason == "forecast" and rec.keys_moved > 0
    assert op.version > version and op.migrations[-1] is rec
    assert _imbalance(op.partition_function, costs) < before
    assert op.collect_state() == ref
    fn = op.partition_function
    for pid, blk in enumerate(op.blocks_rdd.collect()):
        assert all(fn(k) == pid for k in blk)
    op.process(sc.parallelize(batches[2], 2))
    for k, v in batches[2]:
        ref[k] += v
    assert op.collect_state() == ref
    op.close()


def test_rebalance_settles_a_pending_migration_first(sc):
    batches = _batches()
    op = _op(sc, "mixed", theta=0.01)     # every batch triggers
    ref = _run(sc, op, batches[:2])
    assert op.pending_migration
    costs = _hot_forecast(op, sorted(ref))
    n = len(op.migrations)
    op.rebalance(costs)
    assert not op.pending_migration
    assert [m.reason for m in op.migrations[n:]][:1] == ["imbalance"]
    assert op.collect_state() == ref
    op.close()


def test_rebalance_without_a_better_plan_moves_nothing(sc):
    batches = _batches(2)
    op = _op(sc, "none")
    ref = _run(sc, op, batches)
    assert op.rebalance(_hot_forecast(op, sorted(ref))) is None
    assert op.migrations == [] and op.collect_state() == ref
    op.close()


@pytest.mark.parametrize("costs, error, match", [
    ([("a", 1.0)], TypeError, "expected a mapping"),
    ({"a": -1.0}, ValueError, r"costs\['a'\] = -1.0"),
    ({"a": float("nan")}, ValueError, "finite number"),
    ({"a": "x"}, ValueError, "finite number"),
    ({None: 1.0}, TypeError, "key None"),
    ({float("nan"): 1.0}, ValueError, "NaN key"),
])
def test_bad_forecasts_fail_before_any_job(sc, costs, error, match):
    op = _op(sc, "mixed")
    op.process(sc.parallelize([(1, 1), (2, 1)], 2))
    before = next_job_id(sc)
    with pytest.raises(error, match=match):
        op.rebalance(costs)
    assert next_job_id(sc) == before
    assert op.collect_state() == {1: 1, 2: 1}
    op.close()


def test_a_checkpoint_commits_the_moved_layout(sc, tmp_path):
    batches = _batches()
    op = _op(sc, "mixed", theta=0.5, checkpoint_dir=str(tmp_path / "ck"))
    ref = _run(sc, op, batches[:2])
    op.rebalance(_hot_forecast(op, sorted(ref)))
    version, fn = op.version, op.partition_function
    op.close()
    again = _op(sc, "mixed", theta=0.5, checkpoint_dir=str(tmp_path / "ck"))
    assert again.version == version and again.collect_state() == ref
    assert all(again.partition_function(k) == fn(k) for k in ref)
    again.close()


def test_the_clairvoyants_forecast_is_the_work_the_windowed_merge_does(sc):
    """bench.clairvoyant.window_work counts the values a windowed merge folds (replays
    included): checked against an accumulator inside the operator's fold."""
    from sparkbalance.bench.clairvoyant import window_work
    folded = sc.accumulator(0)

    def count(state, values):
        folded.add(len(values))
        return state + len(values), [state + len(values)]

    rng = np.random.default_rng(9)
    batches = [[(int(k), 1) for k in rng.integers(0, 30, 60)] for _ in range(6)]
    op = KeyedStateOperator(sc, N, update_values=count, initial=0, planner="mixed",
                            window=3)
    for t, b in enumerate(batches):
        before = folded.value
        op.process(sc.parallelize(b, 2)).count()
        assert folded.value - before == sum(window_work(batches, t, 3).values())
    op.close()
