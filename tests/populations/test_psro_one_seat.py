"""PSRO on a game of one seat is refused in one line before any run folder: it ran on
openspiel/catch without a word (``population [2]``, meta_solver=prd over one player's own
policies: no opponent, so nothing to respond to), while a league on the same game is
refused. PSRO's players are seats, or teams of several seats; a game of one team and
several seats (tiny_hanabi, simple_spread) plays seat against seat and stays accepted."""

import sys

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import games
import populations.cli  # noqa: F401  (registers the schema)
from populations.experiment import ExperimentConfig, check_experiment
from populations.psro import PSRO, PSROConfig, RLOracle, RLOracleConfig, psro_players
from tests import subprocs

SMALL = ["population=psro", "population.iterations=1", "population.oracle_frames=1",
         "population.psro.episodes_per_entry=2", "population.psro.num_envs=1",
         "progress=false", "logger=none"]


def _cfg(*overrides: str) -> ExperimentConfig:
    with initialize_config_module(config_module="configs", version_base=None):
        cfg = OmegaConf.to_object(compose(config_name="config",
                                          overrides=[*SMALL, *overrides]))
    cfg.game.kwargs = {}  # the default game's (N=3, max_cycles=25), which the CLI drops
    return cfg


def _refusal(game: str) -> str:
    return (f"PSRO needs two or more players; {game} has one seat (['player_0']); accepted: "
            "a game of two or more seats; population=none trains a one-player game")


@pytest.mark.parametrize("game", ["openspiel/catch", "openspiel/blackjack",
                                  "openspiel/cliff_walking", "openspiel/2048"])
@pytest.mark.parametrize("players", ["auto", "seats", "teams"])
def test_a_one_seat_game_is_refused_by_the_experiment_check(game, players):
    cfg = _cfg(f"game.name={game}", f"population.psro.players={players}")
    with pytest.raises(ValueError) as err:
        check_experiment(cfg)
    assert str(err.value) == _refusal(game)


@pytest.mark.parametrize("settings", [
    ["population.oracle=exact", "population.psro.payoffs=exact",
     "population.psro.meta_solver=nash"],  # no `auto` left to resolve
    ["population.oracle=mappo", "population.psro.payoffs=sampled",
     "population.psro.meta_solver=prd"],
])
def test_explicit_settings_are_refused_too(settings):
    with pytest.raises(ValueError, match=r"^PSRO needs two or more players; openspiel/catch "):
        check_experiment(_cfg("game.name=openspiel/catch", *settings))


def test_the_python_api_refuses_it_too():
    with pytest.raises(ValueError, match=r"^PSRO needs two or more players; openspiel/catch "):
        PSRO("openspiel/catch", RLOracle("openspiel/catch", RLOracleConfig(frames=1)),
             PSROConfig(payoffs="sampled", meta_solver="prd"))


@pytest.mark.parametrize("game", ["openspiel/tiny_hanabi",
                                  "pettingzoo/mpe2.simple_spread_v3"])
def test_a_game_of_one_team_and_several_seats_plays_seat_against_seat(game):
    spec = games.make(game).spec
    assert len(spec.teams) == 1
    assert psro_players(spec) == {a: (a,) for a in spec.agent_ids}
    with pytest.raises(ValueError, match="players='teams' needs two or more teams"):
        psro_players(spec, "teams")


def test_the_cli_refuses_catch_in_one_line_before_any_run_folder(tmp_path):
    out = subprocs.run(
        [sys.executable, "-m", "populations.cli", "game.name=openspiel/catch", *SMALL],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert lines[-1].endswith(_refusal("openspiel/catch")), out.stderr
    assert "Traceback" not in out.stderr
    assert not list(tmp_path.rglob("league.db")) and not list(tmp_path.rglob("settings.json"))
