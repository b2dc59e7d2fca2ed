"""A resumed league gives its extra logger (csv, wandb) the database's rows it lacks, and a
league's run row names its game with the game's arguments, as a single run's does."""

import csv
import json
import sqlite3

import games
from populations.league import League
from populations.loggers import CSVLogger, LoggerConfig
from tests.populations.test_league import _kuhn


def test_a_resumed_league_backfills_its_logger_and_names_its_game_with_arguments(tmp_path):
    """From the CLI (kuhn pfsp league, logger=wandb, SIGKILL in generation 2, resume=true):
    the wandb files held steps 100..612 and 1124..2036; 712..1012 were in league.db only
    (written by the killed process after its last checkpoint, never replayed). And the runs
    table said 'openspiel/pig' of a league on pig with winscore=10."""
    cfg = _kuhn(generations=1, game_kwargs={"players": 2}, frames_per_generation=64)
    league = League(cfg, tmp_path)  # no extra logger: its rows are in the database only
    league.run()
    league.close()
    league = League(cfg, tmp_path, resume=True)
    league.logger = CSVLogger(tmp_path, LoggerConfig(), {})
    league.logger.close()
    league.close()
    db = sqlite3.connect(tmp_path / "league.db")
    want = db.execute("SELECT step, key FROM metrics ORDER BY step, key").fetchall()
    (game,), = db.execute("SELECT game FROM runs").fetchall()
    db.close()
    with open(tmp_path / "metrics.csv", newline="") as fh:
        got = sorted((int(s), k) for s, k, _ in list(csv.reader(fh))[1:])
    assert want and got == want  # each row once
    assert game == games.make("openspiel/kuhn_poker", players=2).spec.name != cfg.game


def test_a_psro_run_row_names_its_game_with_arguments_and_holds_its_settings(tmp_path):
    """A PSRO run of openspiel/pig with winscore=10 stored game 'openspiel/pig' and config {}."""
    from tests.populations.test_psro_resume import _run

    summary = _run(tmp_path, 1, extra=("game.kwargs.players=2",))
    db = sqlite3.connect(summary.database)
    (game, config), = db.execute("SELECT game, config FROM runs").fetchall()
    db.close()
    assert game == games.make("openspiel/kuhn_poker", players=2).spec.name
    settings = json.loads(config)
    assert settings["population"]["kind"] == "psro" and settings["game"]["kwargs"] == {
        "players": 2}
