"""sb.diagnose on known distributions: its predictions equal the placements then made."""
from __future__ import annotations

import collections
import functools
import sys
import time

import pytest
from pyspark.sql import functions as F

import sparkbalance as sb
from sparkbalance.__main__ import main

N = 4


@pytest.fixture(scope="module")
def known(spark):
    # key 7: 400 rows (40%); keys 100..299: 3 rows each (600); 30 null-key rows
    rows = [(7, i) for i in range(400)] + [(100 + i // 3, i) for i in range(600)] \
        + [(None, i) for i in range(30)]
    return spark.createDataFrame(rows, "k int, v long").coalesce(1).cache()


def _loads(df, case):
    return df.select(F.lit(case).alias("case"), F.spark_partition_id().alias("p"))


def _placed_loads(known, r):
    frames = [_loads(known.repartition(N, "k"), "spark")]
    frames += [_loads(sb.repartition(known, N, "k", partitioner=f), name)
               for name, f in r.partitioners.items()]
    return collections.Counter((x["case"], x["p"]) for x in
                               functools.reduce(lambda a, b: a.unionByName(b), frames)
                               .collect())


def test_report_figures_and_predicted_placements(known):
    r = sb.diagnose(known, "k", num_partitions=N)
    assert (r.rows, r.null_rows, r.distinct_keys) == (1030, 30, 202)
    assert r.top[0] == (7, 400, pytest.approx(400 / 1030))
    assert r.lower_bound == pytest.approx(400 / (1030 / N))
    # every prediction equals the rows per partition of the placement then made: plain
    # Spark's repartition(n, key) and sb.repartition by each fitted function, one job
    counts = _placed_loads(known, r)
    predicted = {"spark": r.spark, **r.placements}
    for name, placement in predicted.items():
        assert [counts[(name, p)] for p in range(N)] == placement.loads.tolist(), name
    assert r.recommended != "spark" and r.speedup > 1.0
    assert r.chosen.max_over_avg <= r.lower_bound * 1.05


def test_bounded_statistics_predict_the_placements_of_unlisted_keys_too(known):
    """Only the 3 heaviest keys reach the driver; the 199 others (and the nulls) are
    counted where each placement puts them, so the predictions stay exact."""
    r = sb.diagnose(known, "k", num_partitions=N, max_keys=3)
    assert len(r.top) == 4 and r.top[0] == (7, 400, pytest.approx(400 / 1030))
    assert r.rows == 1030 and r.null_rows == 30
    assert r.distinct_keys == pytest.approx(202, abs=3)       # HyperLogLog++ past max_keys
    assert r.lower_bound == pytest.approx(400 / (1030 / N))
    counts = _placed_loads(known, r)
    for name, placement in {"spark": r.spark, **r.placements}.items():
        assert [counts[(name, p)] for p in range(N)] == placement.loads.tolist(), name
        assert placement.loads.sum() == 1030


def test_pair_rdd_report_matches_partition_by(sc):
    pairs = sc.parallelize([("hot", 1)] * 300 + [(f"k{i}", 1) for i in range(300)], 3)
    r = sb.diagnose(pairs, num_partitions=N)
    spark_loads = pairs.partitionBy(N).glom().map(len).collect()
    assert r.spark.loads.tolist() == spark_loads
    assert r.rows == 600 and r.distinct_keys == 301
    f = r.partitioners[r.recommended] if r.recommended != "spark" else None
    if f is not None:
        placed = sb.partition_by(pairs, N, strategy=f).glom().map(len).collect()
        assert placed == r.chosen.loads.tolist()
    # bounded statistics (2 keys listed): every placement still predicted exactly
    small = sb.diagnose(pairs, num_partitions=N, max_keys=2, strategies=["mixed", "keygroups"])
    assert small.spark.loads.tolist() == spark_loads and small.distinct_keys == 301
    for name, f in small.partitioners.items():
        placed = sb.partition_by(pairs, N, strategy=f).glom().map(len).collect()
        assert placed == small.placements[name].loads.tolist(), name


def test_cli_over_parquet_and_csv(known, tmp_path, capsys):
    known.write.parquet(str(tmp_path / "data.parquet"))
    known.write.option("header", True).csv(str(tmp_path / "data.csv"))
    assert main(["diagnose", str(tmp_path / "data.parquet"), "--key", "k",
                 "--partitions", str(N), "--plot", str(tmp_path / "skew.png")]) == 0
    out = capsys.readouterr().out
    assert "rows                        1,030" in out and "recommendation:" in out
    assert (tmp_path / "skew.png").exists()
    assert main(["diagnose", str(tmp_path / "data.csv"), "--key", "k", "--format", "csv",
                 "--partitions", str(N)]) == 0
    assert "distinct keys               202" in capsys.readouterr().out


def test_bad_calls_are_refused(known, sc):
    with pytest.raises(ValueError, match="name at least one key column"):
        sb.diagnose(known)
    with pytest.raises(ValueError, match="num_partitions=0"):
        sb.diagnose(known, "k", num_partitions=0)
    with pytest.raises(ValueError, match="first element"):
        sb.diagnose(sc.parallelize([(1, 1)]), "k")
    with pytest.raises(ValueError, match="keyed state only") as info:
        sb.diagnose(known, "k", strategies=["bogus"])
    offered = str(info.value).split("(keyed state only")[0]   # what the adapters take
    assert "mixed" in offered and "mtm" not in offered and "correlation" not in offered


def test_advice_names_calls_of_the_diagnosed_api(known, sc):
    """A DataFrame's report advises DataFrame calls; a pair RDD's, RDD calls."""
    r = sb.diagnose(known, "k", num_partitions=N)
    assert r.recommended != "spark"
    assert r.advice.startswith(f"sb.group_by(df, 'k', num_partitions={N}, strategy=")
    assert "sb.repartition(df, 4, 'k'" in r.advice and f"use: {r.advice}" in str(r)
    # key 7 holds 39% of the rows: no key-grouping placement reaches balance, and the report
    # says what may split it, in DataFrame calls
    assert "sb.join(df, other, on, strategy='split')" in r.reason
    assert "reduce_by_key" not in str(r) and "partition_by" not in str(r)
    pairs = sc.parallelize([("hot", 1)] * 300 + [(f"k{i}", 1) for i in range(300)], 3)
    rr = sb.diagnose(pairs, num_partitions=N)
    assert rr.source == "rdd" and rr.advice.startswith(f"sb.partition_by(rdd, {N}, strategy=")
    assert "sb.reduce_by_key(rdd, f, n, strategy='pkg')" in rr.reason
    assert "sb.group_by" not in str(rr)


def test_plot_without_matplotlib_fails_before_spark_is_asked(known, tmp_path, monkeypatch,
                                                             capsys):
    data = tmp_path / "data.csv"
    data.write_text("k,v\n1,2\n")
    monkeypatch.setitem(sys.modules, "matplotlib", None)   # as where it is not installed
    started = time.monotonic()
    assert main(["diagnose", str(data), "--key", "k", "--plot", str(tmp_path / "p.png")]) == 2
    assert time.monotonic() - started < 5
    err = capsys.readouterr().err
    assert "--plot" in err and "pip install 'sparkbalance[plot]'" in err
    assert main(["diagnose", str(tmp_path / "nope.csv"), "--key", "k"]) == 2
    assert "does not exist" in capsys.readouterr().err
    r = sb.diagnose(known, "k", num_partitions=N, strategies=["hash"])
    with pytest.raises(ImportError, match=r"sparkbalance\[plot\]"):
        r.plot()
