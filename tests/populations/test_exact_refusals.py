"""Games the exact tools cannot enumerate are refused in one line that says what to use,
quickly, and ``population=psro``'s ``auto`` then picks sampled payoffs and an RL oracle."""

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import games
import populations.cli  # noqa: F401  (registers the schema)
from populations import exploitability as ex
from populations.psro_run import resolve_auto


@pytest.mark.parametrize("game, why", [
    # perfect-information games give observation strings only (was a SpielError deep in
    # the walk)
    ("openspiel/breakthrough", "gives no information state strings"),
    # up to 2,000 moves: one Python frame per move (was a RecursionError)
    ("openspiel/oshi_zumo", "histories too long to enumerate"),
])
def test_a_game_the_exact_tools_cannot_walk_is_refused_in_one_line(game, why):
    with pytest.raises(ValueError) as err:
        ex.game_tree(game)
    msg = str(err.value)
    assert "\n" not in msg and game in msg and why in msg
    assert "population.psro.payoffs=sampled" in msg


@pytest.mark.parametrize("game", ["openspiel/breakthrough", "openspiel/oshi_zumo"])
def test_psro_auto_samples_where_the_exact_tools_refuse(game):
    with initialize_config_module(config_module="configs", version_base=None):
        exp = OmegaConf.to_object(compose(config_name="config", overrides=[
            "population=psro", f"game.name={game}"]))
    got = resolve_auto(exp, games.make(game)).population
    assert (got.oracle, got.psro.payoffs, got.psro.meta_solver) == ("rl", "sampled", "nash")
