"""Blocks: ``{key: entry}`` dicts (see :mod:`sparkbalance.state.frames.window`) and how a batch
block ``{key: [values]}`` is merged into one.

A batch is routed with the state's partition function and grouped into one block per
partition; :mod:`sparkbalance.state.frames.format` stores the state as one block per key group
and merges the batch block into the groups it touches with :func:`merge_blocks`.

These functions run inside Spark tasks; they are pure Python (no pyspark import) so that
the unit tests exercise them without a SparkContext.
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from sparkbalance.state.frames.window import StateFold

__all__ = ["group_block", "merge_blocks", "prepare_block", "BlockStats"]

#: Per-block statistics: (pid, keys, cost, memory, num_keys).
BlockStats = tuple


def group_block(it: Iterable[tuple[Any, Any]]) -> list[dict[Any, list]]:
    """The records of one partition as exactly one block ``{key: [values in order]}``.

    Examples
    --------
    >>> group_block([("a", 1), ("b", 2), ("a", 3)])
    [{'a': [1, 3], 'b': [2]}]
    """
    block: dict[Any, list] = {}
    for k, v in it:
        vals = block.get(k)
        if vals is None:
            block[k] = [v]
        else:
            vals.append(v)
    return [block]


def prepare_block(fold: StateFold, batch: dict[Any, list]) -> dict[Any, list]:
    """A merge task's whole batch block, before its keys are folded: passed to
    ``update_values.prepare_block(batch)`` when it has one (a per-task step, e.g.
    converting all keys' rows at once; the values it returns must weigh what the values
    it replaced weighed), else returned as it is. Not with a ``window`` (its segments keep
    the values as they came).

    Examples
    --------
    >>> prepare_block(StateFold(update=lambda s, v: s + v, initial=0), {"a": [1]})
    {'a': [1]}
    """
    hook = getattr(fold.update_values, "prepare_block", None)
    if hook is None or not batch or fold.window is not None:
        return batch
    return hook(batch)


def _stats(pid: int, block: dict, cost: dict) -> BlockStats:
    keys = list(block)
    c = np.fromiter((cost.get(k, 0) for k in keys), dtype=np.float64, count=len(keys))
    mem = np.fromiter((e[1] for e in block.values()), dtype=np.float64, count=len(keys))
    return (pid, keys, c, mem, len(keys))


def merge_blocks(pid: int, state: dict, batch: dict[Any, list], fold: StateFold, seq: int
                 ) -> tuple[dict, list, BlockStats]:
    """Merge one batch block into one state block (the same partition).

    Returns ``(new_state_block, outputs, stats)``: outputs are ``(key, output)`` pairs;
    stats ``(pid, keys, c, S, nkeys)`` give c(k) = records of the key in this batch and
    S(k) = its entry size (frames sum them per group). The records of a key are its
    values, or ``fold.weight(values)`` when the fold has a weight hook (a value that
    stands for several records, e.g. a chunk of k rows, weighs k). ``state`` is modified in place:
    it is a fresh copy deserialised from the cache for this task.

    Examples
    --------
    >>> f = StateFold(update=lambda s, v: s + v, initial=0)
    >>> blk, out, st = merge_blocks(0, {}, {"a": [1, 2]}, f, seq=0)
    >>> blk["a"][0], out, st[1], st[2].tolist()
    (3, [('a', 3)], ['a'], [2.0])
    >>> f.weight = lambda values: 10 * len(values)
    >>> merge_blocks(0, {}, {"a": [1, 2]}, f, seq=0)[2][2].tolist()
    [20.0]
    """
    outputs: list = []
    cost: dict[Any, int] = {}
    weight = getattr(fold, "weight", None)     # absent on a fold pickled before it
    if fold.window is not None:
        for k in [k for k in state if k not in batch]:
            e = fold.expire(state[k], seq)
            if e is None:
                del state[k]
            else:
                state[k] = e
    for k, values in batch.items():
        entry, outs = fold.apply(state.get(k), values, seq)
        if entry is None:
            state.pop(k, None)
        else:
            state[k] = entry
        for o in outs:
            outputs.append((k, o))
        cost[k] = len(values) if weight is None else weight(values)
    return state, outputs, _stats(pid, state, cost)




