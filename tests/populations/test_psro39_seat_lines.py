"""PSRO's log lines name a player as its table does (walk38e L4): with players=seats on a
game whose one-seat team has a name of its own (simple_push's ``adversary``/``adversary_0``,
here blue/``blue_0``), the RL oracle said "RL oracle: team blue (blue_0) trained ..." while
the table's ``seat`` column said ``blue_0``."""

import logging

import torch
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

from populations.experiment import run_experiment
from tests.populations.test_approx_exploit_teams import GAME  # registers the red/blue game


def test_a_seat_psro_run_names_its_players_as_seats(tmp_path, caplog):
    torch.set_num_threads(1)
    with initialize_config_module(config_module="configs", version_base=None):
        exp = OmegaConf.to_object(compose(config_name="config", overrides=[
            "population=psro", f"game.name={GAME}", "population.iterations=1",
            "population.oracle=mappo", "population.psro.payoffs=sampled",
            "population.psro.players=seats", "population.psro.episodes_per_entry=2",
            "population.oracle_frames=8", "mappo.rollout_steps=2", "mappo.epochs=1",
            "mappo.minibatches=1", "num_envs=2", "eval_episodes=2", "progress=false",
            "logger=none"]))
    exp.game.kwargs = {}  # the default game's (N=3, max_cycles=25) are not this game's
    with caplog.at_level(logging.INFO):
        summary = run_experiment(exp, tmp_path / "run")
    assert {row["seat"] for row in summary.table} == {"red_0", "red_1", "blue_0"}
    trained = sorted(r.getMessage() for r in caplog.records
                     if r.getMessage().startswith("RL oracle: "))
    assert [m.split(" trained ")[0] for m in trained] == [
        "RL oracle: blue_0", "RL oracle: red_0", "RL oracle: red_1"], trained
    assert not any("team" in m for m in trained), trained
