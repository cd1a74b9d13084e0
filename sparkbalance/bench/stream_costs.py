"""What acting costs a batch in the simulated stream matrix, measured on Spark.

The stream matrix (:mod:`sparkbalance.bench.stream_matrix`) prices each simulated batch by
:class:`CostModel`: the slowest partition's values folded, a fixed part, and what acting
adds — a look-ahead's job boundary and reread, a riding move. Each constant says where it
was measured (``integration/benchmarks/bench_stream_matrix.py --spark-costs``), so a
cell's verdict rests on costs Spark was seen to pay, not on costs chosen for it.

Pure Python (no pyspark).
"""
from __future__ import annotations

from dataclasses import dataclass

from sparkbalance.state.control.lookahead import REREAD_S

__all__ = ["CostModel"]


@dataclass(frozen=True)
class CostModel:
    """Seconds of a simulated batch (defaults: the stream benchmark's, bench_state.py part
    B: 100 µs of I/O-like wait per value folded, n slots acting as n cores).

    ``fixed_s`` is the part of a batch that does not scale with its slowest partition (the
    route stage, scheduling, the driver); a migration riding in a batch costs
    ``move_fixed_s`` + ``s_per_byte`` × bytes (the payoff model's prior rate). Looking
    ahead (:mod:`~sparkbalance.state.control.lookahead`) costs ``tally_s`` per batch — the
    job boundary of the routing shuffle's map stage submitted on its own, as the operator
    measures it (:func:`~sparkbalance.state.control.lookahead.boundary_seconds`) — and a
    batch whose plan moves reads the written shuffle again where its moving keys were
    written (``StateReread``): ``reread_s`` (:data:`~sparkbalance.state.control.lookahead.
    REREAD_S`) per record read twice. Nothing is routed again.

    ``tally_s`` = 0.02 s: the price a user pays on a quiet machine, the difference between
    whole batches with and without the look-ahead that the operator learns
    (:mod:`~sparkbalance.state.control.lookprice`; 0.010 s on Zipf 1.0 and 0.019 s on the
    flights stream, ``bench_stateful.py``, quiet, 28 Nov 2026). What the look-ahead adds
    to a batch, counted (``bench_stream_matrix.py --spark-costs``, 20,000 records on
    ``local[8]``): one job (2 against 1), no stage, task or pass over the data more, one
    driver round trip to run the map stage and the job group's 7; the tally costs its map
    task 1.4-2.6 ms of CPU (one process over the batch's chunks: 14.4 → 17.0 ms Zipf
    1.0, 10.5 → 11.9 ms flights); planning 1.5-2.4 ms of driver CPU. The rest is the
    job's hand-offs (the map job's end reaching the driver, the merge job submitted and
    scheduled), whose wall grows with the machine's load: ``look − base`` read 0.045 s
    under a load of ~10 and 0.13-0.75 s under 22-34, with CPU differences inside the
    noise (−0.04 to 0.22 s). The 0.05 s simulated before was one such loaded reading.
    Measured again the same way, each run's own difference, medians over 25 interleaved
    runs under a load of ~11: ``look − base`` 0.023 s of wall, 0.03 s of CPU.

    ``move_fixed_s`` = 0.04 s: what a move riding in a batch's shuffle adds to it beside
    its bytes, ``ride − base`` of ``bench_stream_matrix.py --spark-costs --ways
    base,ride`` (the batch's 8 hottest keys moved one partition on, 20,000 records on
    ``local[8]``, 28 Nov 2026): no job, no stage and one task more (the carried state's
    map task, beside the batch's 8); each run's own difference, median over 25 and 31
    interleaved runs, 0.079 s and 0.039 s of wall (loads ~11 and ~23) and 0.07 s and
    0.06 s of CPU of the process tree. The smaller wall reading is taken; the load
    inflates both, so a quiet run of the same command should replace it. The 0.02 s
    simulated before had never been measured. The matrix is sensitive to it (48 cells, 3
    seeds, 28 Nov 2026): 31 cells met at 0.02 s, 22 at 0.04 s; where it fails at 0.04 s the
    clairvoyant that pays for its moves (``paid:mixed``) mostly takes under 80 % too (20
    cells). Since then the batch's own map tasks carry the move (``StateRide``,
    :mod:`~sparkbalance.state.frames.riding`): a riding batch runs the same jobs, stages
    and tasks as one without (16 against 17), and the carried task no longer waits for a
    slot (before, a task timeline under a load of ~7: the map stage 0.36 s against 0.27 s
    without a move, its ninth task launched ~0.1 s after the others). Measured back to
    back, the code before and after, each run's own difference, medians over 10-24
    interleaved runs under loads of 15-35: ``ride − base`` 0.40-0.81 s of wall before,
    −0.03-0.21 s after. A quiet run after it (16 interleaved runs, load ~5): ``ride −
    base`` 0.051 s of wall (median of the runs' own differences; 0.032 s between the
    medians) and 0.095 s of CPU, as before the change: the ride's cost was never the
    waiting task but the routing of the batch by the plan's layout and the selection and
    carrying of the moving frames. 0.04 s stays. Cells met (48, 3 seeds): 22 at 0.04 s,
    31 at 0.02 s, 32 at 0.01 s; below 0.02 s the look-ahead's boundary (``tally_s``) is
    what the misses pay.
    """

    s_per_value: float = 100e-6
    fixed_s: float = 0.15
    tally_s: float = 0.02
    reread_s: float = REREAD_S
    move_fixed_s: float = 0.04
    s_per_byte: float = 2e-8
    bytes_per_key: float = 200.0
    #: What the operator's measurement of the boundary from its parts sees of ``tally_s``
    #: (:func:`~sparkbalance.state.control.lookahead.boundary_seconds`; None: all of it).
    #: On the flights stream it saw 0.054 s of a ~0.1 s price.
    boundary_seen_s: float | None = None

    @property
    def seen_tally_s(self) -> float:
        """The boundary as the parts measurement reports it."""
        return self.tally_s if self.boundary_seen_s is None else self.boundary_seen_s

    def batch_seconds(self, max_load: float, moved_bytes: float = 0.0, moved: bool = False,
                      tallied: float = 0.0) -> float:
        """One batch's seconds.

        Examples
        --------
        >>> CostModel().batch_seconds(1000)
        0.25
        """
        t = self.fixed_s + self.s_per_value * max_load
        if moved:
            t += self.move_fixed_s + self.s_per_byte * moved_bytes
        return t + tallied
