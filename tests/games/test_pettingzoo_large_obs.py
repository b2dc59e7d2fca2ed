"""Image observations (and image global states) are flattened for the MLP/GNN encoders:
say so, once, with the shape (cooperative_pong's 280x480x3 frames made MAPPO updates take
a minute without a word)."""

import logging

import numpy as np
import pytest
from gymnasium import spaces
from pettingzoo.butterfly import cooperative_pong_v6
from pettingzoo.utils import BaseParallelWrapper

import games
from games import pettingzoo as pz

PONG = "pettingzoo/pettingzoo.butterfly.cooperative_pong_v6"


class _Strided(BaseParallelWrapper):
    """cooperative_pong's observations, every 8th pixel in gray (its state left whole)."""

    def observation_space(self, agent):
        h, w, _ = self.env.observation_space(agent).shape
        return spaces.Box(0.0, 1.0, (-(-h // 8), -(-w // 8)), np.float32)

    def _small(self, obs):
        return {a: o[::8, ::8].mean(-1, dtype=np.float32) / 255 for a, o in obs.items()}

    def reset(self, seed=None, options=None):
        obs, info = self.env.reset(seed=seed, options=options)
        return self._small(obs), info

    def step(self, actions):
        obs, *rest = self.env.step(actions)
        return (self._small(obs), *rest)


def small_pong():
    return _Strided(cooperative_pong_v6.parallel_env())


@pytest.fixture
def warnings_(monkeypatch, caplog):
    monkeypatch.setattr(pz, "_warned_large", set(), raising=False)
    caplog.set_level(logging.WARNING, logger="games.pettingzoo")
    return lambda: [r.getMessage() for r in caplog.records if "flattened" in r.getMessage()]


def test_image_observations_get_one_warning_naming_shape_and_remedy(warnings_):
    games.make(PONG)
    games.make(PONG)
    obs = [m for m in warnings_() if "observations are" in m]
    assert len(obs) == 1 and "\n" not in obs[0]
    assert "280x480x3" in obs[0] and "403200 features" in obs[0] and "downscale" in obs[0]


def test_an_image_state_gets_its_own_warning(warnings_):
    game = games.make(f"pettingzoo/{__name__}:small_pong", teams=[["paddle_0", "paddle_1"]])
    assert game.spec.obs_shapes["paddle_0"] == (35 * 60,)
    (state,) = warnings_()  # observations are small now; the critics' state is not
    assert "global state is a 280x480x3" in state and "mappo.net.critic=local" in state


@pytest.mark.parametrize("name", ["pettingzoo/pettingzoo.sisl.pursuit_v5",  # 7x7x3 grid
                                  "pettingzoo/pettingzoo.classic.go_v5",  # 19x19x17 planes
                                  "pettingzoo/mpe2.simple_spread_v3"])
def test_small_observations_get_none(warnings_, name):
    games.make(name)
    assert warnings_() == []
