"""The matrix games pay the cell (agent_0's row, agent_1's column) of their published
matrices (mutation walk mut41a: each failed with a mutation of games/matrix.py that the suite
let pass: the matrix transposed, the penalty's k moved off the corners)."""

import pytest

import games

CLIMBING = ((11.0, -30.0, 0.0), (-30.0, 7.0, 6.0), (0.0, 0.0, 5.0))  # Claus & Boutilier 1998


def _payoffs(name, **kwargs):
    game = games.make(name, **kwargs)
    out = []
    for row in range(3):
        out.append([])
        for col in range(3):
            game.reset(0)
            ts = game.step({"agent_0": row, "agent_1": col})
            assert ts.done and ts.rewards["agent_0"] == ts.rewards["agent_1"]
            out[-1].append(ts.rewards["agent_0"])
    return tuple(map(tuple, out))


def test_climbing_pays_the_row_of_agent_0_and_the_column_of_agent_1():
    assert _payoffs("matrix/climbing") == CLIMBING
    assert CLIMBING[1][2] != CLIMBING[2][1]  # not symmetric: a transposed matrix differs


@pytest.mark.parametrize("k", [-10.0, -3.5])
def test_penalty_has_optima_on_the_diagonal_and_k_in_the_other_corners(k):
    assert _payoffs("matrix/penalty", k=k) == ((10.0, 0.0, k), (0.0, 2.0, 0.0), (k, 0.0, 10.0))


@pytest.mark.parametrize("name", ["matrix/climbing", "matrix/penalty"])
def test_both_agents_of_a_common_payoff_game_are_one_team(name):
    """Mutant: every agent its own team: a league would pit the two against each other."""
    spec = games.make(name).spec
    assert len({a.team for a in spec.agents}) == 1 and not spec.zero_sum


def test_a_repeated_game_observes_its_round_one_hot():
    """Mutant: ``obs[0] = 1`` at every round (the round index was the whole observation)."""
    game = games.make("matrix/climbing", repeats=3)
    ts = game.reset(0)
    seen = []
    while not ts.done:
        seen.append(ts.obs["agent_0"].tolist())
        assert ts.obs["agent_1"].tolist() == seen[-1] == game.state().tolist()
        ts = game.step({"agent_0": 0, "agent_1": 0})
    assert seen == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]


@pytest.mark.parametrize("repeats", [1, 2])
def test_the_last_round_terminates_by_the_rules_not_a_time_limit(repeats):
    """Mutant: terminated and truncated swapped (learners would bootstrap past the last
    round, which has no value after it)."""
    game = games.make("matrix/penalty", repeats=repeats)
    ts = game.reset(0)
    for _ in range(repeats):
        ts = game.step({"agent_0": 0, "agent_1": 0})
    assert ts.done
    assert ts.terminated == {"agent_0": True, "agent_1": True}
    assert ts.truncated == {"agent_0": False, "agent_1": False}
