"""PSRO refuses an RL oracle that cannot play the game from its spec, before
``payoffs=auto`` walks the game's tree: ``population=psro population.oracle=maddpg
game.name=openspiel/liars_dice`` enumerated 250k+ histories (~100 s) before the one line
"maddpg plays simultaneous-move games only"."""

from __future__ import annotations

import pytest

from marl.registry import IncompatibleError
from populations import exploitability as ex
from populations.experiment import ExperimentConfig, GameConfig, check_experiment
from populations.experiment_config import PopulationConfig
from populations.psro_config import PSROConfig


def test_a_turn_based_game_refuses_maddpg_before_any_tree_walk(monkeypatch):
    walked = []
    real = ex._cached_tree
    monkeypatch.setattr(ex, "_cached_tree", lambda name: walked.append(name) or real(name))
    cfg = ExperimentConfig(game=GameConfig(name="openspiel/liars_dice"), population=(
        PopulationConfig(kind="psro", oracle="maddpg", psro=PSROConfig(payoffs="auto"))))
    with pytest.raises(IncompatibleError) as err:
        check_experiment(cfg)
    assert str(err.value).startswith(
        "population.oracle: algo=maddpg cannot play openspiel/liars_dice: maddpg plays "
        "simultaneous-move games only")
    # exact tools may serve it (an OpenSpiel game, seat by seat): listed without the walk
    assert str(err.value).endswith("; oracles that play it: ['auto', 'exact', 'rl', 'ippo', "
                                   "'mappo', 'qmix', 'vdn']")
    assert walked == []


def test_an_oracle_that_plays_the_game_is_still_checked_after_auto():
    cfg = ExperimentConfig(game=GameConfig(name="openspiel/kuhn_poker"), population=(
        PopulationConfig(kind="psro", oracle="ippo", psro=PSROConfig(payoffs="auto"))))
    check_experiment(cfg)
