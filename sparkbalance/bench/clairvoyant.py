"""The clairvoyant rebalancer of the stream benchmark: the floor of a reactive controller.

A reactive controller (Fang et al. §4) plans on the batch it measured and runs the plan on
the next one, so the batch after a shift runs the old layout, and a plan fits the next
batch only as well as one batch predicts the next. The clairvoyant one knows each coming
batch's exact work per key and moves the state to the planner's layout for it *before*
the batch, untimed (:meth:`~sparkbalance.state.operator.KeyedStateOperator.rebalance`):
the same planner with a perfect forecast and free moves. A reactive planner's distance to
it is what better prediction or cheaper moves could still gain; the benchmark names it
``oracle:<planner>``.

The exact work of a windowed key is not its records: when the key's oldest segment leaves
the window, the fold replays the segments kept (:mod:`sparkbalance.state.frames.window`), so a
batch's work per key is ``c_t(k) + [c_{t-w}(k) > 0] · Σ_{s=t-w+1}^{t-1} c_s(k)`` values
folded, where ``c_s(k)`` counts the key's records in batch ``s`` (:func:`window_work`).
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

__all__ = ["ORACLE_PREFIX", "split_oracle", "window_work"]

#: Spec prefix of a clairvoyant planner in the stream benchmark: ``oracle:mixed``.
ORACLE_PREFIX = "oracle:"


def split_oracle(spec: str) -> tuple[bool, str]:
    """``(clairvoyant?, the planner spec without the prefix)``.

    Examples
    --------
    >>> split_oracle("oracle:mixed@0.2"), split_oracle("ssm")
    ((True, 'mixed@0.2'), (False, 'ssm'))
    """
    if spec.startswith(ORACLE_PREFIX):
        return True, spec[len(ORACLE_PREFIX):]
    return False, spec


def window_work(batches: Sequence[Sequence[tuple]], t: int, window: int | None,
                counts: list[Counter] | None = None) -> dict:
    """Values the merge of batch ``t`` folds per key, window replays included.

    Parameters
    ----------
    batches : the stream's ``(key, value)`` records per batch.
    t : the batch.
    window : the state's window in batches (None: unbounded, no replays).
    counts : ``Counter`` of keys per batch, when the caller keeps them (else counted here).

    Examples
    --------
    >>> b = [[("a", 1), ("a", 1), ("b", 1)], [("a", 1)], [("b", 1)], [("a", 1)]]
    >>> window_work(b, 3, 3)        # "a" replays batches 1-2 as batch 0 leaves; "b" too
    {'a': 2, 'b': 1}
    >>> window_work(b, 3, None)
    {'a': 1}
    """
    def c(s: int) -> Counter:
        if s < 0:
            return Counter()
        return counts[s] if counts is not None else Counter(k for k, _ in batches[s])

    work = Counter(c(t))
    if window is None:
        return dict(work)
    kept = [c(s) for s in range(t - window + 1, t)]
    for k in c(t - window):
        replay = sum(cs.get(k, 0) for cs in kept)
        if replay:
            work[k] += replay
    return dict(work)
