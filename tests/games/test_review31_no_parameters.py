"""A parameter given to an OpenSpiel game that takes none says the game takes none, where it
listed ``accepted: []`` (session 31's walk, einstein_wurfelt_nicht)."""

from __future__ import annotations

import pytest

import games


def test_a_game_without_parameters_says_so():
    pytest.importorskip("pyspiel")
    with pytest.raises(games.GameError) as info:
        games.make("openspiel/einstein_wurfelt_nicht", seed=3)
    assert str(info.value) == ("bad parameter for openspiel/einstein_wurfelt_nicht: 'seed' "
                               "unknown; accepted: none (the game takes no parameters)")
