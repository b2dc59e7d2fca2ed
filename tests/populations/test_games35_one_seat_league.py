"""A league refused for a game of one seat said ``game.kwargs.teams=[[...],[...]] groups its
seats`` and ``population=psro plays two or more seats``, neither of which can help there."""

import pytest

import games
from populations.experiment import ExperimentConfig, check_league_game


def _refusal(name: str) -> str:
    spec = games.make(name).spec
    cfg = ExperimentConfig()
    with pytest.raises(ValueError) as err:
        check_league_game(cfg, spec)
    return str(err.value)


def test_a_one_seat_game_gets_no_teams_hint():
    line = _refusal("pettingzoo/mpe2.simple_v3")
    assert line == ("a self-play league needs two teams; pettingzoo/mpe2.simple_v3 has "
                    "('team',); accepted: a game with two teams; it has one seat: "
                    "population=none trains it"), line


def test_a_cooperative_game_of_several_seats_keeps_it():
    line = _refusal("openspiel/tiny_hanabi")
    assert "game.kwargs.teams=[[...],[...]] groups its seats" in line, line
    assert "population=psro plays two or more seats" in line, line
