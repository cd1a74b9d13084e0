"""Command line: ``python -m sparkbalance demo|bench|reproduce|diagnose|submit-args ...``
(``--help`` on every command).

``submit-args`` prints the ``spark-submit`` arguments that ship this installation.
``diagnose PATH --key COL`` prints a skew report of a Parquet/CSV file
(:mod:`sparkbalance.spark.diagnose.cli`). ``demo`` runs the demos of :mod:`sparkbalance.demo` in
this process. ``reproduce PAPER``
runs the reproduction of one paper's tables and figures
(:mod:`sparkbalance.bench.reproduce`) in this process, plots under ``--out``. ``bench`` runs the
benchmark scripts ``integration/benchmarks/bench_<name>.py`` of a checkout, one process
each (each owns its Spark sessions and JVM), forwarding ``--quick`` and whatever follows
``--``. Unknown options are refused, not passed through.
"""
from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import shlex
import sys
from pathlib import Path

#: Parts of ``demo``, in the order ``--part all`` runs them.
DEMO_PARTS = ("reduce", "stream")
#: Where ``bench`` finds the benchmark scripts (a checkout of the repository).
BENCH_DIR = Path(__file__).resolve().parents[1] / "integration" / "benchmarks"


def benchmarks(folder: Path = BENCH_DIR) -> list[str]:
    """Names of the benchmarks in ``folder`` (``bench_<name>.py``), sorted.

    Examples
    --------
    >>> "state" in benchmarks()          # doctest: +SKIP
    True
    """
    return sorted(p.stem[len("bench_"):] for p in folder.glob("bench_*.py"))


def _demo_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    demo = sub.add_parser(
        "demo", help="skewed, shifting workloads under several strategies",
        description="The demos: a skewed costly reduce (part 'reduce') and keyed state over "
                    "a shifting Zipf stream (part 'stream'). Options marked 'reduce:' or "
                    "'stream:' apply to that part; shared ones to both.")
    demo.add_argument("--quick", action="store_true", help="small sizes (seconds, for CI)")
    demo.add_argument("--out", default="demo-out", help="folder for the plots (demo-out)")
    demo.add_argument("--part", choices=["all", *DEMO_PARTS], default="all",
                      help="which demo to run (all)")
    options: dict[tuple[str, ...], dict] = {}
    owners: dict[str, list[str]] = {}    # option dest -> the parts that read it
    for part in DEMO_PARTS:
        try:
            part_options = importlib.import_module(f"sparkbalance.demo.{part}").OPTIONS
        except ImportError:   # numpy missing: the other commands (submit-args) still work,
            continue          # and running the demo then fails on that import itself
        for flags, kw in part_options:
            if flags in options:   # a shared option (--keys, ...): one flag, both helps
                options[flags]["help"] += "; " + kw["help"]
            else:
                options[flags] = dict(kw)
            owners.setdefault(flags[0].lstrip("-").replace("-", "_"), []).append(part)
    group = demo.add_argument_group("workload options (default: each part's own)")
    for flags, kw in options.items():
        group.add_argument(*flags, default=None, **kw)
    demo.set_defaults(_owners=owners)
    return demo


def _bench_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    names = benchmarks()
    bench = sub.add_parser(
        "bench", help="run the benchmarks (from a checkout)",
        description="Run integration/benchmarks/bench_<NAME>.py, one process each, in this "
                    "order. Options after '--' go to every named benchmark (see "
                    "'python integration/benchmarks/bench_<NAME>.py --help').",
        usage="python -m sparkbalance bench [-h] [--quick] [--list] [NAME ...] [-- OPTION ...]")
    bench.add_argument("names", nargs="*", metavar="NAME",
                       help=f"benchmarks to run (default all: {', '.join(names) or 'none found'})")
    bench.add_argument("--quick", action="store_true", help="small sizes, passed to each")
    bench.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    return bench


def _reproduce_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from sparkbalance.bench.reproduce import available_papers
    papers = available_papers()
    rep = sub.add_parser(
        "reproduce", help="reproduce a paper's tables and figures (Spark-free simulations)",
        description="Print the tables of one paper's experiments with the paper's numbers "
                    "beside ours, and write PNG plots under --out.")
    rep.add_argument("paper", choices=papers, help="which paper: " + ", ".join(papers))
    rep.add_argument("--quick", action="store_true", help="small sizes (seconds, for CI)")
    rep.add_argument("--out", default="bench-out", help="folder for the plots (bench-out)")
    return rep


def _run_reproduce(args: argparse.Namespace) -> int:
    from sparkbalance.bench.reproduce import PAPERS
    mod = importlib.import_module(f"sparkbalance.bench.reproduce.{PAPERS[args.paper]}")
    out = Path(args.out)
    text = mod.run(out, quick=args.quick)
    out.mkdir(parents=True, exist_ok=True)
    # the tables beside the plots, for docs/results.md
    (out / f"{args.paper}{'_quick' if args.quick else ''}.txt").write_text(text + "\n")
    return 0


def _run_demo(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    parts = list(DEMO_PARTS) if args.part == "all" else [args.part]
    for dest, owners in args._owners.items():
        if getattr(args, dest) is not None and not set(owners) & set(parts):
            parser.error(f"--{dest.replace('_', '-')} is an option of part "
                         f"{'/'.join(owners)}; --part {args.part} would ignore it")
    for part in parts:
        rc = importlib.import_module(f"sparkbalance.demo.{part}").main(args)
        if rc:
            return rc
    return 0


def _run_bench(args: argparse.Namespace, forwarded: list[str],
               parser: argparse.ArgumentParser) -> int:
    names = benchmarks()
    if not names:
        parser.error(f"no benchmarks in {BENCH_DIR}: 'bench' runs from a checkout of the "
                     "repository")
    if args.list:
        print("\n".join(names))
        return 0
    unknown = [n for n in args.names if n not in names]
    if unknown:
        parser.error(f"benchmark {unknown[0]!r}; expected one of {', '.join(names)}")
    root = str(BENCH_DIR.parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    for name in args.names or names:
        cmd = [sys.executable, str(BENCH_DIR / f"bench_{name}.py")]
        cmd += (["--quick"] if args.quick else []) + forwarded
        print(f"== bench {name}: {' '.join(cmd[1:])}", flush=True)
        rc = subprocess.call(cmd, env=env)
        if rc:
            print(f"== bench {name} failed (exit {rc})", file=sys.stderr)
            return rc
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``) and run the command; returns an exit code.

    Examples
    --------
    >>> main(["bench", "--list"])        # doctest: +SKIP
    dataframe
    ...
    0
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    forwarded: list[str] = []
    if "--" in argv:   # only `bench` forwards options; argparse refuses them elsewhere
        cut = argv.index("--")
        argv, forwarded = argv[:cut], argv[cut + 1:]
    parser = argparse.ArgumentParser(prog="python -m sparkbalance",
                                     description="sparkbalance demos, benchmarks, "
                                                 "reproductions and skew reports")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = _demo_parser(sub)
    bench = _bench_parser(sub)
    _reproduce_parser(sub)
    try:
        from sparkbalance.spark.diagnose.cli import add_cli  # no pyspark import until it runs
    except ImportError:   # numpy missing: submit-args needs none of it
        add_cli = None
    if add_cli is not None:
        add_cli(sub)
    submit = sub.add_parser("submit-args",
                            help="print the spark-submit arguments (--py-files, --jars, --conf) "
                                 "that ship this installation to a cluster")
    submit.add_argument("--zip", default=None,
                        help="where to write the --py-files zip (default: a temp folder)")
    args = parser.parse_args(argv)
    if args.command == "submit-args":
        if forwarded:
            parser.error(f"unrecognized arguments: -- {' '.join(forwarded)}")
        from sparkbalance.spark.session.submit import submit_args
        print(" ".join(shlex.quote(a) for a in submit_args(args.zip)))
        return 0
    if args.command == "diagnose":
        if forwarded:
            parser.error(f"unrecognized arguments: -- {' '.join(forwarded)}")
        from sparkbalance.spark.diagnose.cli import run_cli
        return run_cli(args)
    if args.command == "reproduce":
        if forwarded:
            parser.error(f"unrecognized arguments: -- {' '.join(forwarded)}")
        return _run_reproduce(args)
    if args.command == "demo":
        if forwarded:
            parser.error(f"unrecognized arguments: -- {' '.join(forwarded)}")
        return _run_demo(args, demo)
    return _run_bench(args, forwarded, bench)


if __name__ == "__main__":
    sys.exit(main())
