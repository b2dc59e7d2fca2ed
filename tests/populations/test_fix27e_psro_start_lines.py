"""selfplay-train's PSRO start, in the words of its command line.

* On oshi_zumo (sampled payoffs, no exact NashConv) the warning said ``nash_conv=False``, a
  Python field; the key is ``population.psro.nash_conv=false``.
* With sampled payoffs nothing said how many episodes they would play: connect four's default
  ``population.psro.episodes_per_entry=1000`` played 9,000 around 2,000-frame best responses.
  A start line counts them, and a warning names the key when they will dominate the run.
"""

from __future__ import annotations

import logging

from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

from populations.experiment import run_experiment

QUIET = ["progress=false", "logger=csv", "eval_episodes=2", "checkpoint_every_s=0",
         "num_envs=4"]


def _run(tmp_path, caplog, *overrides: str) -> list[str]:
    with initialize_config_module(config_module="configs", version_base=None):
        cfg = OmegaConf.to_object(compose(config_name="config", overrides=[
            "population=psro", "population.iterations=1", "population.oracle_frames=64",
            *QUIET, *overrides]))
    caplog.set_level(logging.INFO)
    run_experiment(cfg, tmp_path / "run")
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("PSRO")]


def test_oshi_zumo_names_the_keys_and_plans_its_payoff_episodes(tmp_path, caplog):
    lines = _run(tmp_path, caplog, "game=kuhn", "game.name=openspiel/oshi_zumo",
                 "population.psro.episodes_per_entry=40")
    (nash,) = [m for m in lines if "no exact NashConv" in m]
    assert nash.endswith("(payoffs are sampled; population.psro.nash_conv=false leaves this "
                         "check out)")
    assert ("PSRO: sampled payoffs play about 160 episodes over the run "
            "(population.psro.episodes_per_entry=40 for each of the 4 entries of the final "
            "table: 2 members per player, 2 players)") in lines
    # 160 episodes of ~6.6 frames (random play): about 1,060 frames, 8x the 128 trained
    (warning,) = [m for m in lines if "most of the run would go to payoffs" in m]
    assert warning.startswith("PSRO: the sampled payoffs will play about ")
    assert warning.endswith("the 128 the best responses train (population.oracle_frames=64 x "
                            "2 players x 1 iterations): most of the run would go to payoffs; "
                            "lower population.psro.episodes_per_entry")
    # the plan is told before the first payoffs are sampled
    assert lines.index(warning) < next(i for i, m in enumerate(lines) if "iteration 0" in m)


def test_few_payoff_episodes_are_counted_without_a_warning(tmp_path, caplog):
    lines = _run(tmp_path, caplog, "game=kuhn", "game.name=openspiel/oshi_zumo",
                 "population.psro.episodes_per_entry=2")
    assert any(m.startswith("PSRO: sampled payoffs play about 8 episodes") for m in lines)
    assert not [m for m in lines if "most of the run would go to payoffs" in m]


def test_meta_solver_auto_left_to_the_iterations_says_so(tmp_path, caplog):
    """first_sealed_auction declares no zero sum: auto decides per iteration, and the start
    line showed a bare ``meta_solver=auto``."""
    lines = _run(tmp_path, caplog, "game=kuhn", "game.name=openspiel/first_sealed_auction")
    (start,) = [m for m in lines if m.startswith("PSRO on ")]
    assert start == ("PSRO on openspiel/first_sealed_auction: oracle=exact, payoffs=exact, "
                     "meta_solver=auto (nash where an iteration's payoffs are constant-sum, "
                     "else prd: each iteration says which)")
    (it,) = [m for m in lines if m.startswith("PSRO iteration 0")]
    assert it.endswith("; meta_solver=auto ran prd")


def test_a_one_team_game_warns_that_psro_plays_teammates(tmp_path, caplog):
    lines = _run(tmp_path, caplog, "game=mpe_spread", "population.psro.episodes_per_entry=2",
                 "mappo.rollout_steps=16", "game.kwargs.max_cycles=5")
    assert [m for m in lines if "are one team" in m] == [
        "PSRO on pettingzoo/mpe2.simple_spread_v3(N=3,max_cycles=5): its 3 seats are one team "
        "('team'), so each seat's population best-responds to its teammates' mixtures, not "
        "to opponents; population=none trains the team's seats together"]
