"""The keyed-state stream benchmark's summary table and its goals: per planner the batch
time (mean, p95), migrations, state moved, Spark jobs per batch (with and without a
migration) and CPU seconds per batch, as medians over interleaved runs.

Goals checked (shifting stream, Fang et al. §5): Mixed's mean batch time <= 0.7x no
rebalancing's and <= 0.6x plain Spark's (the whole state cogrouped per batch); Mixed's CPU
per batch <= 1.1x no rebalancing's; migrations <= 2x the real shifts of the distribution;
a batch that migrates runs no more Spark jobs than one that does not (the migration rides
in the batch's own shuffle). Beside them, how much of the reachable gain Mixed takes: the
clairvoyant Mixed's (``oracle:mixed``, :mod:`.clairvoyant`) when it ran, and a bound below
it (none's batches with every stage's tasks even).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from sparkbalance.bench.clairvoyant import ORACLE_PREFIX
from sparkbalance.bench.plain import PLAIN

__all__ = ["stream_rows", "median_stream_rows", "format_stream_table", "stream_goals"]


def stream_rows(histories: dict[str, list], prof_rows: list[dict] | None,
                cpu_means: dict[str, float] | None, skip: int) -> list[dict]:
    """One row per planner of one run: ``mean_s, p95_s`` (batches ``>= skip``),
    ``vs_none, vs_plain`` (ratios of the means), ``migrations``, ``mb_moved``,
    ``jobs`` (per batch), ``jobs_steady``/``jobs_migrating`` (batches without/with a
    migration — one that decides a migration or the next one, whose shuffle carries it;
    nan when there is none), ``cpu_s`` (per batch) and ``cpu_vs_none``, ``even_s`` (the
    mean batch had every stage's tasks taken their mean time, from the profile: for
    "none", the floor of any rebalancing) and ``even_vs_none`` (it over none's mean).

    Examples
    --------
    >>> from sparkbalance.bench.plain import PlainRecord
    >>> r = PlainRecord(0, 1.0, 1.5, 1.5, 0, 0.0, 10.0, 3)
    >>> stream_rows({"plain": [r, r]}, None, {"plain": 2.0}, 0)[0]["cpu_s"]
    2.0
    """
    decided = {(name, r.seq) for name, h in histories.items() for r in h if r.rebalanced}
    migrated = decided | {(name, seq + 1) for name, seq in decided}
    rows = []
    for name, hist in histories.items():
        h = hist[skip:] if len(hist) > skip else hist
        secs = np.array([r.batch_seconds for r in h], dtype=float)
        jobs: dict[bool, list] = {True: [], False: []}
        even = []
        for p in prof_rows or ():
            if p["name"] == name and p["seq"] >= skip:
                jobs[(name, p["seq"]) in migrated].append(p["jobs"])
                if "balanced_s" in p:
                    even.append(p["balanced_s"])
        rows.append({
            "planner": name, "mean_s": float(secs.mean()),
            "p95_s": float(np.percentile(secs, 95)),
            "migrations": int(sum(bool(r.rebalanced) for r in hist)),
            "mb_moved": float(sum(r.bytes_moved for r in hist)) / 1e6,
            "jobs": _mean(jobs[True] + jobs[False]),
            "jobs_steady": _mean(jobs[False]), "jobs_migrating": _mean(jobs[True]),
            "cpu_s": float((cpu_means or {}).get(name, float("nan"))),
            "even_s": _mean(even),
        })
    by = {r["planner"]: r for r in rows}
    for r in rows:
        for ref, field in (("none", "vs_none"), (PLAIN, "vs_plain")):
            base = by.get(ref, {}).get("mean_s", float("nan"))
            r[field] = r["mean_s"] / base if base > 0 else float("nan")
        base = by.get("none", {}).get("cpu_s", float("nan"))
        r["cpu_vs_none"] = r["cpu_s"] / base if base > 0 else float("nan")
        base = by.get("none", {}).get("mean_s", float("nan"))
        r["even_vs_none"] = r["even_s"] / base if base > 0 else float("nan")
    return rows


def _mean(xs: list) -> float:
    return float(np.mean(xs)) if xs else float("nan")


def median_stream_rows(runs: list[list[dict]]) -> list[dict]:
    """Per planner, the median over runs of every numeric field (nan-aware: a run without
    a migrating batch does not count for ``jobs_migrating``); ratios are medians of the
    per-run ratios.

    Examples
    --------
    >>> median_stream_rows([[{"planner": "a", "mean_s": 1.0}], [{"planner": "a",
    ...     "mean_s": 3.0}], [{"planner": "a", "mean_s": float("nan")}]])
    [{'planner': 'a', 'mean_s': 2.0}]
    """
    out = []
    for rows in zip(*runs):
        row: dict[str, Any] = {"planner": rows[0]["planner"]}
        for k, v in rows[0].items():
            if k == "planner":
                continue
            vals = np.array([r[k] for r in rows], dtype=float)
            med = float(np.median(vals[~np.isnan(vals)])) if (~np.isnan(vals)).any() \
                else float("nan")
            row[k] = int(round(med)) if isinstance(v, int) and med == med else med
        out.append(row)
    return out


def format_stream_table(rows: list[dict]) -> str:
    """The rows of :func:`stream_rows` (or their medians) as a text table.

    Examples
    --------
    >>> row = dict(planner="none", mean_s=1.0, p95_s=1.2, vs_none=1.0, vs_plain=0.5,
    ...            migrations=0, mb_moved=0.0, jobs=1.0, jobs_steady=1.0,
    ...            jobs_migrating=float("nan"), cpu_s=2.0, cpu_vs_none=1.0)
    >>> format_stream_table([row]).splitlines()[2].split()[:3]
    ['none', '1.00', '1.20']
    """
    head = (f"{'planner':>12} {'mean s':>7} {'p95 s':>7} {'vs none':>7} {'vs plain':>8} "
            f"{'migr':>5} {'MB moved':>9} {'jobs/b':>6} {'steady':>6} {'migr.b':>6} "
            f"{'CPU s/b':>7} {'CPU/none':>8} {'even/none':>9}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['planner']:>12} {r['mean_s']:7.2f} {r['p95_s']:7.2f} "
                     f"{r['vs_none']:7.2f} {r['vs_plain']:8.2f} {r['migrations']:5d} "
                     f"{r['mb_moved']:9.2f} {r['jobs']:6.2f} {r['jobs_steady']:6.2f} "
                     f"{r['jobs_migrating']:6.2f} {r['cpu_s']:7.2f} {r['cpu_vs_none']:8.2f} "
                     f"{r.get('even_vs_none', float('nan')):9.2f}")
    return "\n".join(lines)


def stream_goals(rows: list[dict], shifts: int, planner: str = "mixed") -> list[str]:
    """One ``goal: value -> met/MISSED`` line per goal of the module docstring.

    Examples
    --------
    >>> rows = [dict(planner="mixed", vs_none=0.6, vs_plain=0.5, cpu_vs_none=1.0,
    ...              migrations=3, jobs_steady=1.0, jobs_migrating=1.0)]
    >>> stream_goals(rows, 2)[0]
    'mixed mean batch <= 0.7x none: 0.60x -> met'
    """
    by = {r["planner"]: r for r in rows}
    out = []
    r = by.get(planner)
    if r is not None:
        for what, val, limit in (("mean batch", r["vs_none"], 0.7),
                                 ("mean batch", r["vs_plain"], 0.6),
                                 ("CPU s/batch", r["cpu_vs_none"], 1.1)):
            ref = "plain" if limit == 0.6 else "none"
            out.append(f"{planner} {what} <= {limit}x {ref}: {val:.2f}x -> "
                       f"{_verdict(val <= limit, val)}")
        oracle = by.get(ORACLE_PREFIX + planner)
        if oracle is not None and oracle["vs_none"] < 1:
            got = (1 - r["vs_none"]) / (1 - oracle["vs_none"])
            out.append(f"  (clairvoyant {planner}, planned on each batch's exact work and "
                       f"moved untimed before it: {oracle['vs_none']:.2f}x none; {planner} "
                       f"takes {got:.0%} of its gain)")
        floor = by.get("none", {}).get("even_vs_none", float("nan"))
        if floor == floor and floor < 1:
            got = (1 - r["vs_none"]) / (1 - floor)
            out.append(f"  (none with every stage's tasks even: {floor:.2f}x none, a bound "
                       f"that treats the work as divisible; {planner} takes {got:.0%} of "
                       "that gain)")
    for name, row in by.items():
        if name in ("none", PLAIN) or name.startswith(ORACLE_PREFIX):
            continue
        m = row["migrations"]
        out.append(f"{name} migrations <= 2 x {shifts} real shifts: {m} -> "
                   f"{_verdict(m <= 2 * shifts, m)}")
        a, b = row["jobs_migrating"], row["jobs_steady"]
        if a == a:
            out.append(f"{name} jobs of a migrating batch <= a steady one's: {a:.2f} vs "
                       f"{b:.2f} -> {_verdict(a <= b, a + b)}")
    return out


def _verdict(ok: bool, value: float) -> str:
    if value != value:
        return "not measured"
    return "met" if ok else "MISSED"
