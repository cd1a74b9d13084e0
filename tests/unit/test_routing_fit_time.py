"""fit_partitioner(weights="time"): measured task times turn counts into seconds (no Spark)."""
from __future__ import annotations

from types import SimpleNamespace as Task

import numpy as np
import pytest

from sparkbalance.routing import HashPartitioner
from sparkbalance.spark.rdd.adapters import fit_partitioner
from sparkbalance.stats import KeyStats


class FakeListener:
    def __init__(self, tasks):
        self._tasks = tasks

    def tasks(self, successful_only=False):
        return [t for t in self._tasks if t.successful or not successful_only]


def _task(p, ms, group=None):
    return Task(stage_id=1, stage_attempt=0, partition_id=p, successful=True, finish_time_ms=1,
                run_time_ms=ms, duration_ms=ms, executor_id="0", job_group=group,
                records_read=0, shuffle_records_read=0, cpu_time_ns=0)


def _stats_and_tasks(n=2):
    keys = [f"k{i}" for i in range(40)]
    stats = KeyStats.from_counts({k: 10 for k in keys})
    home = HashPartitioner(n).assign(stats.keys)
    # partition 1 is 4x slower per record than partition 0
    recs = np.bincount(home, weights=stats.counts, minlength=n)
    tasks = [_task(p, int(recs[p] * (4 if p == 1 else 1))) for p in range(n)]
    tasks.append(_task(0, 99999, group="sparkbalance-stats"))  # our own job: ignored
    return stats, tasks, home


def test_time_weights_make_keys_on_slow_partitions_costlier():
    stats, tasks, home = _stats_and_tasks()
    f = fit_partitioner(None, 2, strategy="mixed", weights="time", listener=FakeListener(tasks),
                        stats=stats)
    g = fit_partitioner(None, 2, strategy="mixed", weights="count", stats=stats)
    assert f.num_partitions == 2 and g.num_partitions == 2
    # With time weights, fewer keys stay on the slow partition 1 than with counts.
    slow_time = int((f.assign(stats.keys) == 1).sum())
    slow_count = int((g.assign(stats.keys) == 1).sum())
    assert slow_time < slow_count


def test_time_weights_give_tag_its_completion_times():
    stats, tasks, _ = _stats_and_tasks()
    f = fit_partitioner(None, 2, strategy="tag", weights="time", listener=FakeListener(tasks),
                        stats=stats)
    t = f.completion_times
    assert t[1] / t[0] == pytest.approx(4.0, rel=0.05)


def test_time_weights_need_a_listener_with_tasks():
    stats, _, _ = _stats_and_tasks()
    with pytest.raises(ValueError, match="listener"):
        fit_partitioner(None, 2, strategy="mixed", weights="time", stats=stats)
    with pytest.raises(ValueError, match="no successful task"):
        fit_partitioner(None, 2, strategy="mixed", weights="time", listener=FakeListener([]),
                        stats=stats)


def test_refusals_come_before_any_job():
    """rdd=None: gathering statistics would fail, so these errors come from the registry."""
    with pytest.raises(TypeError, match="'thetaa'.*valid: .*beta"):
        fit_partitioner(None, 2, strategy="mixed", thetaa=0.1)
    with pytest.raises(ValueError, match="strategy='nope'"):
        fit_partitioner(None, 2, strategy="nope")
    with pytest.raises(ValueError, match="keyed state only"):
        fit_partitioner(None, 2, strategy="mtm")
    with pytest.raises(TypeError, match="positional"):
        fit_partitioner(None, 2, "mixed")  # strategy is keyword-only


def test_no_strategy_is_the_registry_default(monkeypatch):
    from sparkbalance import strategies
    from sparkbalance.spark.rdd import adapters as sbr
    stats, _, _ = _stats_and_tasks()
    f = fit_partitioner(None, 2, stats=stats)
    # "auto": Mixed's table where it cuts the slowest partition, else plain hash
    assert f == strategies.fit("auto", stats, 2)
    assert type(f).__name__ in ("RoutingTablePartitioner", "HashPartitioner")
    monkeypatch.setattr(strategies, "DEFAULT_STRATEGY", "pkg")
    assert type(sbr.fit_partitioner(None, 2)).__name__ == "PKGPartitioner"
