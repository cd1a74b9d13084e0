"""Demo: keyed state over a shifting Zipf stream, rebalanced by moving only the delta.

The stream follows Fang et al. §5: Zipf key frequencies whose hot keys swap between
partitions every interval (:func:`sparkbalance.planning.synthetic.fluctuate`); an interval
may span several batches (``batches_per_interval``: the key distribution of a real stream
persists for a while, and a controller that reacts after a batch can only help the
batches that follow in the same interval). The same batches run through
:class:`~sparkbalance.state.operator.KeyedStateOperator` under "none" (plain hash),
"mixed", "mintable" (routing tables, Fang et al.) and "ssm" (key groups, Ding et al.), and
optionally through "plain" (:class:`~sparkbalance.bench.plain.PlainStateStream`: what plain
Spark does, the whole state cogrouped with every batch, as ``DStream.updateStateByKey``), with a sliding window
of ``w`` batches so S(k) grows with the key's frequency (the paper's memory model).

Workload. Per record the update waits ``io_us`` µs (an I/O-bound update, e.g. a lookup in
an external store) and spins ``work`` loop steps; the session runs ``local[n]`` with
n = partitions, so the n merge tasks of a batch wait side by side even on a 2-core machine
and the batch time is set by the slowest partition, as on n cores. (With CPU-bound work and
n > cores the skew never sets the batch time: the cores are busy either way.)

Runs are interleaved: batch t of every planner runs before batch t+1 of any, in a rotating
order, so background load on a shared machine hits every planner alike
(:func:`sparkbalance.bench.streams.run_streams`).

``python -m sparkbalance demo --part stream [--quick] [--planners none,mixed,...]``; the
planner names are those of :func:`sparkbalance.strategies.available` (``state=True``), plus
``plain``.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from sparkbalance.bench.plain import PLAIN
from sparkbalance.bench.report import format_table, plot_stream, summarise
from sparkbalance.bench.session import local_session, warm_up
from sparkbalance.bench.streams import parse_spec, run_streams
from sparkbalance.bench.workloads import make_batches

__all__ = ["OPTIONS", "DEMO_PLANNERS", "main"]

#: The comparison the demo shows: plain hash ("none"), two routing-table planners of
#: Fang et al. and the key-group planner of Ding et al. (registry names or aliases).
DEMO_PLANNERS: tuple[str, ...] = ("none", "mixed", "mintable", "ssm")

#: Options of the stream part: (flags, argparse keywords). A default of None means "full
#: run value, quick value" as given in the help; :func:`main` resolves it.
OPTIONS: list[tuple[tuple[str, ...], dict]] = [
    # 30 batches of 20000 records: six shift intervals, enough for the straggler to
    # outweigh the migrations (at 20 x 16000 the ratios swung 0.98-1.17x between runs).
    (("--batches",), dict(type=int, help="stream: batches (default 30, quick 6)")),
    (("--keys",), dict(type=int, help="stream: distinct keys (default 5000, quick 1000)")),
    (("--records",), dict(type=int, help="stream: records per batch (default 20000, quick 4000)")),
    (("--work",), dict(type=int, help="stream: CPU loop steps per record (default 20)")),
    (("--io-us",), dict(type=float,
                        help="stream: simulated I/O wait per record, µs (default 100)")),
    (("--fluctuation",), dict(type=float, help="stream: share of the per-interval load shift "
                              "(f of Fang et al. §5; default 1.0)")),
    (("--interval",), dict(type=int, help="stream: batches per interval of the stream (hot "
                           "keys move between intervals; default 5)")),
    (("--partitions",), dict(type=int, help="stream: partitions n, on local[n] (default 8)")),
    (("--zipf",), dict(type=float, help="stream: Zipf exponent z (default 1.0)")),
    (("--theta",), dict(type=float, help="stream: θ_max of the controller (default 0.08)")),
    (("--window",), dict(type=int, help="stream: sliding window in batches (default 3)")),
    (("--planners",), dict(help="stream: comma list of registry strategies (aliases "
                           "none/ssm accepted), 'plain', NAME@THETA for a planner's own "
                           f"θ_max (default {','.join(DEMO_PLANNERS)})")),
]


def _resolve(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with the stream part's defaults filled in (full or ``--quick``)."""
    q = bool(getattr(args, "quick", False))
    defaults = dict(batches=6 if q else 30, keys=1000 if q else 5000,
                    records=4000 if q else 20000, work=20, io_us=100.0, fluctuation=1.0,
                    interval=5, partitions=8, zipf=1.0, theta=0.08, window=3,
                    planners=",".join(DEMO_PLANNERS))
    out = argparse.Namespace(**{k: getattr(args, k, None) for k in defaults},
                             out=getattr(args, "out", "demo-out"))
    for k, v in defaults.items():
        if getattr(out, k) is None:
            setattr(out, k, v)
    return out


def main(args: argparse.Namespace) -> int:
    """Run the stream part of ``python -m sparkbalance demo``; returns an exit code.

    ``args`` carries the :data:`OPTIONS` (None: default), ``quick`` and ``out``.

    Examples
    --------
    >>> main(argparse.Namespace(quick=True, out="demo-out"))     # doctest: +SKIP
    0
    """
    args = _resolve(args)
    planners = [p for p in args.planners.split(",") if p]
    for p in planners:
        parse_spec(p, args.theta)       # an unknown name fails before Spark starts
    spark = local_session(args.partitions, "sparkbalance-demo-stream")
    try:
        batches = make_batches(args.keys, args.partitions, args.batches, args.records,
                               args.zipf, args.fluctuation, seed=7,
                               batches_per_interval=args.interval)
        warm_up(spark, args.partitions)
        t0 = time.perf_counter()
        histories = run_streams(spark, planners, batches,
                                num_partitions=args.partitions, theta=args.theta,
                                window=args.window, work=args.work, io_us=args.io_us)
        print(f"\nKeyed state, shifting Zipf z={args.zipf} (fluctuation f={args.fluctuation} "
              f"every {args.interval} batches): {args.batches} batches x {args.records} "
              f"records, {args.keys} keys, n={args.partitions} (local[{args.partitions}]), "
              f"θ={args.theta}, window={args.window}, {args.io_us:g} µs I/O per record "
              f"({time.perf_counter() - t0:.0f} s, planners interleaved batch by batch)")
        print("max/avg = load of each batch under the layout it was routed with; next = "
              "under the layout planned after it; times exclude batch 0")
        if PLAIN in histories:
            print(f"{PLAIN} = plain Spark (state.cogroup(batch) per batch, as "
                  "updateStateByKey)")
        print(format_table(summarise(histories)))
        png = plot_stream(histories, Path(args.out) / "stream.png")
        if png is not None:
            print(f"plot: {png}")
    finally:
        spark.stop()
    return 0
