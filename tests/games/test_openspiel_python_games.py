"""OpenSpiel's games written in Python (``python_kuhn_poker``...) are made by name, like the
C++ ones: they register only when ``open_spiel.python.games`` is imported, which the walk
of a new user's path found nothing did (``unknown OpenSpiel game 'python_kuhn_poker'``)."""

import games
from tests import subprocs


def test_a_python_openspiel_game_is_made_by_name():
    game = games.make("openspiel/python_kuhn_poker")
    assert game.spec.agent_ids == ("player_0", "player_1") and game.spec.zero_sum
    games.check_game(game, episodes=3, seed=0)


def test_an_unknown_python_name_is_still_one_line():
    try:
        games.make("openspiel/python_kuhn_pokr")
    except games.UnknownGameError as err:
        assert "did you mean ['python_kuhn_poker'" in str(err) and "\n" not in str(err)
    else:
        raise AssertionError("no error")


def test_chat_game_is_found_by_name_and_refused_in_one_line():
    # chat_game registers with open_spiel.python.games but has no python_ prefix: unless some
    # python_ game was made first in the process, it was "unknown OpenSpiel game 'chat_game'";
    # a fresh process, as a user's selfplay-train is. It is found, then refused at make time
    # (its legal ids 2..7 lie outside its 2 actions; at its first reset before).
    import sys

    code = ("import games\n"
            "try:\n    games.make('openspiel/chat_game')\n"
            "except games.GameError as err:\n    print(err)\n")
    out = subprocs.run([sys.executable, "-c", code], capture_output=True, text=True,
                        timeout=120)
    assert out.returncode == 0, out.stderr[-500:]
    assert out.stdout.strip() == ("openspiel/chat_game: legal actions [2, 3, 4, 5, 6, 7] of "
                                  "player_1 are outside its 2 actions (ids 0..1); the game "
                                  "cannot be played")


def test_a_declared_information_state_tensor_that_states_leave_empty_falls_back():
    # python_dynamic_routing declares an information-state tensor of shape [1] and its states
    # give []: selfplay-train failed with "could not broadcast input array from shape (0,)
    # into shape (1,)"; its observation tensor (11 x 6) is used instead
    game = games.make("openspiel/python_dynamic_routing")
    assert game.spec.obs_shapes["player_0"] == (66,)
    vec = games.VectorGame("openspiel/python_dynamic_routing", 2, seed=0)
    assert vec.reset().obs["player_0"].shape == (2, 66)
