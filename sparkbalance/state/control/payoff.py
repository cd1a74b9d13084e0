"""Migrate only when it pays: a learned model of what a batch saves and what a move costs.

Fang et al. §4 rebalance as soon as λ = max L(d) / L̄ exceeds 1 + θ_max. On Spark every
migration has a fixed price (a job or a heavier batch, tens to hundreds of milliseconds) and
the balance it buys is worth only the part of a batch that waits for the slowest partition.
Fired at exactly 1 + θ with plans to just under it, noise re-triggers the controller (14
migrations for 6 real shifts in our shifting-Zipf demo). This module decides instead on
predicted seconds:

* **saving per batch** — the merge stage of a batch takes ``t ≈ F + b · L_max`` seconds: a
  fixed part ``F`` (scheduling, the driver's share) and a part proportional to the load of
  the slowest partition ``L_max`` (records, or measured seconds with a listener). ``F`` and
  ``b`` are fitted by exponentially weighted least squares over the batches that carried no
  migration. A plan taking ``L_max`` to ``λ' · L̄`` saves ``b⁺ · (L_max − λ' L̄)`` per batch,
  where ``b⁺`` is ``b`` plus one standard error of the fit (never more than the slope that
  puts all of the time on the slowest partition). Why: on a loaded machine background load
  swamps the batch times, the fitted ``b`` wobbles around zero, and a point estimate refused
  a move from λ = 2.06 to 1.04 as saving "0 s"; a wide fit now admits a large saving, while
  a tight fit that shows no dependence (time truly fixed) still predicts none.
* **cost of a move** — ``c0 + c1 · bytes``: a fixed part and a part per byte moved. A move
  the controller decides rides in a batch's own shuffle (no job of its own), so its cost is
  what it adds to that batch: the batch's time over its predicted time, averaged over the
  moves seen (negative excesses too: on a loaded machine the excess is mostly noise, which
  averages out, where clipping would bias it). A cheap prior (:data:`PRIOR_RIDE_S`) counts
  as one observation, and without moves a learned part above it relaxes back towards it. Why: a move's own seconds do not exist on
  this path (its record once held the whole merge job's wall), the prior of a job
  (:data:`PRIOR_FIXED_S`) refused every move saving less than 0.5 s, and a refused move is
  never measured, so a cost learned too high refused all later moves. A migration in a job
  of its own (a settle, ``rebalance``, ``scale``) teaches :attr:`PayoffModel.fixed_cost_s`,
  a job's price, reported but not used to judge riding moves.
* **decision** — migrate when the saving over the next ``horizon`` batches exceeds the cost.
  With hysteresis the controller triggers above 1 + θ but plans to 1 + θ·``hysteresis``, so a
  batch whose λ wobbles around 1 + θ does not re-trigger it.

Pure (no pyspark); every decision is returned with its numbers for the operator's history.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Judgement", "PayoffModel", "prior_weight", "TRIGGERS", "DEFAULT_HORIZON", "DEFAULT_HYSTERESIS",
           "PRIOR_FIXED_S", "PRIOR_RIDE_S", "PRIOR_S_PER_BYTE"]

#: "payoff" (default): trigger above 1 + θ, migrate only when the predicted saving over the
#: horizon exceeds the predicted cost. "paper": Fang et al. §4 exactly — migrate whenever
#: λ > 1 + θ and the plan lowers λ.
TRIGGERS: tuple[str, ...] = ("payoff", "paper")
#: Batches a new layout is expected to stay useful (a shift every ~5 batches in our demos;
#: conservative: a longer-lived layout only makes a migration pay more).
DEFAULT_HORIZON: int = 5
#: Plan to 1 + θ · hysteresis after triggering above 1 + θ.
DEFAULT_HYSTERESIS: float = 0.5
#: Prior fixed cost of one migration before any was measured (one small Spark job on a
#: loaded 2-core machine took 0.1–1 s; 0.5 s errs on the side of not moving).
PRIOR_FIXED_S: float = 0.5
#: Prior fixed cost of a move riding in a batch's shuffle before one was measured: its
#: carried state read and shipped by one more map-side pass scheduled with the batch's
#: tasks, and on the look-ahead's path the batch's map stage again (~0.05 s each for 20000
#: records on local[8]). 0.15 s, a third of a job's prior: the stream matrix
#: (``bench_stream_matrix.py``, simulated) met 2 cells fewer with 0.05 s, whose marginal
#: moves on gradually drifting keys did not pay back.
PRIOR_RIDE_S: float = 0.15
#: Prior cost per byte moved (≈ 50 MB/s through pickling and a shuffle).
PRIOR_S_PER_BYTE: float = 2e-8
#: Weight of a new observation in the exponentially weighted fits (≈ the last 10 batches).
FORGET: float = 0.1
#: Below this many batch observations the saving model assumes F = 0 (all of the merge time
#: scales with the slowest partition): optimistic, so the first real shift is acted on.
MIN_OBSERVATIONS: int = 3


@dataclass(frozen=True)
class Judgement:
    """One decision of the controller, taken or not, with its numbers."""

    migrate: bool
    reason: str                    # "balanced", "no better plan", "pays", "does not pay", "paper"
    imbalance: float               # λ of the batch
    imbalance_planned: float       # λ the plan predicts (= imbalance when nothing planned)
    saving_s: float                # predicted seconds saved over the horizon (0: not computed)
    cost_s: float                  # predicted seconds of the move (0: not computed)



def prior_weight(seen: int) -> float:
    """The weight of the next sample in a running mean whose prior counts as one sample:
    ``1 / (seen + 2)``, then 0.3 each once that falls below (recent samples lead).

    Examples
    --------
    >>> [round(prior_weight(n), 2) for n in (0, 1, 2, 5)]
    [0.5, 0.33, 0.3, 0.3]
    """
    return max(1.0 / (seen + 2), 0.3)

class PayoffModel:
    """Online estimates of ``t = F + b · L_max`` and of ``cost = c0 + c1 · bytes``.

    Parameters
    ----------
    horizon : batches over which a migration must pay back (>= 1).
    prior_fixed_s, prior_s_per_byte : the cost model of a migration in a job of its own
        before one was observed (``prior_s_per_byte`` also prices a riding move's bytes).
    prior_ride_s : the fixed cost of a move riding in a batch's shuffle before one was
        observed, and where the learned one relaxes back to.

    Examples
    --------
    >>> pm = PayoffModel(horizon=5)
    >>> for lmax, t in [(100, 1.1), (200, 2.1), (150, 1.6), (120, 1.3)]:
    ...     pm.observe_batch(t, lmax)
    >>> round(pm.seconds_per_load, 3), round(pm.fixed_seconds, 2)
    (0.01, 0.1)
    >>> round(pm.saving(200, 100), 2)      # per batch: b · (200 − 100)
    1.0
    >>> pm.judge(1.9, 1.05, 200, 110, 1e6).migrate
    True
    """

    def __init__(self, horizon: int = DEFAULT_HORIZON, *,
                 prior_fixed_s: float = PRIOR_FIXED_S,
                 prior_s_per_byte: float = PRIOR_S_PER_BYTE,
                 prior_ride_s: float = PRIOR_RIDE_S) -> None:
        if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
            raise ValueError(f"horizon={horizon!r}; expected an int >= 1")
        for name, v in (("prior_fixed_s", prior_fixed_s),
                        ("prior_s_per_byte", prior_s_per_byte),
                        ("prior_ride_s", prior_ride_s)):
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise ValueError(f"{name}={v!r}; expected a finite number >= 0")
        self.horizon = horizon
        # weighted sums for t = F + b · x (x = L_max)
        self._n = 0
        self._sw = self._sx = self._sy = self._sxx = self._sxy = 0.0
        self._syy = self._sw2 = 0.0     # for the standard error of b
        # cost model
        self.fixed_cost_s = float(prior_fixed_s)
        self.s_per_byte = float(prior_s_per_byte)
        self.migrations_seen = 0
        # riding moves (the ones judged)
        self.prior_ride_s = float(prior_ride_s)
        self.ride_cost_s = self.prior_ride_s
        self.rides_seen = 0

    # ------------------------------------------------------------------ learning
    def observe_batch(self, seconds: float, max_load: float, carried_bytes: float = 0.0
                      ) -> float | None:
        """A batch's merge took ``seconds`` with slowest-partition load ``max_load``.

        ``carried_bytes > 0``: the batch also carried a migration of that many bytes; its
        excess over the predicted time is a sample of the move's cost (fed to the riding
        cost model; returned, at least 0) and the batch does not enter the time fit. Returns None otherwise (or before :data:`MIN_OBSERVATIONS`
        batches, when there is no prediction to exceed).

        Examples
        --------
        >>> pm = PayoffModel()
        >>> for x in (100, 200, 300):
        ...     _ = pm.observe_batch(0.1 + 0.001 * x, x)
        >>> round(pm.observe_batch(0.1 + 0.001 * 200 + 0.04, 200, carried_bytes=1e3), 3)
        0.04
        >>> round(pm.ride_cost_s, 3)       # averaged with the prior (0.15), one sample each
        0.095
        """
        if not (math.isfinite(seconds) and math.isfinite(max_load)) or seconds < 0:
            return None
        if carried_bytes > 0:
            if self._n < MIN_OBSERVATIONS:
                return None
            excess = seconds - self.predict_seconds(max_load)
            self.observe_ride(excess, carried_bytes)
            return max(excess, 0.0)
        if self.ride_cost_s > self.prior_ride_s:   # no move: a high cost relaxes to the prior
            self.ride_cost_s += FORGET * (self.prior_ride_s - self.ride_cost_s)
        decay = 1.0 - FORGET
        self._sw = self._sw * decay + 1.0
        self._sx = self._sx * decay + max_load
        self._sy = self._sy * decay + seconds
        self._sxx = self._sxx * decay + max_load * max_load
        self._sxy = self._sxy * decay + max_load * seconds
        self._syy = self._syy * decay + seconds * seconds
        self._sw2 = self._sw2 * decay * decay + 1.0
        self._n += 1
        return None

    def observe_ride(self, seconds: float, bytes_moved: float) -> None:
        """A move riding in a batch's shuffle added ``seconds`` to the batch: its excess
        over the predicted time, negative too when noise made the batch fast (clipping
        each sample at 0 would bias the mean up; at the noise, down), averaged with the
        prior counted as one observation, then weighing 0.3 each; the part its
        ``bytes_moved`` explain at the per-byte rate is not fixed cost."""
        if not (math.isfinite(seconds) and math.isfinite(bytes_moved)):
            return
        fixed = seconds - self.s_per_byte * max(float(bytes_moved), 0.0)
        w = prior_weight(self.rides_seen)
        # at least 0: on a loaded machine one batch far faster than predicted (-9 s seen)
        # would otherwise keep every move priced at nothing for many later moves
        self.ride_cost_s = max((1 - w) * self.ride_cost_s + w * fixed, 0.0)
        self.rides_seen += 1

    def observe_migration(self, seconds: float, bytes_moved: float) -> None:
        """A migration of ``bytes_moved`` bytes took ``seconds`` in a job of its own (a
        job's price, :attr:`fixed_cost_s`: reported, not used to judge the riding moves
        :meth:`judge` decides). The per-byte rate stays at its prior unless the
        observation says bytes cost more; the rest is the fixed part (EWMA)."""
        if not (math.isfinite(seconds) and math.isfinite(bytes_moved)) or seconds < 0:
            return
        bytes_moved = max(float(bytes_moved), 0.0)
        per_byte_part = self.s_per_byte * bytes_moved
        fixed = max(seconds - per_byte_part, 0.0)
        w = 1.0 if self.migrations_seen == 0 else 0.3   # the first measurement replaces the prior
        self.fixed_cost_s = (1 - w) * self.fixed_cost_s + w * fixed
        self.migrations_seen += 1

    # ------------------------------------------------------------------ predicting
    @property
    def seconds_per_load(self) -> float:
        """b: seconds of merge time per unit of slowest-partition load."""
        return self._fit()[1]

    @property
    def fitted_seconds_per_load(self) -> float:
        """b⁻: ``b`` less one standard error of the fit, at least 0; 0 before
        :data:`MIN_OBSERVATIONS` batches. What the look-ahead values a batch of imbalance
        at (:mod:`~sparkbalance.state.control.lookahead`): it pays its price on every
        batch it looks ahead, so a gain only noise supports — the first batches' ``b``,
        which puts all of a batch's time on its slowest partition, or a fit a loaded
        machine swamps — must not buy it, where :attr:`seconds_per_load_upper` lets such
        a fit not veto a large move.

        Examples
        --------
        >>> pm = PayoffModel()
        >>> _ = pm.observe_batch(0.6, 100)
        >>> pm.seconds_per_load, pm.fitted_seconds_per_load      # all on the slowest
        (0.006, 0.0)
        >>> for lmax in (200, 150, 120):                         # an exact line
        ...     _ = pm.observe_batch(0.5 + 0.001 * lmax, lmax)
        >>> round(pm.fitted_seconds_per_load, 6), round(pm.seconds_per_load, 6)
        (0.001, 0.001)
        >>> for lmax, t in ((130, 0.9), (180, 0.5), (110, 0.4), (160, 1.0)):
        ...     _ = pm.observe_batch(t, lmax)                   # noise swamps it
        >>> round(pm.seconds_per_load, 4), pm.fitted_seconds_per_load
        (0.0017, 0.0)
        """
        if self._n < MIN_OBSERVATIONS:
            return 0.0
        b = self.seconds_per_load
        return max(b - self._standard_error(), 0.0)

    def _standard_error(self) -> float:
        """One standard error of the weighted fit's ``b`` (inf when too few effective
        batches or loads too alike to tell)."""
        if self._n < MIN_OBSERVATIONS or self._sw <= 0:
            return math.inf
        mx, my = self._sx / self._sw, self._sy / self._sw
        var_x = self._sxx / self._sw - mx * mx
        if var_x <= 1e-12 * max(mx * mx, 1e-300):
            return math.inf
        cov = self._sxy / self._sw - mx * my
        var_y = max(self._syy / self._sw - my * my, 0.0)
        n_eff = self._sw * self._sw / self._sw2 if self._sw2 > 0 else 0.0
        if n_eff <= 2.0:
            return math.inf
        resid = max(var_y - cov * cov / var_x, 0.0) * n_eff / (n_eff - 2.0)
        return math.sqrt(resid / (n_eff * var_x))

    @property
    def fixed_seconds(self) -> float:
        """F: the part of a merge that does not scale with the slowest partition."""
        return self._fit()[0]

    def _fit(self) -> tuple[float, float]:
        if self._n == 0:
            return 0.0, 0.0
        mx, my = self._sx / self._sw, self._sy / self._sw
        var = self._sxx / self._sw - mx * mx
        cov = self._sxy / self._sw - mx * my
        if self._n < MIN_OBSERVATIONS or var <= 1e-12 * max(mx * mx, 1e-300):
            # too few or identical loads: attribute all the time to the slowest partition
            b = my / mx if mx > 0 else 0.0
            return 0.0, b
        b = cov / var
        if b <= 0:   # noise swamps the signal: nothing scales with the slowest partition
            return my, 0.0
        f = my - b * mx
        if f < 0:    # a fit through negative fixed time: clamp, keep the mean
            return 0.0, my / mx if mx > 0 else 0.0
        return f, b

    def residual_sd(self) -> float:
        """Root mean square (weighted) of the batch times around the fitted line, clamps
        included (0 before :data:`MIN_OBSERVATIONS` batches): the noise a move must
        beat when the fit sees no dependence on the slowest partition (:meth:`judge`)."""
        if self._n < MIN_OBSERVATIONS or self._sw <= 0:
            return 0.0
        f, b = self._fit()
        mx, my = self._sx / self._sw, self._sy / self._sw
        var_x = self._sxx / self._sw - mx * mx
        var_y = self._syy / self._sw - my * my
        cov = self._sxy / self._sw - mx * my
        bias = my - f - b * mx
        return math.sqrt(max(var_y - 2 * b * cov + b * b * var_x + bias * bias, 0.0))

    @property
    def seconds_per_load_upper(self) -> float:
        """b⁺: ``b`` plus one standard error of the weighted fit, at most the slope with
        ``F = 0`` (``mean t / mean L_max``); ``b`` itself before :data:`MIN_OBSERVATIONS`."""
        b = self._fit()[1]
        se = self._standard_error()
        if not math.isfinite(se):
            return b
        mx, my = self._sx / self._sw, self._sy / self._sw
        top = max(b, my / mx if mx > 0 else 0.0)
        return min(b + se, top)

    def predict_seconds(self, max_load: float) -> float:
        f, b = self._fit()
        return f + b * max_load

    def saving(self, max_load_now: float, max_load_planned: float) -> float:
        """Predicted seconds saved per batch by taking L_max to ``max_load_planned``
        (with :attr:`seconds_per_load_upper`: an uncertain fit does not veto a large gain)."""
        return self.seconds_per_load_upper * max(max_load_now - max_load_planned, 0.0)

    def cost(self, bytes_moved: float) -> float:
        """Predicted seconds a move of ``bytes_moved`` bytes adds to the batch it rides in:
        :attr:`ride_cost_s` (learned from the batches that carried one, :meth:`observe_batch`)
        plus the per-byte part."""
        return max(self.ride_cost_s, 0.0) + self.s_per_byte * max(float(bytes_moved), 0.0)

    def judge(self, imbalance: float, imbalance_planned: float, max_load_now: float,
              max_load_planned: float, bytes_moved: float, realized: float = 1.0
              ) -> Judgement:
        """Migrate iff the saving over the horizon exceeds the cost of the move; the
        saving counts the share ``realized`` (in [0, 1]) of the planned gain that a plan's
        next batch was seen to keep (:mod:`~sparkbalance.state.control.realized`).

        When the point fit sees no dependence of the batch time on the slowest partition
        (``b = 0``: noise swamps it) the saving rests on the fit's uncertainty alone, so the
        move must also beat one residual standard deviation of a batch (reported in
        ``cost_s``): a large gain still moves, a trim of noise does not. Why: with a riding
        move's cheap cost, ``b⁺`` alone moved λ = 1.09 to 1.04 on a pure-noise fit."""
        keep = min(max(realized, 0.0), 1.0) if math.isfinite(realized) else 1.0
        saving = self.saving(max_load_now, max_load_planned) * self.horizon * keep
        cost = self.cost(bytes_moved)
        if self._n >= MIN_OBSERVATIONS and self.seconds_per_load <= 0.0:
            cost += self.residual_sd()
        pays = saving > cost
        return Judgement(pays, "pays" if pays else "does not pay", imbalance,
                         imbalance_planned, saving, cost)
