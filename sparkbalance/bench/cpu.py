"""CPU seconds of a local benchmark, and a CPU-bound neighbour to run it beside.

In a ``local[n]`` session the driver (this Python process), the JVM it starts and the
JVM's Python workers are all descendants of this process, so the CPU time of that process
tree — user + system, with the reaped children's included — is the CPU the benchmark
cost, driver and executors together. The task metrics cannot give that: a task's
``executorCpuTime`` counts the JVM thread only, not the Python worker doing the work.

:func:`cpu_hog` starts one busy process pinned to one core, so a benchmark can show how
each planner degrades when a core is shared (a batch's slowest task then sets its time).

Linux (``/proc``); elsewhere :class:`ProcessTreeCPU` counts this process and its reaped
children only.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from typing import Iterator

__all__ = ["ProcessTreeCPU", "BatchCPU", "cpu_hog"]

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


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
        children: dict[int, list[int]] = {}
        for pid, (ppid, _) in table.items():
            children.setdefault(ppid, []).append(pid)
        total, todo = 0.0, [self.root]
        while todo:
            pid = todo.pop()
            if pid in self.exclude or pid not in table:
                continue
            total += table[pid][1]
            todo.extend(children.get(pid, ()))
        return total


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
