"""One log line per event, naming seats and teams as words: a trained response was logged
twice ("trained N frames" by ``marl.train``, then "response for ('red_0', 'red_1') trained N
frames"), each PSRO iteration's NashConv twice ("PSRO iteration k" and "psro iteration k"),
and a team PSRO run's table called its red/blue column ``seat``."""

import logging

import torch
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import games
from marl.mappo import MAPPOConfig
from marl.train import RandomPolicy
from populations.approx_exploit import ApproxConfig, approx_nash_conv, side_text
from populations.experiment import run_experiment
from tests.populations.test_approx_exploit_teams import GAME  # registers the red/blue game


def _messages(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records]


def test_side_text_names_teams_and_seats_without_tuples():
    spec = games.make(GAME).spec  # red: red_0, red_1; blue: blue_0
    assert side_text(spec, ("red_0", "red_1")) == "team red (red_0, red_1)"
    assert side_text(spec, ("blue_0",)) == "team blue (blue_0)"
    assert side_text(spec, ("red_0",)) == "red_0"  # one seat of a team of two
    kuhn = games.make("openspiel/kuhn_poker").spec
    assert side_text(kuhn, ("player_0",)) == "player_0"


def test_an_approx_response_is_one_line_naming_its_team(caplog):
    torch.set_num_threads(1)
    spec = games.make(GAME).spec
    with caplog.at_level(logging.INFO):
        approx_nash_conv(GAME, RandomPolicy(spec, seed=0), ApproxConfig(
            frames=16, seeds=1, eval_episodes=8, num_envs=4,
            learner_config=MAPPOConfig(rollout_steps=4, epochs=1, minibatches=1)))
    trained = [m for m in _messages(caplog) if "trained" in m]
    assert len(trained) == 2, trained  # one per team
    assert trained[0].startswith("approx exploitability: response for team red (red_0, red_1) "
                                 "trained 16 frames"), trained
    assert "response for team blue (blue_0) trained" in trained[1], trained
    assert not any("('" in m for m in _messages(caplog))


def _experiment(overrides):
    with initialize_config_module(config_module="configs", version_base=None):
        return OmegaConf.to_object(compose(config_name="config", overrides=overrides))


def test_a_team_psro_run_logs_each_event_once_and_its_table_says_team(tmp_path, caplog):
    torch.set_num_threads(1)
    exp = _experiment([
        "population=psro", f"game.name={GAME}", "population.iterations=2",
        "population.oracle=mappo", "population.psro.payoffs=sampled",
        "population.psro.players=teams", "population.psro.episodes_per_entry=2",
        "population.oracle_frames=8", "mappo.rollout_steps=2", "mappo.epochs=1",
        "mappo.minibatches=1", "num_envs=2", "eval_episodes=2", "progress=false",
        "logger=none"])
    exp.game.kwargs = {}  # the default game's (N=3, max_cycles=25) are not this game's
    with caplog.at_level(logging.INFO):
        summary = run_experiment(exp, tmp_path / "run")
    messages = _messages(caplog)
    for k in (0, 1):
        lines = [m for m in messages if f"iteration {k}" in m.lower() and "NashConv" in m]
        assert lines and lines[0].startswith(f"PSRO iteration {k} ({k + 1}/2): "), lines
        assert len(lines) == 1, lines
    trained = [m for m in messages if "trained" in m]
    assert len(trained) == 4, trained  # a best response per team and iteration, once each
    assert sum("RL oracle: team red (red_0, red_1) trained 8 frames" in m
               for m in trained) == 2, trained
    assert not any("('" in m for m in messages)
    assert {row["team"] for row in summary.table} == {"red", "blue"}
    assert all("seat" not in row for row in summary.table)


def test_a_finished_psro_run_resumed_says_all_iterations_are_done(tmp_path, caplog):
    # it said 'resumed PSRO after iteration 1 of 2' (0-based), which read as unfinished
    overrides = ["population=psro", "game=kuhn", "population.iterations=2", "progress=false"]
    run_experiment(_experiment(overrides), tmp_path)
    with caplog.at_level(logging.INFO):
        run_experiment(_experiment([*overrides, "resume=true"]), tmp_path)
    assert "resumed PSRO: 2 of 2 iterations done; nothing left to run" in _messages(caplog)
