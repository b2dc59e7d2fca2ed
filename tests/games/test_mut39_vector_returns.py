"""VectorGame's ``episode_return`` against a plain loop over single games (mut39 m17: the
return not zeroed on auto-reset; m13: rewards paid after an agent's own end still counted).

``Leaves`` is a two-agent simultaneous game where ``agent_0`` leaves at a random step while
``agent_1`` plays on, and (breaking the contract, as VectorGame allows for) ``agent_0`` is
still paid after it left: its return ends with its own episode, as learners train.
"""

import numpy as np
import pytest

import games
from games import ActionSpace, AgentSpec, Game, GameSpec, Transition

IDS = ("agent_0", "agent_1")


class Leaves(Game):
    def __init__(self) -> None:
        self.spec = GameSpec(
            name="test/leaves",
            agents=tuple(AgentSpec(a, "worker", "team") for a in IDS),
            obs_shapes={a: (2,) for a in IDS},
            action_spaces={a: ActionSpace("discrete", n=3) for a in IDS},
            max_steps=20,
            simultaneous=True,
        )
        self.rng = np.random.default_rng(0)
        self.t, self.live, self.leave, self.end = 0, list(IDS), 1, 2

    def _reset(self, seed):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t, self.live = 0, list(IDS)
        self.leave = int(self.rng.integers(1, 4))
        self.end = self.leave + int(self.rng.integers(1, 4))

    def _step(self, actions):
        self.t += 1
        rewards = {a: float(actions.get(a, 0)) + float(self.rng.normal()) for a in IDS}
        if "agent_0" not in self.live:
            rewards["agent_0"] = 5.0  # paid after it left: not part of its return
        over = self.t >= self.end
        term = {a: over for a in IDS}
        if self.t == self.leave:
            term["agent_0"] = True
            self.live.remove("agent_0")
        return Transition(rewards=rewards, terminated=term,
                          truncated={a: False for a in IDS})

    def acting_agents(self):
        return () if self.t >= self.end else tuple(self.live)

    def observe(self, agent):
        return np.array([self.t, agent in self.live], np.float32)

    def legal_actions(self, agent):
        return [0, 1, 2]

    def text_observation(self, agent):
        return f"step {self.t}"


def _policy(rng, legal_BN):
    return (rng.random(legal_BN.shape) * legal_BN).argmax(axis=1)


@pytest.mark.parametrize("spec", [Leaves, "openspiel/leduc_poker"])
def test_episode_returns_are_those_of_a_plain_loop(spec):
    B, seed = 3, 7
    make = spec if callable(spec) else (lambda: games.make(spec))
    vg = games.VectorGame(spec, num_envs=B, seed=seed)
    solo = [make() for _ in range(B)]
    solo_ts = [g.reset(seed + b) for b, g in enumerate(solo)]
    ret = [dict.fromkeys(vg.spec.agent_ids, 0.0) for _ in range(B)]
    ended = [set() for _ in range(B)]
    episodes = [0] * B
    vs = vg.reset()
    rng = np.random.default_rng(0)
    for _ in range(200):
        actions = {a: _policy(rng, vs.legal[a]) for a in vg.spec.agent_ids}
        vs = vg.step(actions)
        for b, g in enumerate(solo):
            ts = g.step({a: int(actions[a][b]) for a in solo_ts[b].acting})
            for a in vg.spec.agent_ids:
                if a not in ended[b]:
                    ret[b][a] += ts.rewards.get(a, 0.0)
                if ts.terminated.get(a) or ts.truncated.get(a):
                    ended[b].add(a)
            assert vs.done[b] == ts.done
            if ts.done:
                episodes[b] += 1
                for a in vg.spec.agent_ids:
                    assert vs.episode_return[a][b] == pytest.approx(ret[b][a], abs=1e-5)
                ret[b], ended[b] = dict.fromkeys(vg.spec.agent_ids, 0.0), set()
                ts = g.reset(None)
            solo_ts[b] = ts
        if min(episodes) >= 4:
            break
    assert min(episodes) >= 4
