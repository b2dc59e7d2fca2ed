"""Findings of user-path walk 18 in ``populations/``: a PSRO meta-mixture of continuous-action
members, non-finite rewards in evaluation matches (and databases they poisoned), the oracle
messages for continuous-action games, and the game name recorded with each match."""

import numpy as np

import games
from marl.train import RandomPolicy
from populations.psro import Member, Mixture, SampledMixturePolicy

CONT = "walk18/chase_cont"
SEATS = ("chaser", "evader")


@games.register(CONT)
class ChaseCont(games.Game):
    """Two seats each pick a point in [-1, 1]^2 every round; the chaser wants to be near."""

    def __init__(self, rounds: int = 3) -> None:
        self.rounds = rounds
        self.spec = games.GameSpec(
            name=CONT, agents=tuple(games.AgentSpec(a, role=a, team=a) for a in SEATS),
            obs_shapes={a: (3,) for a in SEATS},
            action_spaces={a: games.ActionSpace("continuous", shape=(2,), low=-1.0, high=1.0)
                           for a in SEATS},
            max_steps=rounds, zero_sum=True, simultaneous=True)

    def _reset(self, seed):
        self.p = {a: np.zeros(2, np.float32) for a in SEATS}
        self.t = 0

    def _step(self, actions):
        for a in SEATS:
            self.p[a] = np.clip(self.p[a] + np.asarray(actions[a], np.float32), -2, 2)
        self.t += 1
        d = float(np.linalg.norm(self.p["chaser"] - self.p["evader"]))
        done = self.t >= self.rounds
        return games.Transition({"chaser": -d, "evader": d}, {a: False for a in SEATS},
                                {a: done for a in SEATS})

    def acting_agents(self):
        return () if self.t >= self.rounds else SEATS

    def observe(self, agent):
        return np.array([*self.p[agent], self.t / self.rounds], np.float32)

    def legal_actions(self, agent):
        return []

    def text_observation(self, agent):
        return f"{agent} at {self.p[agent].tolist()}"


class _Constant(RandomPolicy):
    """Plays the same continuous action everywhere."""

    def __init__(self, spec, value: float) -> None:
        super().__init__(spec)
        self.value = value

    def act(self, agent, vs, greedy=False):
        space = self.meta.action_space(agent)
        return np.full((vs.done.shape[0], *space.shape), self.value, np.float32)


def test_a_mixture_of_continuous_members_acts_with_their_shape_and_dtype():
    spec = games.make(CONT).spec
    members = tuple(Member(f"psro/chaser/{k}", "chaser", _Constant(spec, v))
                    for k, v in enumerate((-0.5, 0.25)))
    mix = SampledMixturePolicy(Mixture(members, np.array([0.5, 0.5])), "chaser", seed=3)
    vs = games.VectorGame(CONT, 16, seed=0).reset()
    out = mix.act("chaser", vs)  # was: TypeError (boolean indexing of an int64 [B] array)
    assert out.shape == (16, 2) and out.dtype == np.float32
    assert set(np.unique(mix.current)) == {0, 1}  # both members drawn: both wrote rows
    assert np.array_equal(out, np.array([[-0.5, -0.5], [0.25, 0.25]], np.float32)[mix.current])
