"""PSRO refuses settings it cannot run on a game before any work, in one line naming every
fix with its full key (walk40a M2).

Before: ``experiment=psro_maddpg_oracle game.name=vmas/simple_push`` was refused for exact
payoffs with ``use payoffs='sampled'`` (no key); with that fixed it played the initial payoffs,
trained the oracles, played iteration 0 and only then refused ``nash``.
``experiment=kuhn_psro`` on ``openspiel/matrix_bos`` said it is general-sum and named no
setting that runs; on ``openspiel/phantom_ttt`` it said ``use 'exact'`` for the sampled
payoffs auto had chosen, which exact payoffs then refused too."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import populations.cli  # noqa: F401  (registers the schema)
from populations.experiment import check_experiment
from populations.psro import PSRO, ExactBestResponse, PSROConfig, RLOracle, RLOracleConfig

KEY = "population.psro."


def _experiment(overrides):
    with initialize_config_module(config_module="configs", version_base=None):
        return OmegaConf.to_object(compose(config_name="config", overrides=overrides))


def _refusal(overrides) -> str:
    with pytest.raises(ValueError) as err:
        check_experiment(_experiment(overrides))  # selfplay-train's check, before the folder
    line = str(err.value)
    assert "\n" not in line, line
    return line


def test_exact_payoffs_and_nash_on_a_general_sum_vmas_game_are_refused_together():
    push = ["experiment=psro_maddpg_oracle", "game.name=vmas/simple_push"]
    line = _refusal(push)
    assert line.startswith(
        "PSRO cannot run on vmas/simple_push as set: population.psro.payoffs=exact needs an "
        "OpenSpiel game and vmas/simple_push is not one; population.psro.meta_solver=nash "
        "needs a 2-player zero-sum (constant-sum) game and vmas/simple_push is general-sum "
        "(its players' returns summed to "), line
    assert line.endswith(f"; use {KEY}payoffs=sampled {KEY}meta_solver=prd"), line
    # the line's fix passes the checks
    check_experiment(_experiment([*push, f"{KEY}payoffs=sampled", f"{KEY}meta_solver=prd"]))


def test_a_full_game_solver_on_a_general_sum_game_names_the_settings_that_run():
    bos = ["experiment=kuhn_psro", "game.name=openspiel/matrix_bos"]
    assert _refusal(bos) == (
        "PSRO cannot run on openspiel/matrix_bos as set: population.psro.meta_solver="
        "least_exploitable and population.psro.response_target=exploiter need the exactly "
        "known full game of a 2-player zero-sum game, and openspiel/matrix_bos is "
        f"general-sum; use {KEY}meta_solver=prd {KEY}response_target=meta")
    check_experiment(_experiment([*bos, f"{KEY}meta_solver=prd", f"{KEY}response_target=meta"]))


def test_a_full_game_solver_with_the_sampled_payoffs_auto_chose_says_auto_chose_them():
    phantom = ["experiment=kuhn_psro", "game.name=openspiel/phantom_ttt"]
    line = _refusal(phantom)
    assert line.startswith(
        "PSRO cannot run on openspiel/phantom_ttt as set: population.psro.meta_solver="
        "least_exploitable and population.psro.response_target=exploiter need the exactly "
        "known full game of a 2-player zero-sum game, and population.psro.payoffs=auto chose "
        "sampled payoffs (openspiel/phantom_ttt has more than "), line
    assert "use 'exact'" not in line and "population.oracle=rl" not in line, line
    # phantom_ttt declares itself zero-sum: nash serves it
    assert line.endswith(f"; use {KEY}meta_solver=nash {KEY}response_target=meta"), line
    check_experiment(_experiment([*phantom, f"{KEY}meta_solver=nash",
                                  f"{KEY}response_target=meta"]))


def test_nash_for_three_players_is_refused_at_start():
    line = _refusal(["experiment=kuhn_psro", "game.kwargs.players=3",
                     f"{KEY}meta_solver=nash", f"{KEY}response_target=meta"])
    assert line == ("PSRO cannot run on openspiel/kuhn_poker(players=3) as set: "
                    "population.psro.meta_solver=nash needs a 2-player zero-sum (constant-sum) "
                    f"game and PSRO has 3 players; use {KEY}meta_solver=prd"), line


def test_the_python_api_refuses_in_its_own_words_before_any_best_response():
    oracle = RLOracle("vmas/simple_push", RLOracleConfig(frames=64, num_envs=2))
    with pytest.raises(ValueError) as err:
        PSRO("vmas/simple_push", oracle, PSROConfig(payoffs="exact", meta_solver="nash"))
    line = str(err.value)
    assert line.startswith("PSRO cannot run on vmas/simple_push as set: payoffs='exact' needs "
                           "an OpenSpiel game"), line
    assert line.endswith("; use payoffs='sampled' meta_solver='prd'"), line
    bos = "openspiel/matrix_bos"
    with pytest.raises(ValueError, match=r"; use meta_solver='prd' response_target='meta'$"):
        PSRO(bos, ExactBestResponse(bos),
             PSROConfig(meta_solver="least_exploitable", response_target="exploiter"))
