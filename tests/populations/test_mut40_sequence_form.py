"""Exact tools where mutation testing (mut40) found no test looking: exploitability of a
3-player game is NashConv / 3 (``/ 2`` passed: every test was 2-player), NashConv equals
OpenSpiel's on 3-player Kuhn, and a least-exploitable mixture's value counts the terminals
the responder never acts before (``best_response_value`` without the empty sequence's
payoff passed: in Kuhn and Leduc the responder acts on every history)."""

import numpy as np
import pyspiel
import pytest

from populations import exploitability as ex
from populations import sequence_form as sf
from populations.meta_solvers import best_response_value

KUHN3 = "openspiel/kuhn_poker(players=3)"


def _random_behaviour(tree, p, rng):
    legal = tree.players[p].legal
    mat = rng.dirichlet(np.ones(legal.shape[1]), size=legal.shape[0]) * legal
    return mat / mat.sum(1, keepdims=True)


def test_three_player_exploitability_is_nash_conv_over_three():
    tree = ex.game_tree(KUHN3)
    rng = np.random.default_rng(40)
    mats = {p: _random_behaviour(tree, p, rng) for p in range(3)}
    got = sf.exploitability(tree, mats)
    assert len(got.improvements) == 3
    ref = pyspiel.nash_conv(tree.solver_game, sf.spiel_policy(tree, mats))
    assert got.nash_conv == pytest.approx(ref, abs=1e-10)
    assert got.nash_conv > 0.1  # random play is far from equilibrium
    assert got.exploitability == pytest.approx(ref / 3, abs=1e-10)
    assert got.exploitability == pytest.approx(got.improvements.mean(), abs=1e-12)


# Player 0 stops (then chance pays one of two terminals) or goes on; only after "go" does
# player 1 act, so the terminals after "stop" lie on player 1's empty sequence.
EFG = """EFG 2 R "mut40 stop or go" { "P1" "P2" }
""

p "" 1 1 "root" { "stop" "go" } 0
c "" 1 "deal" { "x" 1/2 "y" 1/2 } 0
t "" 1 "stopx" { 1.0 -1.0 }
t "" 2 "stopy" { -0.5 0.5 }
p "" 2 1 "resp" { "l" "r" } 0
t "" 3 "gl" { -2.0 2.0 }
t "" 4 "gr" { 3.0 -3.0 }
"""


@pytest.fixture
def stop_or_go(tmp_path):
    path = tmp_path / "stop_or_go.efg"
    path.write_text(EFG)
    return ex.game_tree(f"openspiel/efg_game(filename={path})")


def test_least_exploitable_value_counts_terminals_before_the_responder(stop_or_go):
    tree = stop_or_go
    assert [len(p) for p in tree.players] == [1, 1]
    # player 0's members: P(stop) = 0.9, 0.3, 0.0 (action 0 is "stop")
    members = [np.array([[s, 1.0 - s]]) for s in (0.9, 0.3, 0.0)]
    real0 = ex.realization(tree, 0, np.stack(members))
    real1 = ex.realization(tree, 1, np.stack([ex.uniform_matrix(tree, "player_1")]))
    full = ex.full_game(tree, [real0, real1])
    sol = full.least_exploitable(0)
    mix = ex.mixture_matrix(tree, 0, members, sol.weights)
    br = sf.best_response(tree, 1, {0: mix})
    assert sol.value == pytest.approx(br.value, abs=1e-9)
    assert sol.lp_value == pytest.approx(br.value, abs=1e-9)
    # by hand: stopping is worth -0.25 to player 1, going on 2 (its best reply "l"), so
    # the mixture that stops most is least exploitable
    np.testing.assert_allclose(sol.weights, [1.0, 0.0, 0.0], atol=1e-9)
    assert sol.value == pytest.approx(0.9 * -0.25 + 0.1 * 2.0, abs=1e-9)
    # any weights: the same value as the exact best response
    for w in ([0.0, 0.0, 1.0], [0.2, 0.5, 0.3], [1 / 3] * 3):
        mix = ex.mixture_matrix(tree, 0, members, np.array(w))
        assert best_response_value(full.responses[0], np.array(w)) == pytest.approx(
            sf.best_response(tree, 1, {0: mix}).value, abs=1e-12)
