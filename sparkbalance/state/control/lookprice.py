"""What looking ahead costs a batch as the user pays it: batches with it minus without.

The look-ahead's job boundary, measured from its parts (:func:`~sparkbalance.state.control.
lookahead.boundary_seconds`: the map-stage job's wall beyond its tasks' span, the driver's
time until the merge is built), misses what a second job costs the rest of the batch: on the
flights stream it read 0.054 s while a batch with the look-ahead took ~0.1 s longer than
one without, so ``lookahead="auto"`` kept looking ahead where it did not pay. The price
is taken here at the depth the user pays it: the whole batch's seconds.

A batch's seconds are ``F + b · L_max`` (:mod:`~sparkbalance.state.control.payoff`) plus,
when it looked ahead, the price. The part the balance decides (``b · L_max``, with the
payoff model's ``b`` as fitted when the price is asked: the first batches' ``b`` is a
guess) is taken off, so a looked-ahead batch's better balance does
not count as a lower price — the gain is weighed separately, as the lag it removes. What is
left is divided by the batch's work (records, or measured seconds with a listener), so
batches of different sizes compare; the price of the coming batch is the difference of the
medians of the two kinds over their last :data:`SAMPLES` batches, times its work. Batches
that carried a move are left out (their excess is the move's, which the payoff model
learns). Medians, because on a shared machine single batches swing by more than the price.

While either kind has fewer than :data:`MIN_SAMPLES` batches the price is unknown, and a
controller that would look ahead explores: it takes the kind with fewer (:meth:`LookPrice.
explore`). Once known, a kind not taken for :data:`REFRESH` batches is taken once again, so
a price learned on an idle machine does not decide a busy one forever.

Pure (no pyspark).
"""
from __future__ import annotations

import math
import statistics
from collections import deque

__all__ = ["LookPrice", "SAMPLES", "MIN_SAMPLES", "REFRESH"]

#: Batches of each kind the medians run over (the last ones).
SAMPLES: int = 9
#: Batches of each kind before the price counts as measured.
MIN_SAMPLES: int = 3
#: Batches after which a kind not taken is sampled once more (a price learned while the
#: machine was idle does not decide for it once busy).
REFRESH: int = 25


class LookPrice:
    """Seconds a batch pays for looking ahead, learned from batches with and without it.

    Examples
    --------
    >>> lp = LookPrice()
    >>> b = 0.001           # seconds per unit of the slowest partition's load
    >>> for i in range(3):  # 1000 records; 0.1 s fixed, 0.05 s more with the look-ahead
    ...     lp.observe(False, 0.10 + b * 400, 1000, 400)
    ...     lp.observe(True, 0.15 + b * 300, 1000, 300)   # better balanced
    >>> round(lp.price(b, 1000), 3), round(lp.price(b, 2000), 3)   # per unit of work
    (0.05, 0.1)
    """

    def __init__(self, samples: int = SAMPLES, min_samples: int = MIN_SAMPLES,
                 refresh: int = REFRESH) -> None:
        if not (isinstance(samples, int) and isinstance(min_samples, int)
                and 1 <= min_samples <= samples and isinstance(refresh, int) and refresh >= 1):
            raise ValueError(f"samples={samples!r}, min_samples={min_samples!r}, "
                             f"refresh={refresh!r}; expected ints with "
                             "1 <= min_samples <= samples and refresh >= 1")
        self.min_samples = min_samples
        self.refresh = refresh
        #: (seconds, work, slowest partition's load) of batches: [without, with]
        self.kinds: tuple[deque, deque] = (deque(maxlen=samples), deque(maxlen=samples))
        self.work = 0.0               # work of the last batch seen (any kind)
        self._seen = 0                # batches seen
        self._last = [-1, -1]         # batch index of each kind's last sample

    @property
    def counts(self) -> tuple[int, int]:
        """Batches kept of each kind: (without, with)."""
        return len(self.kinds[0]), len(self.kinds[1])

    @property
    def known(self) -> bool:
        """Both kinds have :data:`MIN_SAMPLES` batches."""
        return min(self.counts) >= self.min_samples

    def observe(self, looked: bool, seconds: float, work: float, max_load: float = 0.0,
                moved: bool = False) -> None:
        """One batch took ``seconds`` for ``work`` (records, or seconds of work), its
        slowest partition's load ``max_load`` (``L_max``); ``looked``: it looked ahead;
        ``moved``: it carried a move (kept out of the samples)."""
        vals = (seconds, work, max_load)
        if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in vals) \
                or work <= 0 or seconds < 0:
            return
        self._seen += 1
        self.work = float(work)
        if moved:
            return
        self.kinds[bool(looked)].append((float(seconds), float(work), max(max_load, 0.0)))
        self._last[bool(looked)] = self._seen

    def price(self, seconds_per_load: float, work: float | None = None) -> float | None:
        """Seconds the look-ahead adds to a batch of ``work`` (default: the last batch's),
        with ``seconds_per_load`` (``b``) taking off each batch's balance; at least 0;
        None while unknown."""
        if not self.known:
            return None
        b = seconds_per_load if math.isfinite(seconds_per_load) else 0.0
        med = [statistics.median((t - b * load) / w for t, w, load in kind)
               for kind in self.kinds]
        w = self.work if work is None else work
        return max(med[1] - med[0], 0.0) * max(w, 0.0)

    def explore(self) -> bool | None:
        """The kind the coming batch should be, to measure the price: True (look ahead),
        False (not), None (no need). Unknown: the kind with fewer batches (ties: look
        ahead); known: a kind not sampled for :attr:`refresh` batches.

        Examples
        --------
        >>> lp = LookPrice(min_samples=1)
        >>> lp.explore()
        True
        >>> lp.observe(True, 0.2, 100); lp.explore()
        False
        >>> lp.observe(False, 0.1, 100); lp.explore() is None
        True
        """
        n0, n1 = self.counts
        if min(n0, n1) < self.min_samples:
            return n1 <= n0
        for kind in (False, True):
            if self._seen - self._last[kind] >= self.refresh:
                return kind
        return None
