"""Demo: keyed state over a shifting Zipf stream, rebalanced by moving only the delta.

The stream follows seed 000 §5: Zipf key frequencies whose hot keys swap between
partitions every interval (:mod:`sparkbalance.state.shifting`). The same batches run
through :class:`~sparkbalance.state.operator.KeyedStateOperator` under "none" (plain hash),
"mixed", "mintable" (routing tables, seed 000) and "ssm" (key groups, seed 003), with a
sliding window of ``w`` batches so S(k) grows with the key's frequency (the paper's memory
model). Per batch it records max/avg load, moved state and batch time; it prints a summary
table and writes ``stream.png`` to ``out`` (matplotlib optional, tqdm optional).

``python -m sparkbalance demo --part stream [--quick]``
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

__all__ = ["main", "run_stream", "summarise", "DEMO_PLANNERS", "busy_count"]

DEMO_PLANNERS: tuple[str, ...] = ("none", "mixed", "mintable", "ssm")


def busy_count(work: int = 200, io_us: float = 0.0) -> Any:
    """``update_values`` of the demo: count records, with ``work`` loop steps of CPU per
    record (200 ≈ 10 µs) and ``io_us`` µs of waiting per record (an I/O-bound update, e.g.
    a lookup in an external store), so that a partition's task time follows its record
    count. Waiting, unlike CPU work, lets n tasks run side by side on a 2-core machine, so
    the batch time shows the slowest partition as it would on n cores."""
    wait = io_us * 1e-6

    def update_values(state: int, values: list) -> tuple[int, list]:
        acc = 0
        for v in values:
            for i in range(work):
                acc ^= (v * 31 + i) & 0xFF
        if wait:
            time.sleep(wait * len(values))
        new = state + len(values)
        return new, [new]
    return update_values


def _progress(it: Any, total: int, desc: str) -> Any:
    try:
        from tqdm.auto import tqdm
    except ImportError:  # optional
        return it
    return tqdm(it, total=total, desc=desc, leave=False, file=sys.stderr)


def run_stream(spark: Any, planner: str, batches: Sequence[list], *, num_partitions: int,
               theta: float = 0.08, window: int | None = 3, progress: bool = True,
               work: int = 200, io_us: float = 0.0, **kw: Any) -> list:
    """Run the batches through a fresh operator; return its ``history``."""
    from ..state.operator import KeyedStateOperator
    sc = spark.sparkContext
    op = KeyedStateOperator(spark, num_partitions, update_values=busy_count(work, io_us), initial=0,
                            planner=planner, theta=theta, window=window, **kw)
    it = enumerate(batches)
    if progress:
        it = _progress(it, len(batches), f"{planner:>8}")
    for t, b in it:
        op.process(sc.parallelize(b, num_partitions), batch_id=t)
    hist = list(op.history)
    op.close()
    return hist


def summarise(histories: dict[str, list], skip: int = 1) -> list[dict]:
    """One row per planner: mean/p95 batch seconds, mean max/avg load, moved state."""
    rows = []
    for name, hist in histories.items():
        h = hist[skip:] if len(hist) > skip else hist
        secs = np.array([r.batch_seconds for r in h])
        rows.append({
            "planner": name,
            "mean_s": float(secs.mean()), "p95_s": float(np.percentile(secs, 95)),
            "median_s": float(np.median(secs)),
            "imb_routed": float(np.mean([r.imbalance_before for r in h])),
            "imb_next": float(np.mean([r.imbalance_after for r in h])),
            "migrations": int(sum(r.rebalanced for r in hist)),
            "keys_moved": int(sum(r.keys_moved for r in hist)),
            "bytes_moved": float(sum(r.bytes_moved for r in hist)),
            "state_bytes": float(hist[-1].state_bytes) if hist else 0.0,
            "table": int(hist[-1].table_size) if hist else 0,
        })
    return rows


def format_table(rows: list[dict]) -> str:
    head = (f"{'planner':>9} {'mean s':>7} {'p95 s':>7} {'max/avg':>8} {'next':>6} "
            f"{'migr':>5} {'keys mv':>8} {'MB moved':>9} {'vs mixed':>8} {'|R|':>5}")
    base = next((r["bytes_moved"] for r in rows if r["planner"] == "mixed"), 0.0)
    lines = [head, "-" * len(head)]
    for r in rows:
        ratio = r["bytes_moved"] / base if base else float("nan")
        lines.append(f"{r['planner']:>9} {r['mean_s']:7.2f} {r['p95_s']:7.2f} "
                     f"{r['imb_routed']:8.3f} {r['imb_next']:6.3f} {r['migrations']:5d} "
                     f"{r['keys_moved']:8d} {r['bytes_moved'] / 1e6:9.3f} {ratio:8.2f} "
                     f"{r['table']:5d}")
    return "\n".join(lines)


def plot(histories: dict[str, list], path: Path) -> Path | None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # optional
        return None
    fig, axes = plt.subplots(3, 1, figsize=(8, 9), sharex=True)
    for name, hist in histories.items():
        x = [r.seq for r in hist]
        axes[0].plot(x, [r.imbalance_before for r in hist], marker=".", label=name)
        axes[1].plot(x, np.cumsum([r.bytes_moved for r in hist]) / 1e6, label=name)
        axes[2].plot(x, [r.batch_seconds for r in hist], label=name)
    axes[0].set_ylabel("max / avg load")
    axes[0].axhline(1.0, color="grey", lw=0.5)
    axes[1].set_ylabel("state moved (MB, cumulative)")
    axes[2].set_ylabel("batch time (s)")
    axes[2].set_xlabel("batch")
    axes[0].legend()
    axes[0].set_title("Keyed state over a shifting Zipf stream (seed 000 §5)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def make_batches(num_keys: int, num_partitions: int, num_batches: int, records: int,
                 z: float, f: float, seed: int) -> list[list]:
    from ..state.shifting import batch_records, shifting_zipf_counts
    return [batch_records(k, c, seed=seed + t) for t, (k, c) in enumerate(
        shifting_zipf_counts(num_keys, num_partitions, num_batches, z=z,
                             records_per_batch=records, f=f, seed=seed))]


def main(quick: bool = False, out: str = "demo-out", argv: list[str] | None = None) -> int:
    """Entry point of ``python -m sparkbalance demo`` (stream part)."""
    p = argparse.ArgumentParser(prog="sparkbalance demo stream")
    p.add_argument("--batches", type=int, default=8 if quick else 30)
    p.add_argument("--keys", type=int, default=500 if quick else 5000)
    p.add_argument("--records", type=int, default=3000 if quick else 20000)
    p.add_argument("--work", type=int, default=20, help="CPU loop steps per record")
    p.add_argument("--io-us", type=float, default=100.0,
                   help="simulated I/O wait per record, microseconds")
    p.add_argument("--fluctuation", type=float, default=0.5,
                   help="share of the paper's per-interval load shift (seed 000 §5 f)")
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--zipf", type=float, default=1.0)
    p.add_argument("--theta", type=float, default=0.08)
    p.add_argument("--window", type=int, default=3)
    p.add_argument("--planners", default=",".join(DEMO_PLANNERS))
    args, _ = p.parse_known_args(argv or [])
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    # One task slot per partition: the per-record cost is mostly waiting (see busy_count),
    # so n slots on 2 cores still run the n tasks of a batch side by side.
    spark = (SparkSession.builder.master(f"local[{args.partitions}]")
             .appName("sparkbalance-demo-stream")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        batches = make_batches(args.keys, args.partitions, args.batches, args.records,
                               args.zipf, args.fluctuation, seed=7)
        histories: dict[str, list] = {}
        t0 = time.perf_counter()
        for planner in args.planners.split(","):
            histories[planner] = run_stream(spark, planner, batches,
                                            num_partitions=args.partitions, theta=args.theta,
                                            window=args.window, work=args.work,
                                            io_us=args.io_us)
        print(f"\nKeyed state, shifting Zipf z={args.zipf} (fluctuation f={args.fluctuation}): "
              f"{args.batches} batches x {args.records} records, {args.keys} keys, "
              f"n={args.partitions}, θ={args.theta}, window={args.window}, "
              f"{args.io_us:g} µs I/O per record ({time.perf_counter() - t0:.0f} s)")
        print("max/avg = load of each batch under the layout it was routed with; next = "
              "under the layout planned after it")
        print(format_table(summarise(histories)))
        png = plot(histories, Path(out) / "stream.png")
        if png is not None:
            print(f"plot: {png}")
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(quick="--quick" in sys.argv, argv=sys.argv[1:]))
