"""Progress counts in their words: a training line of one update says ``(1 update)``, not
``(1 updates)`` (walk39a), and a resumed run trained by rollout workers shows its bar from the
checkpoint's frames to the run's total, as ``marl.train.train(resumed_at=)`` does (it counted
the frames left from 0)."""

import io
import logging
import os
import subprocess
import sys

import pytest

import games
import populations.rollouts as rollouts_module
from marl.mappo import MAPPO, MAPPOConfig
from marl.train import train
from tests.populations.test_rollouts import _collector, _learner


def _trained(caplog):
    return [m for m in caplog.messages if m.startswith("trained ")]


def test_one_update_is_singular(caplog):
    caplog.set_level(logging.INFO, logger="marl.train")
    vg = games.VectorGame("openspiel/matrix_rps", 4, seed=0)
    learner = MAPPO(vg.spec, MAPPOConfig(rollout_steps=4), seed=0)
    train(learner, vg, 16, progress=False)  # 4 copies x 4 steps: one rollout
    (line,) = _trained(caplog)
    assert line.startswith("trained 16 frames in ") and line.endswith("s (1 update)"), line


def test_a_resumed_rollout_workers_bar_starts_at_its_checkpoint(caplog, monkeypatch):
    bars = []

    class Recorded(rollouts_module.tqdm):  # the real bar, written to a string
        def __init__(self, *args, **kwargs):
            self.text = kwargs["file"] = io.StringIO()
            super().__init__(*args, **kwargs)
            bars.append(self)

    monkeypatch.setattr(rollouts_module, "tqdm", Recorded)
    caplog.set_level(logging.INFO, logger="populations.rollouts")
    learner = _learner()
    collector = _collector(learner, "local", workers=1)  # 4 copies x 25 steps a round
    try:
        rollouts_module.train_with_workers(learner, collector, 100, progress=True,
                                           resumed_at=300)
    finally:
        collector.close()
    (bar,) = bars
    assert (bar.initial, bar.n, bar.total) == (300, 400, 400)
    assert " 300/400 " in bar.text.getvalue().replace("\r", "\n"), bar.text.getvalue()
    (line,) = _trained(caplog)
    assert line.startswith("trained 100 frames from 1 local worker in "), line
    assert line.endswith("s (1 update)"), line


@pytest.mark.parametrize(("override", "line"), [
    ("runner.workers=99999999999999999999", "runner.workers=99999999999999999999; expected an "
     "integer in [1, 1024] (Ray actors, each a process with its own torch)"),
    ("runner.workers=1025", "runner.workers=1025; expected an integer in [1, 1024] (Ray "
     "actors, each a process with its own torch)"),
    ("runner.learners=5000", "runner.learners=5000; expected an integer in [0, 1024] (Ray "
     "actors, each a process with its own torch)"),
    ("runner.rollout_workers=2000", "runner.rollout_workers=2000; expected an integer in "
     "[0, 1024] (workers, each stepping its own copies of the game)"),
    ("runner.workers=0", "runner.workers=0; expected an integer >= 1"),  # as before
])
def test_a_runner_count_past_its_most_is_refused_before_torch(override, line):
    """walk39b M1: ``runner.workers=10**20`` was refused by Ray itself after ~47 s, and
    ``runner.workers=1000`` started 1000 torch actors; now one line, before torch loads."""
    code = ("import sys\nfrom populations.command_line import CLIError\n"
            "from populations.train_overrides import check_command_line\n"
            f"try:\n    check_command_line(['experiment=kuhn_psro', 'runner=ray', {override!r}])\n"
            "except CLIError as err:\n    print(err)\n"
            "print('torch' in sys.modules, 'ray' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout.splitlines()
    assert out == [f"bad config: {line}", "False False"], out


def test_a_local_ray_crowded_past_its_cores_is_warned_about():
    """walk39b M1: ``runner.workers=1000`` started 1000 torch actors on 2 cores without a word;
    a local Ray instance past 4 actors a core is warned about (not refused)."""
    from populations.runners import CROWDED_PER_CORE, crowded_local_ray

    most = CROWDED_PER_CORE * (os.cpu_count() or 1)
    assert crowded_local_ray(most) is None
    line = crowded_local_ray(most + 1)
    assert line.startswith(f"runner: a local Ray instance of {most + 1} actors on "), line
    assert line.endswith(f"at most {most} ({CROWDED_PER_CORE} a core) run as fast "
                         "(runner.workers / learners / rollout_workers)"), line
