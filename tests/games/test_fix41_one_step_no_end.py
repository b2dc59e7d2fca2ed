"""start_warnings sees an episode of one step that ends with an agent neither terminated nor
truncated (mut41a C18: 'steps > 1' for 'steps' survived; every pinned case ran longer)."""
from __future__ import annotations

import numpy as np

from games.check import start_warnings
from games.core import ActionSpace, AgentSpec, Game, GameSpec, Transition


class OneStep(Game):
    """Both act once; the episode ends with only ``a`` terminated (``b`` left unsaid)."""

    def __init__(self):
        self.spec = GameSpec("one_step", (AgentSpec("a", "a", "t0"), AgentSpec("b", "b", "t1")),
                             {"a": (1,), "b": (1,)},
                             {"a": ActionSpace("discrete", n=2), "b": ActionSpace("discrete", n=2)},
                             max_steps=3, simultaneous=True)
        self.t = 0

    def _reset(self, seed):
        self.t = 0

    def _step(self, actions):
        self.t += 1
        return Transition({"a": 1.0, "b": -1.0}, {"a": True, "b": False}, {"a": False, "b": False})

    def acting_agents(self):
        return () if self.t else ("a", "b")

    def observe(self, agent):
        return np.zeros(1, np.float32)

    def legal_actions(self, agent):
        return range(2)

    def text_observation(self, agent):
        return ""


def test_a_one_step_episode_that_leaves_an_agent_unsaid_is_warned():
    warned = start_warnings(OneStep(), steps=4)
    assert len(warned) == 1 and "seed 0 step 0: the episode ended with ['b'] neither " \
        "terminated nor truncated" in warned[0], warned
