"""Command line: ``python -m sparkbalance demo|submit-args ...``."""
from __future__ import annotations

import argparse
import importlib
import shlex
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sparkbalance",
                                     description="sparkbalance demos and benchmarks")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="skewed, shifting workload under several strategies")
    demo.add_argument("--quick", action="store_true", help="small sizes (seconds, for CI)")
    demo.add_argument("--out", default="demo-out", help="folder for the plots")
    demo.add_argument("--part", choices=["all", "reduce", "stream"], default="all")
    submit = sub.add_parser("submit-args",
                            help="print the spark-submit arguments (--py-files, --jars, --conf) "
                                 "that ship this installation to a cluster")
    submit.add_argument("--zip", default=None,
                        help="where to write the --py-files zip (default: a temp folder)")
    args, rest = parser.parse_known_args(argv)
    if args.command == "submit-args":
        if rest:
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        from .spark.submit import submit_args
        print(" ".join(shlex.quote(a) for a in submit_args(args.zip)))
        return 0
    if args.command == "demo":
        parts = ["reduce", "stream"] if args.part == "all" else [args.part]
        for part in parts:
            mod = importlib.import_module(f"sparkbalance.demo.{part}")
            rc = mod.main(quick=args.quick, out=args.out, argv=rest)
            if rc:
                return rc
    return 0


if __name__ == "__main__":
    sys.exit(main())
