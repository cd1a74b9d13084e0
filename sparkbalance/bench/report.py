"""Reports of the demos and benchmarks: summary rows, medians over repeats, text tables
and plots.
"""
from __future__ import annotations

import statistics
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from sparkbalance.bench.plain import PLAIN

if TYPE_CHECKING:
    from sparkbalance.bench.workloads import RunResult

__all__ = ["WARMUP_BATCHES", "summarise", "format_table", "median_rows", "plot_stream",
           "format_reduce_table"]

#: Batches excluded from the batch-time figures (Python workers start, caches fill).
WARMUP_BATCHES = 1


def summarise(histories: dict[str, list], skip: int = WARMUP_BATCHES) -> list[dict]:
    """One row per planner: batch seconds (mean/p95/median over batches after ``skip``),
    ratio of the mean to "none"'s, mean max/avg load, migrations, moved state, and
    migration/plan seconds per batch.

    Examples
    --------
    >>> from sparkbalance.bench.plain import PlainRecord
    >>> r = PlainRecord(0, 1.0, 1.5, 1.5, 0, 0.0, 10.0, 3)
    >>> summarise({"plain": [r, r]})[0]["mean_s"]
    1.0
    """
    rows = []
    for name, hist in histories.items():
        h = hist[skip:] if len(hist) > skip else hist
        secs = np.array([r.batch_seconds for r in h])
        migr = int(sum(r.rebalanced for r in hist))
        mig_s = float(sum(r.migration_seconds for r in h))
        rows.append({
            "planner": name,
            "mean_s": float(secs.mean()), "p95_s": float(np.percentile(secs, 95)),
            "median_s": float(np.median(secs)),
            "imb_routed": float(np.mean([r.imbalance_before for r in h])),
            "imb_next": float(np.mean([r.imbalance_after for r in h])),
            "migrations": migr,
            "keys_moved": int(sum(r.keys_moved for r in hist)),
            "bytes_moved": float(sum(r.bytes_moved for r in hist)),
            "state_bytes": float(hist[-1].state_bytes) if hist else 0.0,
            "table": int(hist[-1].table_size) if hist else 0,
            "mig_s_batch": mig_s / max(1, len(h)),
            "mig_s_each": mig_s / max(1, sum(r.rebalanced for r in h)),
            "plan_s_batch": float(np.mean([r.plan_seconds for r in h])) if h else 0.0,
        })
    base = next((r["mean_s"] for r in rows if r["planner"] == "none"), float("nan"))
    for r in rows:
        r["vs_none"] = r["mean_s"] / base if base == base and base > 0 else float("nan")
    return rows


def format_table(rows: list[dict]) -> str:
    """The rows of :func:`summarise` as a text table (bytes ratio relative to "mintable").

    Examples
    --------
    >>> from sparkbalance.bench.plain import PlainRecord
    >>> r = PlainRecord(0, 1.0, 1.5, 1.5, 0, 0.0, 10.0, 3)
    >>> format_table(summarise({"plain": [r]})).splitlines()[2].split()[:3]
    ['plain', '1.00', '1.00']
    """
    head = (f"{'planner':>12} {'mean s':>7} {'p95 s':>7} {'vs none':>7} {'max/avg':>8} "
            f"{'next':>6} {'migr':>5} {'mig s/b':>7} {'plan s/b':>8} {'keys mv':>8} "
            f"{'MB moved':>9} {'/mintab':>7} {'|R|':>5}")
    base = next((r["bytes_moved"] for r in rows if r["planner"] == "mintable"), 0.0)
    lines = [head, "-" * len(head)]
    for r in rows:
        ratio = r["bytes_moved"] / base if base else float("nan")
        lines.append(f"{r['planner']:>12} {r['mean_s']:7.2f} {r['p95_s']:7.2f} "
                     f"{r.get('vs_none', float('nan')):7.2f} "
                     f"{r['imb_routed']:8.3f} {r['imb_next']:6.3f} {r['migrations']:5d} "
                     f"{r['mig_s_batch']:7.3f} {r['plan_s_batch']:8.4f} "
                     f"{r['keys_moved']:8d} {r['bytes_moved'] / 1e6:9.3f} {ratio:7.2f} "
                     f"{r['table']:5d}")
    return "\n".join(lines)


def plot_stream(histories: dict[str, list], path: Path) -> Path | None:
    """Per batch and planner: max/avg load, cumulative state moved and batch seconds.

    Three stacked panels written to ``path`` (PNG); ``None`` without matplotlib (an
    optional dependency). The plain-Spark baseline is left out of the middle panel: it
    re-shuffles the whole state every batch, a scale of its own.

    Examples
    --------
    >>> plot_stream(histories, Path("demo-out/stream.png"))     # doctest: +SKIP
    PosixPath('demo-out/stream.png')
    """
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
        if name != PLAIN:  # plain re-shuffles the whole state each batch: own scale
            axes[1].plot(x, np.cumsum([r.bytes_moved for r in hist]) / 1e6, label=name)
        axes[2].plot(x, [r.batch_seconds for r in hist], label=name)
    axes[0].set_ylabel("max / avg load")
    axes[0].axhline(1.0, color="grey", lw=0.5)
    axes[1].set_ylabel("state moved (MB, cumulative)")
    axes[2].set_ylabel("batch time (s)")
    axes[2].set_xlabel("batch")
    axes[0].legend()
    axes[0].set_title("Keyed state over a shifting Zipf stream (Fang et al. §5)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def median_rows(runs: list[list[dict]]) -> list[dict]:
    """Per planner, the median over repeats of every numeric field of :func:`summarise`.

    ``runs`` holds one list of rows per repeat, planners in the same order; integer
    fields stay integers.

    Examples
    --------
    >>> median_rows([[{"planner": "a", "mean_s": 1.0, "migrations": 1}],
    ...              [{"planner": "a", "mean_s": 3.0, "migrations": 2}],
    ...              [{"planner": "a", "mean_s": 2.0, "migrations": 4}]])
    [{'planner': 'a', 'mean_s': 2.0, 'migrations': 2}]
    """
    out = []
    for rows in zip(*runs):
        row = {"planner": rows[0]["planner"]}
        for k, v in rows[0].items():
            if k != "planner":
                med = statistics.median(r[k] for r in rows)
                row[k] = type(v)(med) if isinstance(v, int) else med
        out.append(row)
    return out


def format_reduce_table(results: list["RunResult"], num_partitions: int) -> str:
    """The costly reduce of every strategy as a text table (ratios relative to "hash").

    Columns: records per partition, max/avg of records and of task seconds, the slowest
    task's wall and CPU seconds, the job's wall time, and the fitting time.

    Examples
    --------
    >>> from sparkbalance.bench.workloads import RunResult
    >>> r = RunResult("hash", [3, 1], [0.3, 0.1], [0.3, 0.1], 0.5, 0.0, {})
    >>> format_reduce_table([r], 2).splitlines()[2].split()[:5]
    ['hash', '3', '1', '1.50', '1.50']
    """
    n = num_partitions
    head = (f"{'strategy':<10} {'records/partition':<{max(18, 8 * n)}} {'rec max/avg':>11} "
            f"{'time max/avg':>12} {'crit.path s':>11} {'crit.cpu s':>10} {'cpu vs hash':>11} "
            f"{'wall s':>7} {'vs hash':>7} {'fit s':>6}")
    lines = [head, "-" * len(head)]
    base = next((r.wall for r in results if r.strategy == "hash"), None)
    base_cpu = next((max(r.cpu) for r in results if r.strategy == "hash"), None)
    for r in results:
        parts = " ".join(f"{c:>7d}" for c in r.records)
        ratio = f"{r.wall / base:6.2f}x" if base else "   -  "
        cpu_ratio = f"{max(r.cpu) / base_cpu:10.2f}x" if base_cpu else "   -  "
        lines.append(f"{r.strategy:<10} {parts:<{max(18, 8 * n)}} {r.imbalance:>11.2f} "
                     f"{r.time_imbalance:>12.2f} {max(r.seconds):>11.2f} {max(r.cpu):>10.2f} "
                     f"{cpu_ratio:>11} {r.wall:>7.2f} {ratio:>7} {r.fit_seconds:>6.2f}")
    return "\n".join(lines)
