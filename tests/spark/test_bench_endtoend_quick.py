"""Smoke test of integration/benchmarks/bench_endtoend.py --quick (not timed): every variant
runs and they agree on the record count. Runs in a subprocess (its own local[4] JVM)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_endtoend_quick_runs():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, str(ROOT / "integration/benchmarks/bench_endtoend.py"),
                          "--quick", "--datasets", "zipf,uniform"],
                         capture_output=True, text=True, env=env, timeout=1200)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "record counts differ" not in out.stdout
    for variant in ("plain", "aqe-df", "auto", "mixed", "keygroups", "pkg"):
        assert re.search(rf"^{variant}\s", out.stdout, re.M), out.stdout
