"""Per-key window state (Fang et al. §2.1 memory model) and the fold of one batch into it.

A key's stored *entry* is a small list ``[state, nbytes, segments]``:

- ``state``: the user's state after the last batch that touched the key;
- ``nbytes``: S(k), the bytes the key would carry if moved: ``state_size(state)`` when the
  user gave one, else the pickled size of what actually migrates (state + segments);
- ``segments``: ``None`` for an unbounded window, else the values of the key in each of the
  last ``window`` batches as ``[(seq, values), ...]``.

Window semantics. Fang et al. keep, per key, only the state of the last ``w`` intervals
("the task instance erases the state from time interval t-w after finishing interval t");
S(k) = Σ_{i=t-w+1..t} s_i(k). We implement exactly that: with ``window=w`` the state of a
key after batch t is the fold of its values of batches t-w+1..t (older contributions are
dropped by replaying the remaining segments from the initial state; a key with no values in
the window disappears). With an ``inverse`` (like ``reduceByKeyAndWindow``'s ``invFunc``) the
values that leave the window are subtracted instead — one update and one inverse per record
rather than up to ``w`` replays; the result is the same when ``inverse`` undoes ``update``.
``window=None`` is the unbounded running state (the usual
``updateStateByKey`` semantics); its S(k) is the size of the state.

Pure Python: no pyspark import (runs inside executors and in unit tests).
"""
from __future__ import annotations

import copy
import pickle
from typing import Any, Callable, Iterable

__all__ = ["StateFold", "check_window", "entry_state", "PICKLE_PROTOCOL"]

#: Pickle protocol used to measure S(k): the one PySpark's CPickleSerializer ships with
#: (``pickle.HIGHEST_PROTOCOL``), so the measured bytes are the bytes that move.
PICKLE_PROTOCOL: int = pickle.HIGHEST_PROTOCOL

UpdateFn = Callable[[Any, Any], Any]
UpdateValuesFn = Callable[[Any, list], "tuple[Any, Iterable[Any] | None]"]


def check_window(window: Any) -> int | None:
    """Validate ``window``: ``None`` (unbounded) or an int >= 1 (batches kept per key).

    Examples
    --------
    >>> check_window(3), check_window(None)
    (3, None)
    """
    if window is None:
        return None
    if isinstance(window, bool) or not isinstance(window, int):
        raise TypeError(f"window={window!r}; expected None (unbounded) or an int >= 1")
    if window < 1:
        raise ValueError(f"window={window}; expected None (unbounded) or an int >= 1")
    return window


def entry_state(entry: list) -> Any:
    """The user's state held by a stored entry."""
    return entry[0]


class StateFold:
    """How one key's values of a batch update its entry (picklable; shipped to executors).

    Parameters
    ----------
    update : ``update(state, value) -> state`` folds one value; the key's output for the
        batch is its new state. Give this or ``update_values``.
    update_values : ``update_values(state, values) -> (new_state, outputs)``, the general
        form over all values of one key in one batch; ``outputs`` is an iterable (or None)
        of outputs emitted as ``(key, output)``.
    initial : state of a new key: a zero-argument callable is called per key, any other
        value is deep-copied per key (so ``initial=[]`` is safe).
    window : ``None`` or batches kept per key (see module docstring).
    state_size : optional ``state_size(state) -> bytes`` for S(k); default pickled size.
    inverse : optional ``inverse(state, value) -> state`` undoing ``update(state, value)``
        (with ``update`` and a ``window`` only): expired values are taken out with it
        instead of replaying the window. The caller guarantees that it is an inverse
        (``inverse(update(s, v), v) == s``, with ``update`` commutative over values), as
        with Spark's ``invFunc``.

    A new state of ``None`` deletes the key (as Spark's ``updateStateByKey``).

    Examples
    --------
    >>> f = StateFold(update=lambda s, v: s + v, initial=0)
    >>> e, out = f.apply(None, [1, 2], seq=0)
    >>> e[0], out
    (3, [3])
    >>> f3 = StateFold(update=lambda s, v: s + v, initial=0, window=2)
    >>> e, _ = f3.apply(None, [1], seq=0); e, _ = f3.apply(e, [10], seq=1)
    >>> e, _ = f3.apply(e, [100], seq=2); e[0]   # batch 0 fell out of the window
    110
    """

    def __init__(self, update: UpdateFn | None = None, initial: Any = None,
                 update_values: UpdateValuesFn | None = None, window: int | None = None,
                 state_size: Callable[[Any], float] | None = None,
                 inverse: UpdateFn | None = None) -> None:
        if (update is None) == (update_values is None):
            raise ValueError("give exactly one of update=(state, value) -> state or "
                             "update_values=(state, values) -> (state, outputs); got "
                             f"update={update!r}, update_values={update_values!r}")
        for name, fn in (("update", update), ("update_values", update_values),
                         ("state_size", state_size)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{name}={fn!r}; expected a callable")
        if inverse is not None:
            if not callable(inverse):
                raise TypeError(f"inverse={inverse!r}; expected a callable")
            if update is None or window is None:
                raise ValueError("inverse= needs update=(state, value) -> state and a window "
                                 f"(got update={update!r}, window={window!r}): it takes "
                                 "the values that leave the window out of the state")
        self.inverse = inverse
        self.update = update
        self.update_values = update_values
        self.initial = initial
        self.window = check_window(window)
        self.state_size = state_size
        #: ``weight(values) -> records`` of one key's values of a batch, the planner's c(k)
        #: (:func:`~sparkbalance.state.frames.blocks.merge_blocks`): ``update_values.weight``
        #: when it has one, else None (each value one record).
        self.weight = getattr(update_values, "weight", None)

    # -- pieces
    def new_state(self) -> Any:
        init = self.initial
        return init() if callable(init) else copy.deepcopy(init)

    def fold(self, state: Any, values: list) -> tuple[Any, list]:
        """Apply one batch of values of one key: ``(new_state, outputs)``."""
        if self.update_values is not None:
            res = self.update_values(state, values)
            if not (isinstance(res, tuple) and len(res) == 2):
                raise TypeError(f"update_values returned {type(res).__name__}; expected a "
                                "(new_state, outputs) pair")
            new, outs = res
            return new, ([] if outs is None else list(outs))
        upd = self.update
        for v in values:
            state = upd(state, v)
        return state, [state]

    def finish(self, outputs: list) -> list:
        """A merge task's ``(key, output)`` list after its last key: passed to
        ``update_values.finish_outputs(outputs)`` when it has one (a per-task step, e.g.
        converting many keys' outputs at once), else returned as it is."""
        hook = getattr(self.update_values, "finish_outputs", None)
        return outputs if hook is None else hook(outputs)

    def size_of(self, state: Any, segments: list | None) -> float:
        """S(k) of an entry (see module docstring)."""
        if self.state_size is not None:
            size = float(self.state_size(state))
            if not (size >= 0):
                raise ValueError(f"state_size returned {size!r}; expected a number >= 0")
            return size
        return float(len(pickle.dumps((state, segments), protocol=PICKLE_PROTOCOL)))

    def _without(self, entry: list, kept: list) -> Any:
        """The state of ``entry`` with only the ``kept`` segments: inverse the expired values
        when an inverse was given, else replay ``kept`` from the initial state."""
        if self.inverse is None:
            return self._replay(kept)
        inv, state = self.inverse, entry[0]
        for s in entry[2][: len(entry[2]) - len(kept)]:   # segments are in batch order
            for v in s[1]:
                state = inv(state, v)
        return state

    def _replay(self, segments: list) -> Any:
        state = self.new_state()
        for _, vals in segments:
            state, _ = self.fold(state, vals)
        return state

    # -- the two operations the blocks need
    def apply(self, entry: list | None, values: list, seq: int) -> tuple[list | None, list]:
        """Fold this batch's ``values`` (non-empty) into ``entry``; return (entry, outputs).

        ``entry`` None means a new key. Returns entry None when the state became None.
        """
        w = self.window
        if w is None:
            state = self.new_state() if entry is None else entry[0]
            state, outs = self.fold(state, values)
            if state is None:
                return None, outs
            return [state, self.size_of(state, None), None], outs
        segments = [] if entry is None else [s for s in entry[2] if s[0] > seq - w]
        if entry is None:
            state = self.new_state()
        elif len(segments) != len(entry[2]):
            state = self._without(entry, segments)  # older contributions left the window
        else:
            state = entry[0]
        state, outs = self.fold(state, values)
        segments.append((seq, list(values)))
        if state is None:
            return None, outs
        return [state, self.size_of(state, segments), segments], outs

    def expire(self, entry: list, seq: int) -> list | None:
        """Drop the segments of ``entry`` older than the window ending at ``seq`` (a batch
        without values for the key). None when nothing of the key remains."""
        w = self.window
        if w is None:
            return entry
        segments = entry[2]
        if segments and segments[0][0] > seq - w:
            return entry  # nothing expired (segments are in batch order)
        kept = [s for s in segments if s[0] > seq - w]
        if not kept:
            return None
        state = self._without(entry, kept)
        if state is None:
            return None
        return [state, self.size_of(state, kept), kept]
