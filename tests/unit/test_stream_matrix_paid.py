"""The stream matrix's clairvoyant that pays for its moves (``paid:mixed``): it moves only
where the move's hindsight saving covers what acting costs, and pays exactly that."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from sparkbalance.bench.stream_matrix import (PAID_PREFIX, POLICIES, Cell, CostModel,
                                              cell_batches, simulate)

PAID = PAID_PREFIX + "mixed"
cells = st.builds(Cell, st.sampled_from(["zipf0.8", "zipf1.0", "zipf1.2"]),
                  st.sampled_from([2, 5]), st.sampled_from(["sudden", "gradual"]),
                  st.sampled_from([None, 3]))


@settings(max_examples=12, deadline=None)
@given(cells, st.integers(0, 50))
def test_a_move_that_can_never_pay_is_never_made(cell, seed):
    """At a move's cost beyond any saving the paying clairvoyant stays on the hash layout:
    batch for batch it is none."""
    b = cell_batches(cell, 4, 6, 2000, num_keys=200, seed=seed)
    s = simulate(b, 4, ["none", PAID], window=cell.window, cost=CostModel(move_fixed_s=1e3))
    assert s[PAID] == s["none"]


@settings(max_examples=12, deadline=None)
@given(cells, st.integers(0, 50), st.floats(0.0, 0.05), st.floats(0.0, 0.05))
def test_it_pays_the_boundary_and_the_ride_on_each_batch_it_moves_and_no_other(
        cell, seed, move_fixed, tally):
    cost = CostModel(move_fixed_s=move_fixed, tally_s=tally)
    b = cell_batches(cell, 4, 6, 2000, num_keys=200, seed=seed)
    parts: dict = {}
    s = simulate(b, 4, [PAID], window=cell.window, cost=cost, parts=parts)
    p = parts[PAID]
    moves = round(p.get("move_s", 0.0) / move_fixed) if move_fixed > 0.01 else None
    if moves is not None:
        assert abs(p.get("tally_s", 0.0) - moves * tally) < 1e-9
    # the batch's seconds are its parts: fixed, slowest partition, look-ahead, move
    total = len(b) * cost.fixed_s + sum(p.values())
    assert abs(sum(s[PAID]) - total) < 1e-9


def test_the_paying_clairvoyant_sits_between_the_free_one_and_none():
    """On a stream whose hot keys move every 2 batches at the modelled costs it gains,
    and less than the clairvoyant that moves free."""
    b = cell_batches(Cell("zipf1.0", 2, "sudden", None), 8, 12, 20000, num_keys=1000)
    s = simulate(b, 8, ["none", PAID, "oracle:mixed"])
    mean = {p: sum(v[2:]) / len(v[2:]) for p, v in s.items()}
    assert mean["oracle:mixed"] < mean[PAID] < mean["none"]
    assert PAID in POLICIES
