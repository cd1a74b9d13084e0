"""Benchmark: CPU of the drop-in's merge tasks per micro-batch, in one process, no Spark.

The per-key fixed work of ``stateful(...).applyInPandasWithState`` (each key's frames,
its ``GroupState``, the function's call, the outputs' conversion, the state entry's
encoding) measured where a profile can see it: the merge of each partition
(:func:`~sparkbalance.state.frames.merge.merge_partition`, routed ``R`` frames as the
routing shuffle writes them) runs in this process over a Zipf stream whose hot keys move
every 5 batches. CPU seconds of the process (``time.process_time``) do not depend much on
the machine's load, unlike wall time; the user function is the benchmark's running count
(it builds one output frame per key, as Spark's own would cost).

Usage: ``python integration/benchmarks/bench_merge_task.py [--batches 8] [--rows 20000]
[--keys 5000] [--partitions 8] [--z 1.0] [--reps 5] [--groups 256]``; prints CPU s per
batch (median of ``reps`` merges of one batch into the state of the ones before it), the
merged state's keys and bytes. ``--groups``: the state's key groups G (the operator's
``num_groups``; a merge writes a frame per touched group and partition, so with G x
partitions near the state's keys the per-frame work weighs as much as the per-key work).
"""
from __future__ import annotations

import argparse
import pickle
import statistics
import time

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql.types import LongType, StructField, StructType

from sparkbalance.state.frames import format as fr
from sparkbalance.state.frames.merge import merge_partition
from sparkbalance.state.frames.window import StateFold
from sparkbalance.state.pandas_state.arrow_input import arrow_schema, key_chunks
from sparkbalance.state.pandas_state.arrow_rows import RowConverter
from sparkbalance.state.pandas_state.group_call import GroupCall

GROUPS = 256


def count(key, pdfs, state):
    """The user function of ``bench_stateful.py`` at 0 us a record."""
    n = sum(len(p) for p in pdfs)
    total = (state.get[0] if state.exists else 0) + n
    state.update((total,))
    yield pd.DataFrame({"k": [key[0]], "n": [total]})


def fold() -> StateFold:
    long_ = LongType()
    s_in = StructType([StructField("k", long_), StructField("v", long_)])
    s_out = StructType([StructField("k", long_), StructField("n", long_)])
    call = GroupCall(count, RowConverter(s_in, s_out, "UTC", 10_000), [0],
                     StructType([StructField("n", long_)]), "NoTimeout", None)
    return StateFold(update_values=call, initial=None)


def batch_frames(t: int, rows: int, keys: int, parts: int, z: float, groups: int = GROUPS
                 ) -> list[list[bytes]]:
    """Batch ``t``'s ``R`` frames per partition: Arrow messages of 10,000 rows cut by key
    (the routing map task's :func:`key_chunks`), keys placed by hash."""
    schema = arrow_schema(StructType([StructField("k", LongType()),
                                      StructField("v", LongType())]))
    w = 1.0 / np.arange(1, keys + 1) ** z
    perm = np.random.default_rng(t // 5).permutation(keys)
    ks = perm[np.random.default_rng(1000 + t).choice(keys, size=rows, p=w / w.sum())]
    b = pa.record_batch([pa.array(ks, pa.int64()), pa.array(np.ones(rows, np.int64))],
                        schema=schema)
    msgs = [b.slice(o, 10_000).serialize().to_pybytes() for o in range(0, rows, 10_000)]
    by_part: list[list] = [[] for _ in range(parts)]
    for k, chunk in key_chunks(msgs, schema, [0]):
        by_part[hash(k) % parts].append((k, chunk))
    return [[fr.chunk_frame(items, pickle.dumps(items, protocol=5), groups)] if items
            else [] for items in by_part]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--keys", type=int, default=5_000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--z", type=float, default=1.0)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--groups", type=int, default=GROUPS)
    a = ap.parse_args(argv)
    f, parts = fold(), a.partitions
    state: list[list[bytes]] = [[] for _ in range(parts)]
    per_batch = []
    for t in range(a.batches):
        frames = batch_frames(t, a.rows, a.keys, parts, a.z, a.groups)
        cpu, merged = [], None
        for _ in range(a.reps):
            c0 = time.process_time()
            merged = [list(merge_partition(p, state[p] + frames[p], f, t, a.groups, False,
                                           None, None, True)) for p in range(parts)]
            cpu.append(time.process_time() - c0)
        state = [[x for x in out if x[0] == fr.TAG_STATE] for out in merged]
        per_batch.append(statistics.median(cpu))
    nkeys = sum(fr.header(x).nkeys for fs in state for x in fs)
    nbytes = sum(len(x) for fs in state for x in fs)
    print(f"{a.batches} batches x {a.rows} rows, {a.keys} keys (Zipf {a.z}), "
          f"{parts} partitions, {a.groups} key groups: merge CPU s per batch (median of {a.reps}) "
          f"{[round(c, 3) for c in per_batch]}; median {statistics.median(per_batch):.3f}; "
          f"state {nkeys} keys, {nbytes} bytes")


if __name__ == "__main__":
    main()
