"""A string parameter of OpenSpiel that holds a list (battleship's ``ship_sizes``, default
``'[2;3;3;4;5]'``) given a value of another type was refused as ``accepted: a string``, with
no word of the format nor of the two ways the command line writes it (a Hydra list, which
7795223 turns into OpenSpiel's text, or the quoted string)."""

import pytest

import games
from games.core import GameError


def _refusal(**kwargs) -> str:
    with pytest.raises(GameError) as err:
        games.make("openspiel/battleship", **kwargs)
    return str(err.value)


def test_a_list_parameter_names_its_format():
    line = _refusal(ship_sizes=2)
    assert line == ("bad parameter for openspiel/battleship: ship_sizes=2; accepted: a string "
                    "like the default '[2;3;3;4;5]' (game.kwargs.ship_sizes=[2,3,3,4,5] or "
                    "\"game.kwargs.ship_sizes='[2;3;3;4;5]'\")"), line
    assert _refusal(ship_values=1.5).endswith(
        "(game.kwargs.ship_values=[1.0,1.0,1.0,1.0,1.0] or "
        "\"game.kwargs.ship_values='[1.0;1.0;1.0;1.0;1.0]'\")")


@pytest.mark.parametrize("param", ["ship_sizes", "ship_values"])
def test_both_forms_it_names_load_the_game(param):
    """Each override the line names, read as the command line reads it (Hydra's parser,
    without the shell's quotes), loads the game with the default's value."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    default = games.make("openspiel/battleship").pyspiel_game.get_parameters()[param]
    line = _refusal(**{param: True})
    forms = line[line.index("(game.kwargs.") + 1:-1].split(" or ")
    assert len(forms) == 2, forms
    for form in forms:
        override = OverridesParser.create().parse_override(form.strip('"'))
        value = override.value()
        loaded = games.make("openspiel/battleship", **{param: value})
        assert loaded.pyspiel_game.get_parameters()[param] == default, (form, value)


def test_a_plain_string_parameter_still_says_a_string():
    with pytest.raises(GameError) as err:
        games.make("openspiel/goofspiel", points_order=1)
    assert str(err.value).endswith("points_order=1; accepted: a string"), str(err.value)
