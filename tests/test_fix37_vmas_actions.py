"""A VMAS batch refuses wrong actions before it steps, in VectorGame's words (session 37):
its native path checked only for missing agents ("missing actions for agents [...]"), so an
array of the wrong length was reshaped into the batch (a long one failed inside torch, a
list of the agent's one action was broadcast nowhere) and an unknown agent passed silently.
And its text observation is ``games.array_text`` (byte-identical to numpy's
``array2string``, checked here on real scenarios), as the other games' are."""

from __future__ import annotations

import numpy as np
import pytest

import games
from games import IllegalActionError, VectorGame
from games.array_text import array_text_reference

B = 4


@pytest.fixture(scope="module")
def vg():
    v = VectorGame("vmas/simple_spread", B, seed=0, n_agents=2)
    v.reset()
    yield v
    v.close()


def _ok(vg) -> dict:
    return {a: np.zeros(B, dtype=np.int64) for a in vg.spec.agent_ids}


@pytest.mark.parametrize("change, line", [
    (lambda acts: acts | {"agent_0": np.zeros(B + 1, np.int64)},
     "vmas/simple_spread(n_agents=2): actions['agent_0'] holds 5 actions, expected one per copy: "
     "4 (num_envs)"),
    (lambda acts: acts | {"agent_1": np.zeros(B - 1, np.int64)},
     "vmas/simple_spread(n_agents=2): actions['agent_1'] holds 3 actions, expected one per copy: "
     "4 (num_envs)"),
    (lambda acts: acts | {"agent_0": 2},
     "vmas/simple_spread(n_agents=2): actions['agent_0'] is 2, expected an array of 4 "
     "actions (one per copy)"),
    (lambda acts: acts | {"nobody": np.zeros(B, np.int64)},
     "vmas/simple_spread(n_agents=2): actions for unknown agents ['nobody']; agents: "
     "('agent_0', 'agent_1')"),
    (lambda acts: {"agent_0": acts["agent_0"]},
     "vmas/simple_spread(n_agents=2): no actions for agent_1, which acts in copies [0, 1, 2, 3]"),
])
def test_wrong_actions_are_refused_before_the_batch_steps(vg, change, line):
    before = vg.native._len.clone()
    with pytest.raises(IllegalActionError) as info:
        vg.step(change(_ok(vg)))
    assert str(info.value) == line
    assert bool((vg.native._len == before).all())  # nothing stepped
    vg.step(_ok(vg))  # and the batch plays on


@pytest.mark.parametrize("name, kwargs", [("vmas/simple_spread", {"n_agents": 3}),
                                          ("vmas/balance", {"n_agents": 2}),
                                          ("vmas/navigation", {"n_agents": 2})])
def test_text_observation_is_numpys_array2string(name, kwargs):
    g = games.make(name, **kwargs)
    rng = np.random.default_rng(0)
    g.reset(seed=1)
    seen = 0
    for _ in range(5):
        for a in g.spec.agent_ids:
            obs = g.observe(a)
            assert obs.dtype == np.float32 and obs.ndim == 1
            text = g.text_observation(a)
            assert text.endswith("observation: " + np.array2string(obs, precision=2,
                                                                    separator=" "))
            assert text.endswith("observation: " + array_text_reference(obs))
            seen += 1
        sp = g.spec.action_spaces
        ts = g.step({a: (rng.integers(sp[a].n) if sp[a].discrete else
                         rng.uniform(-1, 1, sp[a].shape).astype(np.float32))
                     for a in g.acting_agents()})
        if ts.done:
            g.reset(seed=2)
    assert seen >= 10
    g.close()
