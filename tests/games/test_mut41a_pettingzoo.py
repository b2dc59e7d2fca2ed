"""The PettingZoo adapter's AEC path where an agent leaves before the others (mutation walk
mut41a: failed with a mutation of games/pettingzoo.py that the suite let pass).

``LeavesFirst`` is turn-based: ``p0`` moves once and leaves (terminated), paid 1.0, and that
same move pays ``p1`` 2.0; ``p1`` then moves twice, paid 3.0 at its last. Exported with
``games.to_pettingzoo`` (an AEC env) and made again through ``pettingzoo/...``, the adapter
steps the dead ``p0`` out (``env.step(None)``, which clears every reward of the env) after
the move that paid both: the move's rewards must survive it.
"""

import numpy as np

import games
from games import ActionSpace, AgentSpec, Game, GameSpec, Transition

IDS = ("p0", "p1")


class LeavesFirst(Game):
    def __init__(self) -> None:
        self.spec = GameSpec(
            name="test/leaves_first",
            agents=tuple(AgentSpec(a, a, a) for a in IDS),
            obs_shapes={a: (1,) for a in IDS},
            action_spaces={a: ActionSpace("discrete", n=2) for a in IDS},
            max_steps=5,
        )
        self.t = 0

    def _reset(self, seed):
        self.t = 0

    def _step(self, actions):
        self.t += 1
        if self.t == 1:
            return Transition({"p0": 1.0, "p1": 2.0}, {"p0": True, "p1": False},
                              {a: False for a in IDS})
        over = self.t >= 3
        return Transition({"p0": 0.0, "p1": 3.0 if over else 0.0}, {"p0": True, "p1": over},
                          {a: False for a in IDS})

    def acting_agents(self):
        return ("p0",) if self.t == 0 else ("p1",) if self.t < 3 else ()

    def observe(self, agent):
        return np.array([self.t], np.float32)

    def legal_actions(self, agent):
        return [0, 1]

    def text_observation(self, agent):
        return f"step {self.t}"


def leaves_first_env():
    return games.to_pettingzoo(LeavesFirst())


def test_rewards_of_the_move_before_a_dead_agent_is_stepped_out_are_kept():
    """Mutant: ``rewards[a] = ...`` for ``+=`` in ``_aec_acting``: the rewards of the move
    were replaced by the dead step's zeros (p1's 2.0 lost)."""
    game = games.make(f"pettingzoo/{__name__}:leaves_first_env")
    assert not game.spec.simultaneous
    ts = game.reset(0)
    assert ts.acting == ("p0",)
    ts = game.step({"p0": 0})
    assert ts.rewards == {"p0": 1.0, "p1": 2.0}
    assert ts.terminated == {"p0": True, "p1": False} and ts.acting == ("p1",)
    returns = dict(ts.rewards)
    while not ts.done:
        ts = game.step({"p1": 1})
        for a in IDS:
            returns[a] += ts.rewards[a]
    assert returns == {"p0": 1.0, "p1": 5.0}
