"""OpenSpiel string parameters that hold lists (battleship's ``ship_sizes='[2;3;3;4;5]'``)
take a list of numbers as Hydra reads ``game.kwargs.ship_sizes=[2,3]``: it was refused as
``accepted: a string``, with no word of the format."""

import pytest

import games
from games.core import GameError


def test_a_list_is_written_as_openspiel_writes_it():
    listed = games.make("openspiel/battleship", ship_sizes=[2, 3], ship_values=[1, 2.5])
    written = games.make("openspiel/battleship", ship_sizes="[2;3]", ship_values="[1;2.5]")
    params = listed.pyspiel_game.get_parameters()
    assert (params["ship_sizes"], params["ship_values"]) == ("[2;3]", "[1;2.5]")
    assert listed.spec.name == written.spec.name
    assert listed.pyspiel_game.get_parameters() == written.pyspiel_game.get_parameters()


def test_other_values_are_still_refused_in_one_line():
    with pytest.raises(GameError) as err:
        games.make("openspiel/battleship", ship_sizes=[2, "x"])
    assert "\n" not in str(err.value) and "ship_sizes" in str(err.value)
