"""games38 (walk38a L1): an OpenSpiel parameter given by a name the game takes with a value it
does not is refused as a value, with the parameter's default.

Before: ``game.kwargs.returns_type=bogus`` said ``...Unrecognized returns_type parameter:
bogus; accepted: ['egocentric', 'imp_info', ...]``: the parameters' names as what is
accepted, though the name was right and the value wrong.
"""

from __future__ import annotations

import pytest

import games

pytest.importorskip("pyspiel")


@pytest.mark.parametrize("spec, kwargs", [
    ("openspiel/goofspiel", {"returns_type": "bogus"}),
    ("openspiel/goofspiel(returns_type=bogus)", {}),  # in the game string alike
])
def test_a_value_the_game_does_not_take_is_named_with_the_default(spec, kwargs):
    with pytest.raises(games.GameError) as info:
        games.make(spec, **kwargs)
    assert str(info.value) == (
        "bad parameter for openspiel/goofspiel: returns_type='bogus' is not a value the game "
        "takes (SpielError: Unrecognized returns_type parameter: bogus); accepted: a value "
        "OpenSpiel's goofspiel takes for returns_type, its default 'win_loss'")


def test_an_unknown_name_still_lists_the_names():
    with pytest.raises(games.GameError, match=r"'cards' unknown; accepted: \['players'\]"):
        games.make("openspiel/kuhn_poker", cards=4)
