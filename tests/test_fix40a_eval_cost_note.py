"""The note a single run logs before an evaluation longer than its training (walk40a L5).
On ``openspiel/chinese_checkers`` with ``frames=2000`` it said ``32 episodes of about 2.2e+04
steps each, ~704000 frames ... (eval_episodes=1 plays about as many as training)``: no training
episode had ended, so the length was the game's ``max_steps`` (OpenSpiel's 22,000; random games
end near 1,060 steps), a bound said as an estimate; and one episode gives no confidence
interval (``eval_ci95``). Now a bound is said ``up to``, and the value suggested is never under
2 episodes: where even 2 play more than the training, the note says what 2 play."""

from __future__ import annotations

import logging
import re

import pytest

import games
from populations.experiment import run_experiment
from populations.experiment_config import ExperimentConfig
from populations.single_eval import evaluation_cost_note
from tests.populations.test_single_resume import _exp

CHECKERS = games.make("openspiel/chinese_checkers").spec  # max_steps 22,000
KUHN = games.make("openspiel/kuhn_poker").spec  # 2-3 moves, max_steps 3


def note(spec, trained, played, episodes, eval_episodes=32):
    return evaluation_cost_note(ExperimentConfig(eval_episodes=eval_episodes), spec, trained,
                                played, episodes)


def test_a_length_no_episode_measured_is_said_as_a_bound():
    # the walker's run: 2,000 frames, no episode ended
    assert note(CHECKERS, 2000, 2000, 0) == (
        "evaluation: 32 episodes of up to 22000 steps each (the game's longest: no training "
        "episode ended), up to ~704000 frames against the 2000 frames trained; eval_episodes= "
        "sets how many (2 episodes, the fewest with a confidence interval, play up to ~44000 "
        "frames)")


def test_a_bound_that_fits_training_twice_suggests_at_most_as_many():
    text = note(CHECKERS, 50_000, 50_000, 0)
    assert text.endswith("(eval_episodes=2 plays at most as many as training)"), text
    assert "up to ~704000 frames" in text


@pytest.mark.parametrize(("eval_episodes", "trained", "advice"), [
    (32, 4, "(2 episodes, the fewest with a confidence interval, play about ~6 frames)"),
    (2, 4, "(2, the fewest with a confidence interval)"),
    (1, 2, "(1, the fewest, gives no confidence interval)"),
])
def test_one_episode_is_never_suggested(eval_episodes, trained, advice):
    # measured: 3 steps an episode; one episode would fit the training, and give no interval
    text = note(KUHN, trained, 12, 4, eval_episodes)
    assert text is not None and text.endswith(advice), text
    assert "eval_episodes=1 " not in text
    assert text.startswith(f"evaluation: {eval_episodes} episodes of about 3 steps each, ")


def test_a_measured_length_keeps_its_words():
    assert note(KUHN, 64, 60, 24, 64) == (
        "evaluation: 64 episodes of about 2.5 steps each, ~160 frames, more than the 64 frames "
        "trained; eval_episodes= sets how many (eval_episodes=25 plays about as many as "
        "training)")
    assert note(KUHN, 64, 60, 24, 8) is None


def test_a_run_whose_training_ended_no_episode_says_up_to(tmp_path, caplog):
    # Kuhn, 4 copies one step each: no episode ends in training
    caplog.set_level(logging.INFO)
    run_experiment(_exp("algo=mappo", "game=kuhn", "frames=4", "num_envs=4",
                        "mappo.rollout_steps=1", "progress=false", "checkpoint_every_s=0",
                        "logger=none", "eval_episodes=8"), tmp_path)
    notes = [r.getMessage() for r in caplog.records
             if r.getMessage().startswith("evaluation: 8 episodes")]
    assert notes == [
        "evaluation: 8 episodes of up to 3 steps each (the game's longest: no training "
        "episode ended), up to ~24 frames against the 4 frames trained; eval_episodes= sets "
        "how many (2 episodes, the fewest with a confidence interval, play up to ~6 frames)"]
    assert not any(re.search(r"eval_episodes=1\b", r.getMessage()) for r in caplog.records)
