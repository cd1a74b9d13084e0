"""The key sample's reads in the JVM (``io.sparkbalance.bridge.KeyLook``) count the same
(key, home) pairs as PySpark's socket path, for every key type the encoding holds, in a few
driver round trips; a key type it does not hold falls back to the socket path."""
from __future__ import annotations

import threading
from collections import Counter

import pytest

from sparkbalance.spark.session.jvm_loader import bridge_has
from sparkbalance.spark.sql.keysample import forget_kept_samples, prefixes, sample_keys
from sparkbalance.spark.sql.keysample.prefixes import KEY_LOOK_CLASS, PrefixReader

PARTS = 6
ROWS = 3_000

#: (key SQL over id, its columns' names) per key type the encoding holds, and one it does not.
KEYS = {
    "bigint": ["IF(id % 3 = 0, 5, id % 40) AS a"],
    "int+tinyint+smallint": ["CAST(id % 7 AS INT) AS a", "CAST(id % 3 AS TINYINT) AS b",
                             "CAST(-(id % 5) AS SMALLINT) AS c"],
    "string": ["IF(id % 2 = 0, 'hot é', CONCAT('k', id % 50)) AS a"],
    "binary+boolean": ["CAST(CONCAT('b', id % 9) AS BINARY) AS a", "id % 4 = 0 AS b"],
    "double (socket path)": ["CAST(id % 11 AS DOUBLE) / 2 AS a"],
}


@pytest.fixture(scope="module")
def has_key_look(spark):
    if not bridge_has(spark, KEY_LOOK_CLASS):
        pytest.skip("the bridge jar (with KeyLook) is not built")
    return True


def _keys(spark, exprs):
    df = spark.range(0, ROWS, numPartitions=PARTS).selectExpr(*exprs)
    names = [e.rsplit(" AS ", 1)[1] for e in exprs]
    return df.selectExpr(*names, f"pmod(hash({', '.join(names)}), 5) AS h"), len(names)


@pytest.mark.parametrize("kind", sorted(KEYS))
@pytest.mark.parametrize("runs,per,parts", [(False, 120, [0]), (True, 200, [1, 2]),
                                            (True, 10_000, [0, 1, 2])])
def test_the_jvm_counts_what_the_socket_path_counts(spark, has_key_look, monkeypatch, kind,
                                                    runs, per, parts):
    keys, width = _keys(spark, KEYS[kind])
    jvm = PrefixReader(keys, width, inputs=PARTS, tasks=3)
    assert jvm.in_jvm
    got = jvm.counts(runs, per, parts)
    monkeypatch.setattr(prefixes, "_key_look", lambda keys: None)
    socket = PrefixReader(keys, width, inputs=PARTS, tasks=3)
    assert not socket.in_jvm
    expected = socket.counts(runs, per, parts)
    assert got == expected
    each = min(per, ROWS // 3 if runs else ROWS // PARTS)    # 3 runs of 2 partitions each
    assert sum(got.values()) == each * len(parts)
    assert jvm.in_jvm == (kind != "double (socket path)")   # refused once: the socket path


def test_the_sample_through_the_jvm_costs_one_driver_call_per_job(spark, sc, has_key_look):
    df = spark.range(0, ROWS + 17, numPartitions=PARTS).selectExpr("id % 13 AS k")
    sample_keys(df, ["k"], 4, rows=600, look=100, could_matter=lambda c, rows: False)
    forget_kept_samples()     # the range's sample is kept: read it again
    client = sc._gateway._gateway_client
    real, sent, me = client.send_command, [], threading.get_ident()

    def counting(command, *a, **k):
        if threading.get_ident() == me:   # not a listener's callback on another thread
            sent.append(command)
        return real(command, *a, **k)
    client.send_command = counting
    try:
        got = sample_keys(df, ["k"], 4, rows=600, look=100, could_matter=lambda c, rows: False)
    finally:
        client.send_command = real
    assert sum("KeyLook" in c and "counts" in c for c in sent) == 1
    # the projection built, planned and sized, and the look: four driver calls in all
    assert len([c for c in sent if not c.startswith("m\nd\n")]) <= 4, sent
    assert got.rows == 100 and not got.spread
    assert Counter(dict(zip(got.keys, got.counts.tolist()))) == Counter(
        {k: c for k, c in Counter(i % 13 for i in range(100)).items()})


def test_decoding_a_multi_column_array():
    import struct
    data = (struct.pack(">ii", 2, 1) + struct.pack(">ii", 2, 3)
            + b"\x01" + struct.pack(">q", -4) + b"\x04\x01" + b"\x03" + struct.pack(">i", 2) + b"\x00\xff")
    assert prefixes.decode_counts(data, 3) == Counter({((-4, True, b"\x00\xff"), 3): 2})


def test_the_jvm_sample_runs_in_its_job_group_and_restores_the_callers(spark, sc,
                                                                        has_key_look):
    from sparkbalance.spark.rdd.keystats import STATS_JOB_GROUP
    df = spark.range(0, ROWS + 29, numPartitions=PARTS).selectExpr("id % 13 AS k")
    before = set(sc.statusTracker().getJobIdsForGroup(STATS_JOB_GROUP))
    sc.setJobGroup("callers-group", "the caller's jobs")
    try:
        sample_keys(df, ["k"], 4, rows=600, look=100, could_matter=lambda c, rows: False)
        assert sc.getLocalProperty("spark.jobGroup.id") == "callers-group"
        assert sc.getLocalProperty("spark.job.description") == "the caller's jobs"
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
        sc.setLocalProperty("spark.job.interruptOnCancel", None)
    assert len(set(sc.statusTracker().getJobIdsForGroup(STATS_JOB_GROUP)) - before) == 1
