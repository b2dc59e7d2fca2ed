"""OpenSpiel rewards have OpenSpiel's sign (mutation walk mut41a: the reward ``before -
after`` passed the suite, whose checks were zero sums, draws and self-consistent loops)."""

import games


def test_tic_tac_toe_pays_the_winner_plus_one_at_the_winning_move():
    game = games.make("openspiel/tic_tac_toe")
    ts = game.reset(0)
    for move in (0, 3, 1, 4):  # x: 0, 1; o: 3, 4
        (agent,) = ts.acting
        ts = game.step({agent: move})
        assert ts.rewards == {"player_0": 0.0, "player_1": 0.0}
    ts = game.step({"player_0": 2})  # x completes the top row
    assert ts.done and ts.terminated == {"player_0": True, "player_1": True}
    assert ts.rewards == {"player_0": 1.0, "player_1": -1.0}
    assert ts.rewards == dict(zip(("player_0", "player_1"),
                                  game.pyspiel_state.returns(), strict=True))
