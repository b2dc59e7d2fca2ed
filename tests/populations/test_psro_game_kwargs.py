"""PSRO with exact best responses on a game whose parameters are keyword arguments: the
oracle solves the game PSRO plays (``selfplay-train game.name=openspiel/kuhn_poker
game.kwargs.players=3 population=psro`` solved 2-player Kuhn and failed in numpy)."""

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import populations.cli  # noqa: F401  (registers the schema)
from populations.psro import PSRO, ExactBestResponse, PSROConfig
from populations.psro_run import make_oracle

KUHN = "openspiel/kuhn_poker"
THREE = {"players": 3}


def test_the_cli_oracle_solves_the_game_with_its_kwargs():
    with initialize_config_module(config_module="configs", version_base=None):
        exp = OmegaConf.to_object(compose(config_name="config", overrides=[
            "population=psro", "population.oracle=exact", "game=kuhn", "game.kwargs.players=3"]))
    oracle = make_oracle(exp)
    assert oracle.tree.name == "openspiel/kuhn_poker(players=3)" and len(oracle.tree.players) == 3


def test_three_player_kuhn_psro_with_exact_responses_runs():
    psro = PSRO(KUHN, ExactBestResponse(KUHN, game_kwargs=THREE),
                PSROConfig(meta_solver="uniform"), game_kwargs=THREE)
    it = psro.iteration()
    assert it.population == {"player_0": 2, "player_1": 2, "player_2": 2}
    assert it.nash_conv is not None and it.nash_conv >= 0


def test_an_oracle_for_another_game_is_refused_in_one_line():
    with pytest.raises(ValueError) as err:
        PSRO(KUHN, ExactBestResponse(KUHN), PSROConfig(meta_solver="uniform"), game_kwargs=THREE)
    msg = str(err.value)
    assert "openspiel/kuhn_poker(players=3)" in msg and "game_kwargs" in msg and "\n" not in msg


def test_a_made_game_with_game_kwargs_is_refused_in_one_line():
    """It read ``game.name``, which a made game does not have: AttributeError."""
    import games

    with pytest.raises(ValueError, match=r"game_kwargs=\{'players': 3\} go with a game's name"):
        ExactBestResponse(games.make(KUHN), game_kwargs=THREE)
    assert len(ExactBestResponse(games.make(KUHN, **THREE)).tree.players) == 3
