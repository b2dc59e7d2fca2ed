"""fix40f M1: PSRO on a game whose players are teams, with a full-game meta-solver/target
(experiment=kuhn_psro on vmas/simple_tag), was refused with advice ('use payoffs=sampled with
an RL oracle (oracle=rl or an algo), or players=seats') that, followed, met a second refusal
(least_exploitable with exploiter needs the exact full game). The line now names every
setting to change, with selfplay-train's full keys, and following it runs."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import populations.cli  # noqa: F401  (registers the schema)
from populations.experiment import run_experiment
from populations.psro import PSRO, PSROConfig, RLOracle

TAG = ["experiment=kuhn_psro", "game.name=vmas/simple_tag", "population.iterations=1"]
SMALL = ["population.oracle_frames=12", "population.psro.episodes_per_entry=2",
         "game.kwargs.max_steps=3", "num_envs=2", "eval_episodes=2", "progress=false",
         "logger=none", "mappo.rollout_steps=3", "mappo.epochs=1", "mappo.minibatches=1"]


def _experiment(overrides):
    with initialize_config_module(config_module="configs", version_base=None):
        return OmegaConf.to_object(compose(config_name="config", overrides=overrides))


def test_following_the_team_refusal_runs(tmp_path):
    with pytest.raises(ValueError) as err:
        run_experiment(_experiment([*TAG, *SMALL]), tmp_path / "refused")
    msg = str(err.value)
    assert "\n" not in msg and "players=teams ('adversary'" in msg, msg
    assert msg.endswith("; use population.psro.meta_solver=prd population.psro.response_target"
                        "=meta, or population.psro.players=seats"), msg
    fix = msg.split("; use ")[-1].split(", or ")[0].split()
    assert not (tmp_path / "refused").exists()
    run_experiment(_experiment([*TAG, *SMALL, *fix]), tmp_path / "run")  # runs as told


def test_the_python_api_names_every_fix_and_says_auto_chose_teams():
    kw = {"teams": [["player_0", "player_2"], ["player_1", "player_3"]]}
    bridge = "openspiel/tiny_bridge_4p"
    cfg = PSROConfig(payoffs="exact", meta_solver="least_exploitable",
                     response_target="exploiter")
    with pytest.raises(ValueError) as err:
        PSRO(bridge, RLOracle(bridge, game_kwargs=kw), cfg, game_kwargs=kw)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("PSRO: players='auto' chose teams: "), msg
    assert msg.endswith("; use payoffs='sampled' meta_solver='prd' response_target='meta', "
                        "or players='seats'"), msg


def test_a_full_game_setting_with_sampled_payoffs_names_the_setting_that_samples():
    # before: "(use 'exact')" only, which a team (or a game off OpenSpiel) cannot
    with pytest.raises(ValueError) as err:
        PSROConfig(payoffs="sampled", meta_solver="least_exploitable", response_target="meta")
    assert str(err.value).endswith("(use payoffs='exact', or meta_solver='prd' with sampled "
                                   "payoffs)"), err.value


def test_selfplay_train_says_auto_chose_teams_and_names_only_the_full_game_settings(tmp_path):
    import sys

    from tests import subprocs

    def refusal(*args):
        out = subprocs.run([sys.executable, "-m", "populations.cli", "game.name=vmas/simple_tag",
                            "population=psro", "population.iterations=1", *args],
                           capture_output=True, text=True, cwd=tmp_path, timeout=300)
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-2000:]
        return out.stderr.strip().splitlines()[-1]

    line = refusal("population.psro.meta_solver=least_exploitable",
                   "population.psro.response_target=meta")
    assert "population.psro.players=auto chose teams" in line
    assert line.endswith("; use population.psro.meta_solver=prd, or "
                         "population.psro.players=seats")  # the target needs no full game
    assert not (tmp_path / "runs").exists()
