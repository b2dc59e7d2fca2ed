"""VMAS's own batch (VectorGame.native) starts each episode's return at zero (the native
analogue of mut39 m17): three episodes of 3 steps, each done row's ``episode_return`` equal
to the rewards summed since that copy's last reset, as a plain loop sums them."""

import numpy as np

import games


def test_native_vmas_episode_returns_restart_each_episode():
    B, rng = 4, np.random.default_rng(0)
    vg = games.VectorGame("vmas/simple_spread", B, seed=1, max_steps=3)
    assert vg.native is not None
    vg.reset()
    total = {a: np.zeros(B) for a in vg.spec.agent_ids}
    ends = 0
    for _ in range(9):
        actions = {a: rng.integers(vg.spec.action_spaces[a].n, size=B)
                   for a in vg.spec.agent_ids}
        vs = vg.step(actions)
        done = np.asarray(vs.done)
        for a in vg.spec.agent_ids:
            total[a] += np.asarray(vs.rewards[a])
            np.testing.assert_allclose(np.asarray(vs.episode_return[a])[done],
                                       total[a][done], rtol=1e-5, atol=1e-6)
            total[a][done] = 0.0
        ends += int(done.sum())
    assert ends == 3 * B
