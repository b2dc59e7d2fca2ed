"""review38a L7: a value a game-valued parameter's own game does not take is refused as that
game's value, as games38 refuses the game's own (tests/test_games38_openspiel_value.py).

Before: ``turn_based_simultaneous_game(game=goofspiel(returns_type=bogus))`` said
``...Unrecognized returns_type parameter: bogus; accepted: ['game']``: the outer game's
parameter names as what is accepted for goofspiel's value.
"""

from __future__ import annotations

import pytest

import games

pytest.importorskip("pyspiel")


def test_a_nested_games_value_is_named_with_its_games_default():
    with pytest.raises(games.GameError) as info:
        games.make("openspiel/turn_based_simultaneous_game(game=goofspiel(returns_type=bogus))")
    assert str(info.value) == (
        "bad parameter for openspiel/turn_based_simultaneous_game: returns_type='bogus' of "
        "game=goofspiel is not a value goofspiel takes (SpielError: Unrecognized returns_type "
        "parameter: bogus); accepted: a value OpenSpiel's goofspiel takes for returns_type, its "
        "default 'win_loss'")
    assert "['game']" not in str(info.value)


def test_a_nested_games_good_value_loads():
    game = games.make("openspiel/turn_based_simultaneous_game(game=goofspiel(num_cards=3,"
                      "returns_type=point_difference))")
    assert game.spec.name.startswith("openspiel/turn_based_simultaneous_game")
