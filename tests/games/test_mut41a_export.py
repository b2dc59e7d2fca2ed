"""``games.to_pettingzoo`` exports: a time-limit cut and the zero-sum flag (mutation walk
mut41a: each test failed with one mutation of games/export.py that the suite let pass)."""

import numpy as np

import games

TTT = "pettingzoo/pettingzoo.classic.tictactoe_v3"


def test_an_aec_export_cut_by_its_time_limit_is_truncated_not_terminated():
    """Mutant: ``terminations[a] = bool(ended)``: an agent cut by max_steps read as ended
    by the rules too (a learner on the export would not bootstrap)."""
    env = games.to_pettingzoo(games.make(TTT, max_steps=3))
    env.reset(seed=0)
    for _ in range(3):
        mask = env.observe(env.agent_selection)["action_mask"]
        env.step(int(np.flatnonzero(mask)[0]))
    assert env.truncations == {"player_1": True, "player_2": True}
    assert env.terminations == {"player_1": False, "player_2": False}


def zero_sum_export():
    return games.to_pettingzoo(games.make("openspiel/kuhn_poker"))


def test_an_export_declares_a_zero_sum_game_so_and_a_round_trip_keeps_it():
    """Mutant: metadata ``zero_sum`` always False: kuhn_poker made again from its export
    was general-sum (leagues and exploitability read the flag)."""
    assert zero_sum_export().metadata["zero_sum"] is True
    again = games.make(f"pettingzoo/{__name__}:zero_sum_export")
    assert again.spec.zero_sum is True
    assert not games.make("pettingzoo/mpe2.simple_spread_v3").spec.zero_sum
    assert games.to_pettingzoo(games.make("matrix/climbing")).metadata["zero_sum"] is False
