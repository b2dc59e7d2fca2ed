"""The training bar shows no ``ret=nan`` while no episode has ended (walk31 L5: on
cooperative_pong, ``100% 800/800 [...] ret=nan``): the return is left out until one ends."""

from __future__ import annotations

import re

import games
from marl import registry
from marl.configs import MAPPOConfig
from marl.train import train

SPREAD = "pettingzoo/mpe2.simple_spread_v3"


def _bar_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.replace("\r", "\n").splitlines() if line]


def test_no_return_is_shown_before_an_episode_ends(capsys):
    vg = games.VectorGame(lambda: games.make(SPREAD, N=2, max_cycles=25), 2, seed=0,
                          with_state=True)
    learner = registry.get("mappo").build(vg.spec, MAPPOConfig(rollout_steps=4, epochs=1,
                                                               minibatches=1))
    res = train(learner, vg, 32, progress=True)  # 16 steps of 2 copies: no episode of 25 ends
    assert res.updates == 4 and not res.episode_returns
    lines = _bar_lines(capsys)
    assert lines and not [line for line in lines if "ret=" in line], lines


def test_the_return_is_shown_once_an_episode_ended(capsys):
    vg = games.VectorGame(lambda: games.make(SPREAD, N=2, max_cycles=4), 2, seed=0,
                          with_state=True)
    learner = registry.get("mappo").build(vg.spec, MAPPOConfig(rollout_steps=4, epochs=1,
                                                               minibatches=1))
    res = train(learner, vg, 32, progress=True)
    assert res.episode_returns
    lines = _bar_lines(capsys)
    assert [line for line in lines if re.search(r"ret=-?\d+\.\d\d\b", line)], lines
