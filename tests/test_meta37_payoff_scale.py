"""Meta-solvers, the full-game check and paired outcomes judge a game the same whatever
unit it is paid in.

``prd`` stepped ``dt = 1e-3`` in raw payoff units, so a prisoner's dilemma paid in
thousandths stayed near uniform after its 20,000 steps (cooperate 0.496 where the game in
units gives 0.027); ``is_constant_sum`` floored its tolerance at 1e-6 absolute, so a
general-sum game paid in 1e-7 counted as constant-sum and ``auto`` solved its difference
game; ``pair_outcome`` called a pair a draw only within 1e-9 absolute, so summed returns
above ~1e7 turned float rounding into wins.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from populations import exploitability as ex
from populations import meta_solvers as ms
from populations.ratings import pair_outcome
from populations.sequence_form import check_full_game

# prisoner's dilemma, actions (cooperate, defect): defecting dominates, (D, D) the one Nash
PD = np.array([[[3.0, 0.0], [5.0, 1.0]], [[3.0, 5.0], [0.0, 1.0]]])


@pytest.mark.parametrize("scale", [1e-3, 1e-6, 1e3])
def test_prd_is_the_same_in_any_payoff_unit(scale):
    ref = ms.prd(PD)
    got = ms.prd(PD * scale)
    for r, g in zip(ref, got, strict=True):
        np.testing.assert_allclose(g, r, atol=1e-9)
    assert got[0][0] < 0.2  # mostly defect, as in units (was 0.496 at 1e-3, 1.0 at 1e-6)


def test_auto_on_a_small_unit_general_sum_game_is_as_exploitable_as_in_units():
    s = 1e-3
    conv = ms.meta_nash_conv(PD * s, ms.solve_meta("auto", PD * s)) / s
    assert conv == pytest.approx(ms.meta_nash_conv(PD, ms.solve_meta("auto", PD)), abs=1e-9)
    assert conv < 0.4  # was 1.485 (near-uniform play)


@pytest.mark.parametrize("scale", [1.0, 1e-7, 1e-12])
def test_a_general_sum_game_is_not_constant_sum_in_small_units(scale):
    assert not ms.is_constant_sum(PD * scale)
    rps = np.array([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]])
    assert ms.is_constant_sum(np.stack([rps, 1.0 - rps]) * scale)  # constant sum 1 * scale
    assert ms.is_constant_sum(np.zeros((2, 2, 2)))


def _kuhn_paid(returns_fn):
    """Kuhn poker's tree with its terminal returns ``[Z, 2]`` replaced by
    ``returns_fn(returns)``."""
    tree = ex.game_tree("openspiel/kuhn_poker")
    terminals = dataclasses.replace(tree.terminals, returns=returns_fn(tree.terminals.returns))
    return dataclasses.replace(tree, terminals=terminals)


@pytest.mark.parametrize("scale", [1.0, 1e-12])
def test_check_full_game_refuses_a_general_sum_game_in_small_units(scale):
    # player 1 also gets the square of player 0's return: general-sum in any unit
    tree = _kuhn_paid(lambda r: np.stack([r[:, 0], r[:, 1] + r[:, 0] ** 2], 1) * scale)
    with pytest.raises(ValueError, match="general-sum"):
        check_full_game(tree)
    # constant-sum (2 * scale) at that unit passes, and says its constant
    assert check_full_game(_kuhn_paid(lambda r: (r + 1.0) * scale)) == pytest.approx(2 * scale)


@pytest.mark.parametrize("big", [1e7, 1e9, 1e12])
def test_pair_outcome_draws_survive_large_returns(big):
    # three episodes' returns summed in two orders: the same in exact arithmetic
    a_total = (big + 0.1) + 0.2
    b_total = big + (0.1 + 0.2)
    o = pair_outcome(1, 2, a_total, b_total)
    assert o.score_a == 0.5
    assert pair_outcome(1, 2, big * (1 + 1e-6), big).score_a == 1.0  # a real margin wins
    assert pair_outcome(1, 2, 0.0, 1e-6).score_a == 0.0
