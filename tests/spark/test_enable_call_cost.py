"""The fixed cost of an enabled call: its conf reads from one snapshot
(:mod:`sparkbalance.spark.session.conf_snapshot`: the same values as key-by-key reads, a
change between two calls seen, a few round trips), and an input a shuffle computes decided
from the sample's plan alone (no job)."""
from __future__ import annotations

import threading

from sparkbalance.spark.session import conf
from sparkbalance.spark.session.conf_snapshot import kept_reads

KEYS = [e.key for e in conf.KEYS.values()] + ["spark.sql.shuffle.partitions", "spark.master"]


def _count(sc, fn):
    client = sc._gateway._gateway_client
    real, calls, me = client.send_command, [0], threading.get_ident()

    def counting(*a, **k):
        calls[0] += threading.get_ident() == me   # not a listener's callback elsewhere
        return real(*a, **k)
    client.send_command = counting
    try:
        return fn(), calls[0]
    finally:
        client.send_command = real


def test_a_snapshot_reads_what_each_key_reads(spark, sc):
    df = spark.range(3)
    spark.conf.set("spark.sparkbalance.check.sampleRows", "4096")
    spark.conf.set("spark.sparkbalance.strategy", "odd, value -> (with) arrows")
    try:
        each, _ = _count(sc, lambda: {k: conf._raw(df, k) for k in KEYS})

        def kept():
            with kept_reads():
                return {k: conf._raw(df, k) for k in KEYS}
        got, trips = _count(sc, kept)
        assert got == each
        assert got["spark.sparkbalance.strategy"] == "odd, value -> (with) arrows"
        assert trips <= 3 < len(KEYS)
        spark.conf.set("spark.sparkbalance.check.sampleRows", "512")   # seen by the next call
        with kept_reads():
            assert conf._raw(df, "spark.sparkbalance.check.sampleRows") == "512"
    finally:
        spark.conf.unset("spark.sparkbalance.check.sampleRows")
        spark.conf.unset("spark.sparkbalance.strategy")


def test_an_input_a_shuffle_computes_stays_plain_without_a_sample_job(spark, sc):
    import sparkbalance as sb
    from pyspark.testing import assertDataFrameEqual
    from sparkbalance.spark.enable import decisions
    from sparkbalance.spark.session.jobs import next_job_id
    shuffled = (spark.range(2_000).selectExpr("IF(id % 2 = 0, 0, id % 50) AS k", "id AS v")
                .groupBy("k").count())
    expected = shuffled.repartition(4, "k").collect()
    sb.enable(spark)
    try:
        shuffled.repartition(4, "k")                     # the session's first-use checks
        j0 = next_job_id(sc)
        got = shuffled.repartition(4, "k")
        assert next_job_id(sc) == j0                     # decided from the plan alone
        d = decisions()[-1]
        assert (d.balanced, d.sampled_rows) == (False, 0)
        assert d.reason.startswith("input is a shuffle's output")
        assertDataFrameEqual(got, expected)
    finally:
        sb.disable(spark)


def test_a_table_read_again_unchanged_is_not_sampled_again(spark, sc, tmp_path):
    """The same keyed call over the same files uses the sample an earlier call took (no
    job while the DataFrame is built); a write to the table (a new file) is sampled
    afresh; results equal plain Spark's every time."""
    import sparkbalance as sb
    from pyspark.testing import assertDataFrameEqual
    from sparkbalance.spark.enable import decisions
    from sparkbalance.spark.session.jobs import next_job_id
    path = str(tmp_path / "t.parquet")
    rows = spark.range(0, 6_000, numPartitions=4).selectExpr(
        "IF(id % 3 = 0, 7, id % 500) AS k", "id AS v")
    rows.write.parquet(path)

    def call():
        df = spark.read.parquet(path)    # (its own schema job, if any, not counted)
        j0 = next_job_id(sc)
        got = df.repartition(4, "k")
        return got, next_job_id(sc) - j0, decisions()[-1]
    sb.enable(spark)
    try:
        _, first_jobs, first = call()
        got, jobs, again = call()
        assert first.balanced and first_jobs >= 1 and "earlier call" not in first.reason
        assert jobs == 0 and again.balanced and "earlier call" in again.reason
        assert again.sampled_rows == first.sampled_rows
        sb.disable(spark)
        assertDataFrameEqual(got, spark.read.parquet(path).repartition(4, "k"))
        rows.limit(100).write.mode("append").parquet(path)   # one file more
        sb.enable(spark)
        got, jobs, fresh = call()
        assert jobs >= 1 and "earlier call" not in fresh.reason
        sb.disable(spark)
        assertDataFrameEqual(got, spark.read.parquet(path).repartition(4, "k"))
    finally:
        sb.disable(spark)
