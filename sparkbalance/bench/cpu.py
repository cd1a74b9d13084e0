"""CPU seconds and memory of a local benchmark, and a CPU-bound neighbour to run it beside.

In a ``local[n]`` session the driver (this Python process), the JVM it starts and the
JVM's Python workers are all descendants of this process, so the CPU time of that process
tree — user + system, with the reaped children's included — is the CPU the benchmark
cost, driver and executors together. The task metrics cannot give that: a task's
``executorCpuTime`` counts the JVM thread only, not the Python worker doing the work.
:func:`tree_usage` lists the same tree with each process's command line and resident
memory, and :func:`count_and_rss` sums the JVMs or the Python workers in it (the benchmarks'
"#py", "py MB", "JVM MB" columns).

:func:`cpu_hog` starts one busy process pinned to one core, so a benchmark can show how
each planner degrades when a core is shared (a batch's slowest task then sets its time).

Linux (``/proc``); elsewhere :class:`ProcessTreeCPU` counts this process and its reaped
children only, and :func:`tree_usage` finds no process.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from typing import Callable, Iterable, Iterator, NamedTuple, Sequence

__all__ = ["ProcessTreeCPU", "BatchCPU", "cpu_hog", "ProcessUsage", "tree_usage",
           "count_and_rss", "is_jvm", "is_pyspark"]

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _proc_table() -> dict[int, tuple[int, float]]:
    """``{pid: (ppid, CPU seconds incl. reaped children)}`` of every process in /proc."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                raw = f.read().decode("ascii", "replace")
        except OSError:
            continue                      # exited meanwhile
        fields = raw[raw.rfind(")") + 2:].split()   # after "pid (comm) "
        # fields[0] = state, [1] = ppid, [11..14] = utime, stime, cutime, cstime
        ticks = sum(int(x) for x in fields[11:15])
        out[int(name)] = (int(fields[1]), ticks / _TICK)
    return out


def _descendants(root: int, table: dict[int, tuple[int, float]],
                 exclude: Iterable[int] = ()) -> list[int]:
    """``root`` and every pid below it in ``table`` (parent links), minus ``exclude``'s
    subtrees; ``root`` first, [] when it is gone or excluded."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    skip = set(exclude)
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in skip or pid not in table:
            continue
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


class ProcessTreeCPU:
    """CPU seconds used so far by process ``root`` (default: this one) and every process
    below it, except the subtrees of ``exclude`` (e.g. a :func:`cpu_hog`).

    Examples
    --------
    >>> cpu = ProcessTreeCPU()
    >>> a = cpu.seconds(); _ = sum(range(10 ** 6)); cpu.seconds() >= a
    True
    """

    def __init__(self, root: int | None = None, exclude: set[int] | None = None) -> None:
        self.root = os.getpid() if root is None else int(root)
        self.exclude = set(exclude or ())

    def seconds(self) -> float:
        if not os.path.isdir("/proc"):
            import resource
            s, c = (resource.getrusage(resource.RUSAGE_SELF),
                    resource.getrusage(resource.RUSAGE_CHILDREN))
            return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime
        table = _proc_table()
        return sum(table[pid][1] for pid in _descendants(self.root, table, self.exclude))


class ProcessUsage(NamedTuple):
    """One process of a tree: its pid, command line (argv) and resident memory in MB."""

    pid: int
    argv: tuple[str, ...]
    rss_mb: float


def _argv(pid: int) -> tuple[str, ...] | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except OSError:
        return None                       # exited meanwhile
    return tuple(a.decode(errors="replace") for a in raw.split(b"\0") if a)


def _rss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * _PAGE / 2 ** 20   # [1] = resident pages
    except (OSError, IndexError, ValueError):
        return None


def tree_usage(root: int | None = None, *, include_root: bool = False
               ) -> list[ProcessUsage]:
    """Every process below ``root`` (default: this process), ``root`` itself first when
    ``include_root``; processes that exit while being read are left out.

    Parents come from ``/proc/<pid>/stat`` (as for :class:`ProcessTreeCPU`), not from
    ``/proc/<pid>/task/<tid>/children``: a JVM starts processes from many threads and each
    thread's list holds only its own children. Memory is the resident set (``statm``).

    Examples
    --------
    >>> import subprocess, sys
    >>> child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    >>> [p.pid for p in tree_usage()] == [child.pid]
    True
    >>> child.kill(); child.wait() != 0
    True
    """
    me = os.getpid() if root is None else int(root)
    if not os.path.isdir("/proc"):
        return []
    out = []
    for pid in _descendants(me, _proc_table()):
        if pid == me and not include_root:
            continue
        argv, rss = _argv(pid), _rss_mb(pid)
        if argv is not None and rss is not None:
            out.append(ProcessUsage(pid, argv, rss))
    return out


def is_jvm(argv: Sequence[str]) -> bool:
    """Whether a command line runs a JVM (its program is ``java``).

    Examples
    --------
    >>> is_jvm(["/usr/lib/jvm/bin/java", "-cp", "x"]), is_jvm(["python3", "java"])
    (True, False)
    """
    return bool(argv) and argv[0].endswith("java")


def is_pyspark(argv: Sequence[str]) -> bool:
    """Whether a command line is a PySpark Python process (daemon or worker): it names
    pyspark and is no JVM (a Spark JVM's class path names ``.../pyspark/jars`` too).

    Examples
    --------
    >>> is_pyspark(["python3", "-m", "pyspark.daemon"])
    True
    >>> is_pyspark(["java", "-cp", "/venv/lib/pyspark/jars/*", "SparkSubmit"])
    False
    """
    return not is_jvm(argv) and any("pyspark" in a for a in argv)


def count_and_rss(procs: Iterable[ProcessUsage],
                  match: Callable[[Sequence[str]], bool] = lambda argv: True
                  ) -> tuple[int, float]:
    """(how many, summed RSS in MB) of the processes whose command line ``match`` accepts.

    Examples
    --------
    >>> procs = [ProcessUsage(7, ("java", "-cp", "x"), 500.0),
    ...          ProcessUsage(8, ("python3", "-m", "pyspark.daemon"), 40.0),
    ...          ProcessUsage(9, ("python3", "-m", "pyspark.daemon"), 35.5)]
    >>> count_and_rss(procs, is_pyspark), count_and_rss(procs, is_jvm)
    ((2, 75.5), (1, 500.0))
    """
    kept = [p.rss_mb for p in procs if match(p.argv)]
    return len(kept), float(sum(kept))


class BatchCPU:
    """CPU seconds of each batch of a stream benchmark (a :class:`ProcessTreeCPU` read
    before and after it), like :class:`~sparkbalance.bench.profile.BatchProfiler`.

    Examples
    --------
    >>> cpu = BatchCPU(ProcessTreeCPU())
    >>> with cpu.batch("none", 0):
    ...     _ = sum(range(10 ** 5))
    >>> list(cpu.seconds) == [("none", 0)]
    True
    """

    def __init__(self, tree: ProcessTreeCPU) -> None:
        self.tree = tree
        self.seconds: dict[tuple[str, int], float] = {}

    @contextlib.contextmanager
    def batch(self, name: str, seq: int) -> Iterator[None]:
        a = self.tree.seconds()
        try:
            yield
        finally:
            self.seconds[(name, seq)] = self.tree.seconds() - a

    def means(self, skip: int = 0) -> dict[str, float]:
        """Mean CPU seconds per batch of each planner (batches ``>= skip``)."""
        by: dict[str, list[float]] = {}
        for (name, seq), s in self.seconds.items():
            if seq >= skip:
                by.setdefault(name, []).append(s)
        return {k: sum(v) / len(v) for k, v in by.items()}


@contextlib.contextmanager
def cpu_hog(core: int = 0) -> Iterator[int | None]:
    """Run one CPU-bound process pinned to ``core`` while the block runs; yields its pid
    (None when ``core`` is outside this process's CPUs: nothing is started).

    Examples
    --------
    >>> with cpu_hog(0) as pid:                      # doctest: +SKIP
    ...     run_the_benchmark(exclude={pid})
    """
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [core]
    if core not in cpus:
        yield None
        return
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(proc.pid, {core})
        yield proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
