"""A PSRO oracle's refusal lists only the oracles the chosen game accepts (walk38e L1):
``population.oracle=maddpg game.name=openspiel/connect_four`` listed ``exact``, which the
game then refused (about 1e28 histories, far past what the exact tools enumerate), and a
learner that plays its own episodes (``llm_grpo``) is refused with the game's list too."""

from __future__ import annotations

import contextlib

import pytest

import games
from marl.registry import IncompatibleError
from populations.experiment import ExperimentConfig, GameConfig
from populations.experiment_config import PopulationConfig
from populations.psro_run import check_oracle, check_oracle_on_spec, exact_at_a_glance


def _refusal(oracle: str, game: str) -> str:
    cfg = ExperimentConfig(game=GameConfig(name=game),
                           population=PopulationConfig(kind="psro", oracle=oracle))
    with contextlib.closing(games.make(game)) as made, pytest.raises(IncompatibleError) as err:
        check_oracle_on_spec(cfg, made)
    return str(err.value)


def test_a_game_too_big_to_enumerate_is_not_offered_the_exact_oracle():
    line = _refusal("maddpg", "openspiel/connect_four")
    assert line.endswith("; oracles that play it: ['auto', 'rl', 'ippo', 'mappo', 'qmix', "
                         "'vdn']"), line


def test_a_game_small_enough_keeps_the_exact_oracle():
    line = _refusal("maddpg", "openspiel/kuhn_poker")
    assert line.endswith("; oracles that play it: ['auto', 'exact', 'rl', 'ippo', 'mappo', "
                         "'qmix', 'vdn']"), line


@pytest.mark.parametrize(("game", "exact"), [("openspiel/kuhn_poker", True),
                                             ("openspiel/connect_four", False),
                                             ("matrix/penalty", False)])
def test_exact_at_a_glance(game, exact):
    with contextlib.closing(games.make(game)) as made:
        players = {a: (a,) for a in made.spec.agent_ids}
        assert exact_at_a_glance(made, players) is exact


def test_a_learner_playing_its_own_episodes_is_refused_with_the_games_oracles():
    import llm_agents.learner  # noqa: F401 - registers llm_grpo

    with contextlib.closing(games.make("openspiel/connect_four")) as made:
        players = {a: (a,) for a in made.spec.agent_ids}
        with pytest.raises(IncompatibleError) as err:
            check_oracle("llm_grpo", made.spec, None, lambda: exact_at_a_glance(made, players))
    line = str(err.value)
    assert "cannot be a PSRO oracle" in line
    assert line.endswith("; oracles that play it: ['auto', 'rl', 'ippo', 'mappo', 'qmix', "
                         "'vdn']"), line
