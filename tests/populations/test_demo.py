"""The round-robin demo behind `make run` (until the population manager replaces it)."""

import pytest

from populations import demo


def test_scripted_policies_pick_legal_actions():
    import numpy as np

    legal = np.array([[0, 1, 1, 0], [1, 0, 0, 1], [0, 0, 0, 1]], bool)
    rng = np.random.default_rng(0)
    assert demo.first_legal(legal, rng).tolist() == [1, 0, 3]
    assert demo.last_legal(legal, rng).tolist() == [2, 3, 3]
    for _ in range(20):
        a = demo.uniform(legal, rng)
        assert legal[np.arange(3), a].all()


def test_known_matchups():
    # Kuhn: "last" always bets/calls, "first" always passes/folds: the bettor wins the ante.
    means = demo.play("openspiel/kuhn_poker", {}, {"player_0": "last", "player_1": "first"},
                      episodes=30, num_envs=4, seed=0)
    assert means == pytest.approx({"player_0": 1.0, "player_1": -1.0})
    # Tic-tac-toe: both play the lowest free cell; the first player completes the 2-4-6 diagonal.
    means = demo.play("pettingzoo/pettingzoo.classic.tictactoe_v3", {},
                      {"player_1": "first", "player_2": "first"}, episodes=5, num_envs=2, seed=0)
    assert means == pytest.approx({"player_1": 1.0, "player_2": -1.0})


def test_main_prints_a_table(capsys):
    demo.main(["--episodes", "4", "--num-envs", "2"])
    out = capsys.readouterr().out
    assert "mean return per team" in out
    assert out.count("openspiel/kuhn_poker") >= 9 + 1  # 9 pairings + progress lines
