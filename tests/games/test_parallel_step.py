"""PettingZoo Parallel envs converted from AEC envs step without the wrappers whose checks
the game contract makes itself, and play exactly the episodes of the env as built; MPE's
global state comes from the step's observations, equal to the env's own."""

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
            np.testing.assert_array_equal(game.state(), plain.state())
            acts = {a: (rng.uniform(0.0, 1.0, 5).astype(np.float32) if continuous
                        else int(rng.integers(5))) for a in plain.agents}
            ts = game.step(acts)
            obs, rew, *_ = plain.step(acts)
            assert ts.rewards == pytest.approx(rew, abs=0)
        np.testing.assert_array_equal(game.state(), plain.state())
    assert game._state_from_obs == "checked"


def test_state_from_observations_only_where_equal(monkeypatch):
    """An env whose state is not its observations concatenated keeps asking the env."""
    from mpe2._mpe_utils.simple_env import SimpleEnv

    monkeypatch.setattr(SimpleEnv, "state", lambda self: np.zeros(3 * 18, np.float32))
    game = games.make("pettingzoo/mpe2.simple_spread_v3", N=3, max_cycles=5)
    game.reset(seed=0)
    assert game._state_from_obs is False
    game.step({a: 0 for a in game.spec.agent_ids})
    np.testing.assert_array_equal(game.state(), np.zeros(3 * 18))
