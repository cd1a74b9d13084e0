"""When the next shift comes: the share of batches, by their age, whose decision moved.

A look-ahead earns its price only on a batch whose keys moved away from the layout (a
*shift batch*); on the others it plans what the last plan already placed. Weighing the
lag averaged over all batches against the price of every batch looks ahead on all of them
or none: on a stream whose hot keys move every 5 batches at 0.05 s a look-ahead, it paid
the price five times for one batch of lag. Streams shift with a rhythm more often than not
(a schedule, a day's hours, a campaign), so the chance that the coming batch needs a move
is learned per *age*, the batches since the last batch that did — a discrete hazard rate,
as survival analysis estimates one (Kaplan–Meier: events over batches at risk, per age):

``h(a) = (moves at age a + k · r) / (batches seen at age a + k)``

with ``r`` the share of recent batches that moved and ``k`` = :data:`PRIOR_WEIGHT` pseudo
batches, so an age seen rarely falls back on the mean rate; a stream without rhythm has
``h(a) ≈ r`` at every age. Ages above :data:`MAX_AGE` share one count. Each age's counts
decay by :data:`VISIT_DECAY` a visit and the mean rate by :data:`RATE_DECAY` a batch, so a
rhythm that changes is learned again in a few of its periods. The clock starts at the
first move: the batches before it ran the initial hash layout, whose imbalance a first
plan removes once — counted as a shift, it made every stream look as if it shifted at its
start and kept the look-ahead on through the quiet batches after.

Pure (no pyspark).
"""
from __future__ import annotations

from collections import Counter

__all__ = ["ShiftHazard", "MAX_AGE", "PRIOR_WEIGHT", "VISIT_DECAY", "RATE_DECAY"]

#: Ages pooled above this (a shift every 2 to 10 batches in the stream matrix).
MAX_AGE: int = 24
#: Pseudo batches of the mean rate in each age's estimate.
PRIOR_WEIGHT: float = 0.5
#: What an age's counts keep at each of its visits (≈ its last 2-3 visits weigh most:
#: one noisy visit does not decide an age, and a rhythm that changes is followed).
VISIT_DECAY: float = 0.6
#: What the mean rate's counts keep each batch (≈ the last 10 batches, a few periods of
#: the slowest rhythm the stream matrix has).
RATE_DECAY: float = 0.9


class ShiftHazard:
    """The chance the coming batch needs a move, from the ages at which batches did.

    Examples
    --------
    >>> hz = ShiftHazard()
    >>> for t in range(20):              # a move every 4th batch
    ...     hz.observe(t % 4 == 3)
    >>> hz.age, round(hz.rate, 2)
    (1, 0.33)
    >>> [round(hz.chance(a), 2) for a in (1, 2, 3, 4)]
    [0.06, 0.06, 0.06, 0.88]
    """

    def __init__(self) -> None:
        self.age = 1                  # the coming batch's age: batches since the last move
        self.started = False          # a first move was seen (the clock runs from it)
        self.seen: Counter = Counter()
        self.moved: Counter = Counter()
        self._batches = self._moves = 0.0

    @property
    def rate(self) -> float:
        """Share of the recent batches (since the first move) that moved, with
        :data:`PRIOR_WEIGHT` pseudo batches that did: after a first shift another is
        expected until quiet batches say otherwise (0 before any move)."""
        if not self.started:
            return 0.0
        return (self._moves + PRIOR_WEIGHT) / (self._batches + PRIOR_WEIGHT)

    def chance(self, age: int | None = None) -> float:
        """``h(age)`` (default: the coming batch's age)."""
        a = min(self.age if age is None else age, MAX_AGE)
        return (self.moved[a] + PRIOR_WEIGHT * self.rate) / (self.seen[a] + PRIOR_WEIGHT)

    def observe(self, moved: bool) -> None:
        """The coming batch was decided: ``moved`` when its decision moved the state."""
        if self.started:
            a = min(self.age, MAX_AGE)
            self.seen[a] = VISIT_DECAY * self.seen[a] + 1.0
            self.moved[a] = VISIT_DECAY * self.moved[a] + bool(moved)
            self._batches = RATE_DECAY * self._batches + 1.0
            self._moves = RATE_DECAY * self._moves + bool(moved)
        self.started = self.started or bool(moved)
        self.age = 1 if moved else self.age + 1
