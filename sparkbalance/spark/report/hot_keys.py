"""The hot keys of a balance record: which keys weigh most, and where they went.

A record names its heaviest keys as ``sb.diagnose`` does (top keys with their share of the
rows) and, for each, the partition plain Spark would have put it on (*before*) and the one
sparkbalance put it on (*after*; for a splitting strategy, the partitions its records were
spread over, with the share each got). The Balance tab shows them next to the load bars, so a
reader names the hot key without opening the statistics.

Loads of a splitting function (PKG, D-/W-Choices, TAG) depend on the order records arrive
in: :func:`split_loads` replays the key statistics through the fitted function as one map
task would see them (each key's records interleaved with the others', in a fixed
pseudo-random order), so the record shows an estimate, marked as such, not a measurement.

Examples
--------
>>> hk = hot_keys(np.array(["a", "b", "c"], dtype=object), np.array([6., 3., 1.]),
...               np.array([6., 3., 1.]), 10.0, np.array([1, 1, 0]), np.array([0, 1, 1]), k=2)
>>> [(h["key"], h["share"], h["before"], h["after"]) for h in hk]
[('a', 0.6, 1, 0), ('b', 0.3, 1, 1)]
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["TOP_KEYS", "SIMULATED_RECORDS", "key_label", "hot_keys", "split_loads",
           "split_fields"]

#: Keys named per record (diagnose lists 10; the tab's row has room for a few).
TOP_KEYS = 5
#: Records replayed through a splitting function to estimate its loads (counts are scaled
#: down to this total: the shares, not the absolute counts, decide the routing).
SIMULATED_RECORDS = 100_000


def key_label(k: Any) -> Any:
    """A JSON value naming key ``k``: numbers, strings, booleans and None as they are,
    tuples as lists, anything else as its ``repr``.

    Examples
    --------
    >>> key_label(np.int64(3)), key_label(("u", 1)), key_label(b"x")
    (3, ['u', 1], "b'x'")
    """
    if hasattr(k, "item") and not isinstance(k, (bytes, str)):
        k = k.item()
    if k is None or isinstance(k, (bool, int, str)):
        return k
    if isinstance(k, float):
        return k if np.isfinite(k) else repr(k)
    if isinstance(k, tuple):
        return [key_label(x) for x in k]
    return repr(k)


def hot_keys(keys: np.ndarray, counts: np.ndarray, cost: np.ndarray, total_count: float,
             before: np.ndarray | None, after: Any, k: int = TOP_KEYS) -> list[dict[str, Any]]:
    """The ``k`` heaviest keys (by cost) as record entries: ``key``, ``share`` (of all
    records, listed or not), ``load`` (cost), ``before`` (partition, None when unknown) and
    ``after`` (a partition, or for a splitting function ``{partition: share of the key}``).

    Parameters
    ----------
    keys, counts, cost : the key statistics (one entry per key).
    total_count : records of the whole data (tail included): the share's denominator.
    before : where plain Spark puts each key, or None.
    after : where sparkbalance puts each key (array), or a list of ``{p: share}`` per key.
    """
    cost = np.asarray(cost, dtype=np.float64)
    order = np.argsort(-cost, kind="stable")[: max(0, int(k))]
    out = []
    for i in order.tolist():
        a = None if after is None else after[i]
        out.append({"key": key_label(keys[i]),
                    "share": float(counts[i]) / total_count if total_count > 0 else None,
                    "load": float(cost[i]),
                    "before": None if before is None else int(before[i]),
                    "after": ({str(p): float(s) for p, s in a.items()} if isinstance(a, dict)
                              else None if a is None else int(a))})
    return out


def split_loads(f: Any, keys: np.ndarray, counts: np.ndarray, cost: np.ndarray,
                seed: int = 0) -> tuple[list[float], list[dict[int, float]]]:
    """Estimated loads per partition of splitting function ``f`` and, per key, the share of
    its records each partition got: the statistics replayed through a fresh copy of ``f`` as
    one map task (records interleaved in a fixed pseudo-random order).

    Examples
    --------
    >>> from sparkbalance.routing.pkg import PKGPartitioner
    >>> loads, spread = split_loads(PKGPartitioner(4), np.array(["hot0", "x"], dtype=object),
    ...                             np.array([90., 10.]), np.array([90., 10.]))
    >>> round(sum(loads)), len(spread[0]) == 2      # the hot key is split over its 2 choices
    (100, True)
    """
    import copy

    n = int(f.num_partitions)
    counts = np.asarray(counts, dtype=np.float64)
    scale = min(1.0, SIMULATED_RECORDS / max(float(counts.sum()), 1.0))
    reps = np.maximum(np.rint(counts * scale), (counts > 0).astype(np.float64)).astype(np.int64)
    idx = np.repeat(np.arange(len(keys)), reps)
    np.random.default_rng(seed).shuffle(idx)
    g = copy.deepcopy(f)  # a fresh local load estimate, as a new map task has
    where = np.asarray(g.assign(keys[idx]), dtype=np.int64)
    per_key = np.zeros((len(keys), n))
    np.add.at(per_key, (idx, where), 1.0)
    shares = per_key / np.maximum(per_key.sum(axis=1, keepdims=True), 1.0)
    unit = np.asarray(cost, dtype=np.float64) / np.maximum(reps, 1)  # cost per replayed record
    loads = np.bincount(where, weights=unit[idx], minlength=n)[:n]
    spread = [{int(p): float(s) for p in np.flatnonzero(row) for s in (row[p],)}
              for row in shares]
    return loads.tolist(), spread


def split_fields(f: Any, keys: np.ndarray, counts: np.ndarray, cost: np.ndarray,
                 total_count: float, before: np.ndarray | None) -> dict[str, Any]:
    """The record fields of a splitting function fitted on key statistics: estimated
    ``loads_after`` (:func:`split_loads`), ``hot_keys`` with the partitions each was spread
    over, and ``split_keys``, the heaviest keys that landed on more than one partition.

    Examples
    --------
    >>> from sparkbalance.routing.pkg import PKGPartitioner
    >>> r = split_fields(PKGPartitioner(4), np.array(["hot0", "x"], dtype=object),
    ...                  np.array([90., 10.]), np.array([90., 10.]), 100.0, None)
    >>> r["split_keys"][0]["key"], r["loads_after_estimated"]
    ('hot0', True)
    """
    loads, spread = split_loads(f, keys, counts, cost)
    every = hot_keys(keys, counts, cost, total_count, before, spread, k=len(keys))
    return {"loads_after": loads, "loads_after_estimated": True, "hot_keys": every[:TOP_KEYS],
            "split_keys": [h for h in every if len(h["after"]) > 1][:TOP_KEYS]}
