"""PettingZoo Parallel envs converted from AEC envs step without the wrappers whose checks
the game contract makes itself, and play exactly the episodes of the env as built."""

import numpy as np
import pytest
from pettingzoo.utils.wrappers import AssertOutOfBoundsWrapper, OrderEnforcingWrapper

import games


def _chain(env):
    inner, out = env.aec_env, []
    while hasattr(inner, "env"):
        out.append(type(inner))
        inner = inner.env
    return out


@pytest.mark.parametrize("continuous", [False, True])
def test_checking_wrappers_are_skipped_and_episodes_are_unchanged(continuous):
    from mpe2 import simple_spread_v3

    kw = dict(N=3, max_cycles=25, continuous_actions=continuous)
    game = games.make("pettingzoo/mpe2.simple_spread_v3", **kw)
    wrappers = _chain(game.env)
    assert OrderEnforcingWrapper not in wrappers and AssertOutOfBoundsWrapper not in wrappers
    assert len(wrappers) == int(continuous)  # ClipOutOfBounds of continuous actions stays
    plain = simple_spread_v3.parallel_env(**kw)
    rng = np.random.default_rng(0)
    for episode in range(2):
        ts = game.reset(seed=episode)
        obs, _ = plain.reset(seed=episode)
        while plain.agents:
            for a in plain.agents:
                np.testing.assert_array_equal(ts.obs[a], obs[a])
            acts = {a: (rng.uniform(0.0, 1.0, 5).astype(np.float32) if continuous
                        else int(rng.integers(5))) for a in plain.agents}
            ts = game.step(acts)
            obs, rew, *_ = plain.step(acts)
            assert ts.rewards == pytest.approx(rew, abs=0)
