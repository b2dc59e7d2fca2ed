"""Progress counts in their words: a training line of one update says ``(1 update)``, not
``(1 updates)`` (walk39a), and a resumed run trained by rollout workers shows its bar from the
checkpoint's frames to the run's total, as ``marl.train.train(resumed_at=)`` does (it counted
the frames left from 0)."""

import io
import logging

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
