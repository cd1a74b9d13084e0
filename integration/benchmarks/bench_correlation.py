"""Benchmark of the correlation-based planners of Xing et al. (Borealis, ICDE 2005).

The experiments (Table 3, Figs. 3, 4, 6–8 and 10, Table 1's plan times) live in
:mod:`sparkbalance.bench.reproduce.xing`, the same code as
``python -m sparkbalance reproduce xing``; this script runs them with the load average
printed beside them.

Run: ``python integration/benchmarks/bench_correlation.py [--quick] [--out DIR]``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sparkbalance.bench.reproduce import xing  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one load level, one seed")
    ap.add_argument("--out", type=Path, default=ROOT / "bench-out")
    args = ap.parse_args()
    t0 = time.perf_counter()
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    xing.run(args.out, quick=args.quick)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s; load average at end "
          f"{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
