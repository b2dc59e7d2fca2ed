"""``check_game`` refuses a game whose agents act together at one state while its spec says
turns (``simultaneous=False``, the default): learners for turn-based games take one actor a
step (value decomposition's turns, MAPPO's turn-based rollouts), and registry.compatible
chooses learners by this flag. It passed the check, and training met it later."""

import numpy as np
import pytest

import games


class _Together(games.Game):
    """Both players move at every step."""

    def __init__(self, simultaneous: bool):
        ids = ("p0", "p1")
        self.spec = games.GameSpec(
            name="together", agents=tuple(games.AgentSpec(a, a, a) for a in ids),
            obs_shapes={a: (1,) for a in ids},
            action_spaces={a: games.ActionSpace("discrete", n=2) for a in ids},
            max_steps=2, simultaneous=simultaneous)

    def _reset(self, seed):
        self.t = 0

    def _step(self, actions):
        self.t += 1
        over = self.t == 2
        return games.Transition({a: 0.0 for a in actions}, {a: over for a in actions},
                                {a: False for a in actions})

    def acting_agents(self):
        return () if self.t == 2 else self.spec.agent_ids

    def observe(self, agent):
        return np.array([self.t], dtype=np.float32)

    def legal_actions(self, agent):
        return [0, 1]

    def text_observation(self, agent):
        return f"step {self.t}"


def test_agents_acting_together_need_a_simultaneous_spec():
    with pytest.raises(games.GameCheckError) as err:
        games.check_game(_Together(simultaneous=False), episodes=1)
    msg = str(err.value)
    assert "['p0', 'p1'] act at once" in msg and "GameSpec(simultaneous=True)" in msg
    assert "\n" not in msg
    games.check_game(_Together(simultaneous=True), episodes=1)
