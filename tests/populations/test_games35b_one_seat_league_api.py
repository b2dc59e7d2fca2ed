"""A League built through the Python API for a game of one seat said ``teams=[[...],[...]]
groups its seats`` and ``population=psro plays two or more seats``, neither of which can help
there: the same one-seat line as the command line's (populations.experiment, e69ed57)."""

import pytest

from populations.league import League, LeagueConfig


def _refusal(game: str, tmp_path) -> str:
    with pytest.raises(ValueError) as err:
        League(LeagueConfig(game=game, game_kwargs={}), tmp_path / "run")
    return str(err.value)


def test_a_one_seat_game_gets_no_teams_hint(tmp_path):
    line = _refusal("pettingzoo/mpe2.simple_v3", tmp_path)
    assert line == ("a self-play league needs two teams; pettingzoo/mpe2.simple_v3 has "
                    "('team',); accepted: a game with two teams; it has one seat: "
                    "population=none trains it"), line


def test_a_cooperative_game_of_several_seats_keeps_it(tmp_path):
    line = _refusal("openspiel/tiny_hanabi", tmp_path)
    assert "groups its seats" in line and "teams" in line, line
    assert "population=psro plays two or more seats" in line, line
