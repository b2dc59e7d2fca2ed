"""OpenSpiel's games written in Python (``python_kuhn_poker``...) are made by name, like the
C++ ones: they register only when ``open_spiel.python.games`` is imported, which the walk
of a new user's path found nothing did (``unknown OpenSpiel game 'python_kuhn_poker'``)."""

import games


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
