"""A single run says so before an evaluation that plays more frames than its training did
(fix 30c): ``pursuit_v5`` (500 cycles x 8 pursuers) trained 2,400 frames, then its default 32
evaluation episodes (~16,000 frames) outlasted the training with no word. The line names
``eval_episodes=`` and a value that plays about as many frames as the training."""

import logging
import re

from populations.experiment import run_experiment
from tests.populations.test_single_resume import _exp

KUHN = ["algo=mappo", "game=kuhn", "frames=64", "num_envs=4", "mappo.rollout_steps=4",
        "progress=false", "checkpoint_every_s=0", "logger=none"]
NOTE = re.compile(r"evaluation: (\d+) episodes of about ([\d.]+) steps each, ~(\d+) frames, "
                  r"more than the (\d+) frames trained; eval_episodes= sets how many "
                  r"\(eval_episodes=(\d+) plays about as many as training\)")


def _notes(caplog, tmp_path, *overrides):
    caplog.set_level(logging.INFO)
    run_experiment(_exp(*KUHN, *overrides), tmp_path)
    return [m for r in caplog.records if (m := NOTE.fullmatch(r.getMessage()))]


def test_an_evaluation_longer_than_the_training_is_announced(tmp_path, caplog):
    (found,) = _notes(caplog, tmp_path, "eval_episodes=64")  # Kuhn: 2-3 moves an episode
    episodes, length, frames, trained, fits = found.groups()
    assert (episodes, trained) == ("64", "64") and 2 <= float(length) <= 3
    assert abs(int(frames) - 64 * float(length)) <= 1 and int(frames) > 64  # (length rounded)
    assert abs(int(fits) - 64 / float(length)) <= 1 and int(fits) < 64


def test_a_shorter_one_is_not(tmp_path, caplog):
    assert _notes(caplog, tmp_path, "eval_episodes=8") == []
