"""Yang et al., time-aware grouping (TAG), simulated on :mod:`sparkbalance.routing` (no
Spark): heterogeneous workers, partition i needing t_i seconds per record.

* Segment shares: the share of the heavy keys' records each partition receives against
  the target ∝ 1/t_i (Yang et al. eq. 3–4).
* Time imbalance max_i l_i / avg_i l_i with l_i = t_i · m_i, and the makespan max_i l_i
  relative to the ideal m / Σ 1/t_j, for TAG against PKG, hashing, D-Choices and
  W-Choices, over Zipf streams (z = 1.0, 1.5) on n = 8 workers of which two are slower.
Heavy keys: frequency > 1/(5n) (Nasir et al.'s Theorem 5.1 bound, which TAG takes over).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from sparkbalance.routing.choices import ChoicesPartitioner
from sparkbalance.routing.hash import HashPartitioner
from sparkbalance.routing.pkg import PKGPartitioner
from sparkbalance.routing.tag import TimeAwarePartitioner
from sparkbalance.bench.reproduce.common import format_rows, line_plot
from sparkbalance.bench.reproduce.nasir import zipf_stream

__all__ = ["run", "time_loads"]


def time_loads(assignment: np.ndarray, t: np.ndarray) -> np.ndarray:
    """l_i = t_i · m_i for the records' partitions.

    Examples
    --------
    >>> time_loads(np.array([0, 0, 1]), np.array([1.0, 3.0])).tolist()
    [2.0, 3.0]
    """
    return t * np.bincount(assignment, minlength=t.shape[0])


def run(out: Path, quick: bool = False) -> str:
    """Run the experiments, print and return the tables, write plots under ``out``."""
    n = 8
    t = np.ones(n)
    t[:2] = (2.0, 4.0)         # two slower workers
    m = 20_000 if quick else 400_000
    texts, rows, share_rows = [], [], []
    zs = (1.0, 1.5)
    ideal = m / np.sum(1.0 / t)
    for z in zs:
        s = zipf_stream(10_000, z, m, seed=5)
        keys, counts = np.unique(s, return_counts=True)
        freq = counts / m
        heavy = {int(k): float(f) for k, f in zip(keys, freq) if f > 1 / (5 * n)}
        schemes = {
            "hash": HashPartitioner(n),
            "PKG": PKGPartitioner(n),
            "D-Choices": ChoicesPartitioner(n, heavy, mode="d"),
            "W-Choices": ChoicesPartitioner(n, heavy, mode="w"),
            "TAG": TimeAwarePartitioner(n, t, heavy=heavy),
        }
        for name, f in schemes.items():
            a = f.assign(s)
            L = time_loads(a, t)
            rows.append([z, name, L.max() / L.mean(), L.max() / ideal])
        if heavy:
            a = schemes["TAG"].assign(s)
            hv = np.isin(s, np.fromiter(heavy, dtype=np.int64))
            share = np.bincount(a[hv], minlength=n) / max(int(hv.sum()), 1)
            target = (1 / t) / np.sum(1 / t)
            share_rows += [[z, i, t[i], share[i], target[i]] for i in range(n)]
    texts.append(format_rows(f"Yang et al.: time imbalance and makespan, n = {n}, t = "
                             f"{t.tolist()}, m = {m} (paper: TAG balances completion time; "
                             "count-balancing schemes overload the slow workers)",
                             ["z", "scheme", "max l / avg l", "makespan / ideal"], rows))
    texts.append(format_rows("Yang et al. eq. 3-4: TAG's share of heavy-key records per "
                             "partition vs the target ∝ 1/t_i",
                             ["z", "partition", "t_i", "share", "target"], share_rows))
    names = ["hash", "PKG", "D-Choices", "W-Choices", "TAG"]
    line_plot(out / "yang_makespan.png", "makespan / ideal vs skew", "Zipf z",
              "makespan / ideal",
              {nm: (zs, [r[3] for r in rows if r[1] == nm]) for nm in names})
    text = "\n\n".join(texts)
    print(text, flush=True)
    return text
