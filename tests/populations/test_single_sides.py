"""``population=none`` on a game of several teams trains the first team only (against random
seats): the run says so at its start, naming the seats and what trains every side (a user
walking the README expected self-play on Kuhn and saw nothing say otherwise). And a user's
own learner that cannot be a league member is named as such, not as unknown."""

import dataclasses
import logging

import pytest

from marl import registry
from populations.experiment import PopulationConfig, run_experiment
from tests.populations.test_single_resume import TINY, _exp


def test_single_run_on_a_competitive_game_names_the_seats_it_trains(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="populations.experiment"):
        run_experiment(_exp(*TINY, "frames=16", "logger=none"), tmp_path / "run")
    (line,) = [r.getMessage() for r in caplog.records if "population=none" in r.getMessage()]
    assert "team 'player_0' (player_0)" in line and "random" in line
    assert "population=self_play" in line


def test_a_registered_learner_that_cannot_share_games_is_named_as_such(monkeypatch):
    # a user's own learner without partial_seats was called "unknown" in population.members
    entry = dataclasses.replace(registry.get("mappo"), name="my_algo",
                                capabilities=dataclasses.replace(
                                    registry.get("mappo").capabilities, partial_seats=False))
    monkeypatch.setitem(registry._LEARNERS, "my_algo", entry)
    with pytest.raises(ValueError, match=r"'my_algo': learner 'my_algo' does not declare "
                                         r"Capabilities\(partial_seats=True\).*choose from"):
        PopulationConfig(kind="league", members=["mappo", "my_algo"])
    with pytest.raises(ValueError, match=r"'my_algp' unknown; choose from"):
        PopulationConfig(kind="league", members=["my_algp"])


def test_a_one_team_game_is_not_said_to_be_evaluated_against_random_seats(tmp_path, caplog):
    # every seat is the trained team's: 'against random seats' named seats that do not exist
    with caplog.at_level(logging.INFO, logger="populations.experiment"):
        run_experiment(_exp(*TINY, "game=climbing", "frames=16", "logger=none"), tmp_path / "r")
    (line,) = [r.getMessage() for r in caplog.records
               if r.getMessage().startswith("evaluating the trained policy")]
    assert line == "evaluating the trained policy: 2 episodes"
