"""The process-table readers of the benchmarks: CPU, count and RSS of a process tree."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from sparkbalance.bench import cpu

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc (Linux)")

# A child that starts a grandchild and then both sleep: a tree two deep below this process.
# The grandchild prints its own pid (through the stdout it inherits), so by the time the
# fixture reads it the grandchild's exec is done and /proc holds its argv; a pid printed by
# the child right after Popen could be read while the exec was still under way (empty argv).
_GRANDCHILD = "import os, time; print(os.getpid(), flush=True); time.sleep(60)"
_PARENT = ("import subprocess, sys, time; "
           f"subprocess.Popen([sys.executable, '-c', {_GRANDCHILD!r}, 'sb-grandchild']); "
           "time.sleep(60)")


@pytest.fixture
def tree():
    child = subprocess.Popen([sys.executable, "-c", _PARENT, "sb-child"],
                             stdout=subprocess.PIPE, text=True)
    grandchild = int(child.stdout.readline())
    yield child.pid, grandchild
    os.kill(grandchild, 9)
    child.kill()
    child.wait()
    child.stdout.close()


def test_tree_usage_lists_every_descendant_with_argv_and_rss(tree):
    child, grandchild = tree
    procs = {p.pid: p for p in cpu.tree_usage()}
    assert {child, grandchild} <= set(procs) and os.getpid() not in procs
    assert procs[child].argv[-1] == "sb-child" and procs[grandchild].argv[-1] == "sb-grandchild"
    assert all(p.rss_mb > 1.0 for p in procs.values())   # a Python interpreter: MBs resident
    below_child = cpu.tree_usage(child)
    assert [p.pid for p in below_child] == [grandchild]
    with_root = cpu.tree_usage(child, include_root=True)
    assert [p.pid for p in with_root] == [child, grandchild]


def test_count_and_rss_sums_what_the_filter_keeps(tree):
    child, grandchild = tree
    procs = cpu.tree_usage(child, include_root=True)
    n, mb = cpu.count_and_rss(procs, lambda argv: argv[-1] == "sb-grandchild")
    assert n == 1 and mb == pytest.approx(procs[1].rss_mb)
    n_all, mb_all = cpu.count_and_rss(procs)
    assert n_all == 2 and mb_all == pytest.approx(procs[0].rss_mb + procs[1].rss_mb)
    assert cpu.count_and_rss(procs, cpu.is_jvm) == (0, 0.0)


def test_gone_root_has_no_tree():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    assert cpu.tree_usage(p.pid, include_root=True) == []


def test_command_line_kinds():
    assert cpu.is_jvm(("/opt/jdk/bin/java", "-Xmx1g", "org.apache.spark.deploy.SparkSubmit"))
    assert not cpu.is_jvm(()) and not cpu.is_jvm(("python3", "-c", "java"))
    assert cpu.is_pyspark(("python3", "-m", "pyspark.daemon"))
    assert cpu.is_pyspark(("/usr/bin/python3", "/x/pyspark/python/lib/pyspark.zip/worker.py"))
    assert not cpu.is_pyspark(("java", "-cp", "/venv/site-packages/pyspark/jars/*"))


def test_process_tree_cpu_counts_a_busy_child_and_excludes_its_subtree():
    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
    busy = subprocess.Popen([sys.executable, "-c", spin + "time.sleep(60)"])
    try:
        deadline = time.monotonic() + 30
        tree = cpu.ProcessTreeCPU()
        while tree.seconds() - cpu.ProcessTreeCPU(exclude={busy.pid}).seconds() < 0.25:
            assert time.monotonic() < deadline, "the busy child's CPU never showed"
            time.sleep(0.1)
    finally:
        busy.kill()
        busy.wait()
