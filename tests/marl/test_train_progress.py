"""The training progress bar's total is the frames the loop will play (walk 21).

``train(..., frames=2_000)`` of 48 copies ended its bar at ``2016frame``: the total was the
budget, the loop played whole steps of the copies (and, since on-policy learners train whole
rollouts, up to a rollout more), and tqdm drops the total of a bar whose count passed it
(no percentage, no bar, no time left)."""

from __future__ import annotations

import io

import pytest

import games
import marl.train as mt
from marl.mappo import MAPPO, MAPPOConfig
from marl.train import train
from marl.value_decomp import ValueDecomp, ValueDecompConfig


@pytest.fixture
def bars(monkeypatch):
    """Every bar train() makes (written to a string, not the terminal), with the largest
    count it reached past its total at any update (0: never past it)."""
    made = []
    real = mt.tqdm

    class Recorded(real):
        def __init__(self, *args, **kwargs):
            kwargs.update(file=io.StringIO(), disable=False, mininterval=0)
            super().__init__(*args, **kwargs)
            self.past = 0
            made.append(self)

        def update(self, n=1):
            out = super().update(n)
            if self.total is None or self.n > self.total:
                self.past = max(self.past, self.n)
            return out

    monkeypatch.setattr(mt, "tqdm", Recorded)
    return made


def _finished(bar) -> str:
    return bar.fp.getvalue().split("\r")[-1]


def test_a_replay_learners_bar_ends_at_whole_steps_of_the_copies(bars):
    vg = games.VectorGame("matrix/climbing", 48, seed=0, with_state=True)
    vdn = ValueDecomp(vg.spec, ValueDecompConfig(mixer="vdn", learning_starts=96,
                                                 batch_size=32, train_every=2))
    res = train(vdn, vg, 2_000)
    bar, = bars
    assert res.frames == 2_016  # 42 steps of 48 copies
    assert bar.total == bar.n == 2_016 and bar.past == 0
    assert "2016/2016" in _finished(bar) and "100%" in _finished(bar)


@pytest.mark.parametrize(("frames", "played"), [(100, 112), (96, 96), (5, 16)])
def test_an_on_policy_learners_bar_ends_at_its_last_whole_rollout(bars, frames, played):
    vg = games.VectorGame("matrix/climbing", 4, seed=0, with_state=True)
    res = train(MAPPO(vg.spec, MAPPOConfig(rollout_steps=4)), vg, frames)  # rollouts of 16
    bar, = bars
    assert res.frames == played
    assert bar.total == bar.n == played and bar.past == 0
    assert f"{played}/{played}" in _finished(bar)


def test_a_rollout_length_not_told_is_learnt_from_the_updates(bars, monkeypatch):
    """An on-policy learner that does not say its rollout's length (no ``cfg.rollout_steps``):
    the total follows the rollouts as they are trained, and is never passed."""
    monkeypatch.setattr(mt, "rollout_frames", lambda learner, num_envs: 0)
    vg = games.VectorGame("matrix/climbing", 4, seed=0, with_state=True)
    res = train(MAPPO(vg.spec, MAPPOConfig(rollout_steps=4)), vg, 100)
    bar, = bars
    assert res.frames == 112 and bar.total == bar.n == 112 and bar.past == 0


def test_a_bar_that_is_off_still_trains_the_same():
    vg = games.VectorGame("matrix/climbing", 4, seed=0, with_state=True)
    res = train(MAPPO(vg.spec, MAPPOConfig(rollout_steps=4)), vg, 100, progress=False)
    assert res.frames == res.trained_frames == 112
