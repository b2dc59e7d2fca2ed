"""``ExperimentConfig(game="openspiel/kuhn_poker")`` (session 37's walk, api37b): a game given
by its name was taken, then ``run_experiment`` failed with ``AttributeError: 'str' object has
no attribute 'kwargs'``. A name is the game with its own defaults (``GameConfig(name=...)``);
a value that is neither a name nor a GameConfig is refused in one line. A real run on Kuhn
poker, nothing mocked."""

from __future__ import annotations

from pathlib import Path

import pytest

from populations.experiment import ExperimentConfig, GameConfig, run_experiment


def test_game_given_by_its_name_runs(tmp_path: Path) -> None:
    cfg = ExperimentConfig(game="openspiel/kuhn_poker", frames=64, num_envs=4, eval_episodes=2,
                           checkpoint_every_s=0.0, progress=False)
    assert cfg.game == GameConfig(name="openspiel/kuhn_poker", kwargs={})
    summary = run_experiment(cfg, tmp_path / "run")
    assert summary.table and summary.database.is_file()


def test_game_of_another_type_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^game=\['openspiel/kuhn_poker'\]; expected a game "
                                         r"name .* or GameConfig"):
        ExperimentConfig(game=["openspiel/kuhn_poker"])
