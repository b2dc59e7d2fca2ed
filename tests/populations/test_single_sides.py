"""``population=none`` on a game of several teams trains the first team only (against random
seats): the run says so at its start, naming the seats and what trains every side (a user
walking the README expected self-play on Kuhn and saw nothing say otherwise)."""

import logging

from populations.experiment import run_experiment
from tests.populations.test_single_resume import TINY, _exp


def test_single_run_on_a_competitive_game_names_the_seats_it_trains(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="populations.experiment"):
        run_experiment(_exp(*TINY, "frames=16", "logger=none"), tmp_path / "run")
    (line,) = [r.getMessage() for r in caplog.records if "population=none" in r.getMessage()]
    assert "team 'player_0' (player_0)" in line and "random" in line
    assert "population=self_play" in line
