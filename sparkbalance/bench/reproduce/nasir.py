"""Nasir et al., "The Power of Both Choices: Practical Load Balancing for Distributed Stream
Processing Engines" (Partial Key Grouping, ICDE 2015), §6.2 Q1–Q3, simulated.

* Table II: fraction of average imbalance for hashing (KG), PoTC, On-Greedy, Off-Greedy and
  PKG at W ∈ {5, 10, 50, 100} workers. The paper's streams (Wikipedia, Twitter) are not
  available; we use its synthetic families instead — Zipf (ZF) and log-normal (LN1:
  μ = 1.789, σ = 2.366 over 16k keys; Table I) — and print the paper's WP/TW figures
  beside ours for the shape of the comparison, not as the same experiment.
* Q2 / Fig. 4–5: PKG with global load (G), local estimation with S = 5 sources (L5) and
  local estimation with periodic probing (L5P).
* Q3 / Fig. 7: the transition — PKG's imbalance against the Zipf exponent; balance breaks
  once the hottest key's share p_1 exceeds 2/W (§5: two workers cannot absorb it).

Metric (the paper's "fraction of average imbalance", "normalized to the size of the
dataset"): I(t) = max_i L_i(t) − avg_i L_i(t) averaged over 50 evenly spaced checkpoints,
divided by the stream length m.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from sparkbalance.routing.hash import HashPartitioner
from sparkbalance.routing.pkg import PKGPartitioner
from sparkbalance.routing.pkg_baselines import (OffGreedyPartitioner, OnGreedyPartitioner,
                                      PoTCPartitioner, ProbingPKGPartitioner)
from sparkbalance.bench.reproduce.common import format_rows, line_plot

__all__ = ["run", "imbalance_fraction", "zipf_stream", "lognormal_stream", "PAPER_TABLE2"]

#: Table II of Nasir et al. (WP, TW) per scheme, at W = 5, 10, 50, 100.
PAPER_TABLE2: dict[str, dict[str, tuple[float, ...]]] = {
    "WP": {"PKG": (3.7e-8, 1.3e-7, 2.7e-2, 3.7e-2), "Off-Greedy": (3.7e-8, 4.1e-8, 7.4e-2, 8.3e-2),
           "On-Greedy": (3.6e-7, 6.4e-3, 7.4e-2, 8.3e-2), "PoTC": (7.3e-7, 7.8e-3, 7.4e-2, 8.3e-2),
           "Hashing": (6.4e-2, 7.8e-2, 9.2e-2, 9.2e-2)},
    "TW": {"PKG": (3.4e-10, 1.4e-9, 2.3e-9, 3.4e-3), "Off-Greedy": (3.4e-10, 6e-10, 6.7e-3, 1.7e-2),
           "On-Greedy": (7.2e-9, 7.9e-8, 1.0e-2, 1.7e-2), "PoTC": (1.9e-5, 4.3e-6, 1.2e-2, 1.7e-2),
           "Hashing": (3.5e-2, 3.2e-2, 2.0e-2, 2.8e-2)},
}
WORKERS = (5, 10, 50, 100)
CHECKPOINTS = 50


def zipf_stream(num_keys: int, z: float, m: int, seed: int = 1) -> np.ndarray:
    """``m`` keys drawn i.i.d. with f(r) ∝ r^-z over ranks 1..K (Nasir et al. §6.1, ZF).

    Examples
    --------
    >>> s = zipf_stream(100, 1.0, 1000); s.shape, int(s.min()) >= 0
    ((1000,), True)
    """
    p = np.arange(1, num_keys + 1, dtype=float) ** (-z)
    rng = np.random.default_rng(seed)
    return rng.choice(num_keys, size=m, p=p / p.sum())


def lognormal_stream(num_keys: int, mu: float, sigma: float, m: int, seed: int = 1
                     ) -> np.ndarray:
    """``m`` keys whose frequencies follow a log-normal law (Nasir et al. §6.1, LN1/LN2)."""
    rng = np.random.default_rng(seed)
    f = rng.lognormal(mu, sigma, num_keys)
    f = np.sort(f)[::-1]
    return rng.choice(num_keys, size=m, p=f / f.sum())


def imbalance_fraction(assignment: np.ndarray, n: int) -> float:
    """Mean over checkpoints t of max L(t) − avg L(t), divided by the stream length m.

    Examples
    --------
    >>> imbalance_fraction(np.array([0, 1] * 50), 2) < 0.02
    True
    """
    m = assignment.shape[0]
    ts = np.unique(np.linspace(m / CHECKPOINTS, m, CHECKPOINTS).astype(int))
    onehot_counts = [np.bincount(assignment[:t], minlength=n) for t in ts]
    return float(np.mean([c.max() - c.mean() for c in onehot_counts])) / m


def _schemes(stream: np.ndarray, n: int) -> dict[str, np.ndarray]:
    keys, counts = np.unique(stream, return_counts=True)
    freq = dict(zip(keys.tolist(), counts.tolist()))
    return {
        "Hashing": HashPartitioner(n).assign(stream),
        "PoTC": PoTCPartitioner(n).assign(stream),
        "On-Greedy": OnGreedyPartitioner(n).assign(stream),
        "Off-Greedy": OffGreedyPartitioner(freq, n).assign(stream),
        "PKG": PKGPartitioner(n).assign(stream),
    }


def _local(stream: np.ndarray, n: int, sources: int, period: int | None) -> np.ndarray:
    """PKG with ``sources`` sources (records dealt round-robin, i.e. shuffle grouping),
    local estimation, optionally probing the true loads every ``period`` records."""
    truth = [0.0] * n
    if period is None:
        srcs = [PKGPartitioner(n) for _ in range(sources)]
    else:
        srcs = [ProbingPKGPartitioner(n, probe=lambda: truth, period=period)
                for _ in range(sources)]
    out = np.empty(stream.shape[0], dtype=np.int64)
    for j, k in enumerate(stream.tolist()):
        p = srcs[j % sources](k)
        truth[p] += 1.0
        out[j] = p
    return out


def run(out: Path, quick: bool = False) -> str:
    """Run the experiments, print and return the tables, write plots under ``out``."""
    m = 10_000 if quick else 100_000
    workers = (5, 10) if quick else WORKERS
    streams = {"ZF z=1.0 K=10^4": zipf_stream(10_000, 1.0, m),
               "LN1 (μ=1.789 σ=2.366, 16k keys)": lognormal_stream(16_000, 1.789, 2.366, m)}
    texts = []
    # Table II
    for sname, s in streams.items():
        p1 = np.bincount(s).max() / s.shape[0]
        res = {W: _schemes(s, W) for W in workers}
        rows = []
        names = list(next(iter(res.values())))
        for name in names:
            ours = [imbalance_fraction(res[W][name], W) for W in workers]
            paper = [PAPER_TABLE2["WP"][name][WORKERS.index(W)] for W in workers]
            rows.append([name, *ours, *paper])
        header = ["scheme", *[f"W={W}" for W in workers], *[f"WP W={W}" for W in workers]]
        texts.append(format_rows(f"Nasir et al. Table II on {sname} (p1 = {p1:.2%}, m = {m}); "
                                 "paper's Wikipedia column for reference", header, rows))
        line_plot(out / f"nasir_table2_{sname.split()[0]}.png", f"Table II, {sname}",
                  "workers W", "fraction of average imbalance",
                  {r[0]: (workers, r[1:1 + len(workers)]) for r in rows}, logx=True, logy=True)
    # Q2: global vs local vs probing
    s = streams["ZF z=1.0 K=10^4"]
    rows = []
    for W in workers:
        g = imbalance_fraction(_local(s, W, 1, 1), W)
        loc = imbalance_fraction(_local(s, W, 5, None), W)
        lp = imbalance_fraction(_local(s, W, 5, max(1, m // 100)), W)
        h = imbalance_fraction(HashPartitioner(W).assign(s), W)
        rows.append([W, h, g, loc, lp])
    texts.append(format_rows("Nasir et al. Fig. 4-5: PKG global (G), local with 5 sources "
                             "(L5), local + probing every 1% of the stream (L5P); paper: L "
                             "within an order of magnitude of G, probing does not help",
                             ["W", "H", "G", "L5", "L5P"], rows))
    line_plot(out / "nasir_local_global.png", "PKG load estimation (ZF z=1.0)", "workers W",
              "fraction of average imbalance",
              {c: (workers, [r[i + 1] for r in rows]) for i, c in
               enumerate(["H", "G", "L5", "L5P"])}, logx=True, logy=True)
    # Q3: transition at p1 = 2/W
    zs = (0.6, 1.0, 1.4) if quick else (0.4, 0.8, 1.0, 1.2, 1.4, 2.0)
    mz = m // 2
    rows, series = [], {}
    for W in workers:
        ys = []
        for z in zs:
            st = zipf_stream(10_000, z, mz, seed=3)
            p1 = np.bincount(st).max() / mz
            imb = imbalance_fraction(PKGPartitioner(W).assign(st), W)
            ys.append(imb)
            rows.append([W, z, p1, 2 / W, "yes" if p1 > 2 / W else "no", imb])
        series[f"W={W}"] = (zs, ys)
    texts.append(format_rows("Nasir et al. Fig. 7 / §5: PKG imbalance vs Zipf exponent; "
                             "balance breaks once p1 > 2/W",
                             ["W", "z", "p1", "2/W", "p1>2/W", "PKG imbalance"], rows))
    line_plot(out / "nasir_transition.png", "PKG vs skew (ZF K=10^4)", "Zipf exponent z",
              "fraction of average imbalance", series, logy=True)
    text = "\n\n".join(texts)
    print(text, flush=True)
    return text
