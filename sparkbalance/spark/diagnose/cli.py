"""``python -m sparkbalance diagnose PATH --key COL``: the skew report of a Parquet/CSV file.

The options are checked before Spark starts (:func:`check_cli`: a local path that exists,
``--partitions >= 1``, matplotlib for ``--plot``), so a wrong option fails at once, not after
the statistics pass. The report is :func:`~sparkbalance.spark.diagnose.skew_report.diagnose`'s.

Examples
--------
>>> import argparse
>>> p = argparse.ArgumentParser().add_subparsers()
>>> add_cli(p).parse_args(["t.csv", "--key", "user"]).key
['user']
"""
from __future__ import annotations

import argparse
from typing import Any

from sparkbalance.spark.diagnose.skew_report import check_plot, diagnose

__all__ = ["add_cli", "check_cli", "run_cli"]


def add_cli(sub: Any) -> argparse.ArgumentParser:
    """Register ``diagnose PATH --key COL [--partitions N]`` on an argparse subparsers."""
    p = sub.add_parser("diagnose", help="skew report of a Parquet/CSV file's keys",
                       description="One statistics pass over PATH: rows and distinct keys, "
                                   "top keys, the lower bound, the max/avg load of plain "
                                   "Spark hash partitioning and of every key-grouping "
                                   "strategy, and a recommendation.")
    p.add_argument("path", metavar="PATH", help="a Parquet file/folder or a CSV file")
    p.add_argument("--key", action="append", required=True, metavar="COL",
                   help="key column (repeat for a multi-column key)")
    p.add_argument("--partitions", type=int, default=None, metavar="N",
                   help="partitions to plan for (default spark.sql.shuffle.partitions)")
    p.add_argument("--format", choices=["auto", "parquet", "csv"], default="auto")
    p.add_argument("--plot", metavar="PNG", help="also save the plot here (matplotlib)")
    p.add_argument("--master", default="local[*]", help="Spark master (local[*])")
    return p


def check_cli(args: argparse.Namespace) -> str | None:
    """What is wrong with the ``diagnose`` command's options, checked before Spark starts
    (None: nothing). A local ``PATH`` must exist; ``--plot`` needs matplotlib.

    Examples
    --------
    >>> check_cli(argparse.Namespace(path="/no/such.csv", partitions=None, plot=None))
    "PATH '/no/such.csv' does not exist"
    """
    from pathlib import Path
    if "://" not in str(args.path) and not Path(args.path).exists():
        return f"PATH {str(args.path)!r} does not exist"
    if args.partitions is not None and args.partitions < 1:
        return f"--partitions {args.partitions}; expected >= 1"
    if args.plot:
        try:
            check_plot()
        except ImportError as exc:
            return f"--plot {args.plot}: {exc}"
    return None


def run_cli(args: argparse.Namespace) -> int:
    """Run the ``diagnose`` command; prints the report, returns 0 (2, with the reason on
    stderr, when :func:`check_cli` refuses the options: no Spark started)."""
    import os
    import sys
    problem = check_cli(args)
    if problem:
        print(f"python -m sparkbalance diagnose: error: {problem}", file=sys.stderr)
        return 2
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master(args.master).appName("sparkbalance-diagnose")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    fmt = args.format
    if fmt == "auto":
        fmt = "csv" if str(args.path).lower().endswith((".csv", ".csv.gz")) else "parquet"
    reader = spark.read.option("header", True).option("inferSchema", True)
    df = reader.csv(args.path) if fmt == "csv" else spark.read.parquet(args.path)
    report = diagnose(df, *args.key, num_partitions=args.partitions)
    print(report)
    if args.plot:
        report.plot(args.plot)
        print(f"plot: {args.plot}")
    return 0
