"""``check_game`` refuses a NaN observation and a zero-sum game whose returns sum below zero
(mutation walk mut41a: with either check weakened the suite passed)."""

import numpy as np
import pytest

from games import ActionSpace, AgentSpec, Game, GameSpec, Transition, check_game
from games.check import GameCheckError

IDS = ("player_0", "player_1")


class OneShot(Game):
    """Both play once; ``obs`` is every observation, ``pay`` the rewards of the move."""

    def __init__(self, obs=0.0, pay=(1.0, -1.0), zero_sum=True) -> None:
        self.spec = GameSpec(
            name="test/one_shot",
            agents=tuple(AgentSpec(a, a, a) for a in IDS),
            obs_shapes={a: (1,) for a in IDS},
            action_spaces={a: ActionSpace("discrete", n=2) for a in IDS},
            max_steps=1,
            zero_sum=zero_sum,
            simultaneous=True,
        )
        self.obs, self.pay, self.t = obs, pay, 0

    def _reset(self, seed):
        self.t = 0

    def _step(self, actions):
        self.t = 1
        return Transition(dict(zip(IDS, self.pay, strict=True)), {a: True for a in IDS},
                          {a: False for a in IDS})

    def acting_agents(self):
        return () if self.t else IDS

    def observe(self, agent):
        return np.array([self.obs], np.float32)

    def legal_actions(self, agent):
        return [0, 1]

    def text_observation(self, agent):
        return "one shot"


def test_the_fixtures_pass():
    assert check_game(OneShot(), episodes=2).episodes == 2


def test_a_nan_observation_is_refused():
    """Mutant: the observations' finiteness check dropped."""
    with pytest.raises(GameCheckError, match=r"obs of player_0 is not finite"):
        check_game(OneShot(obs=float("nan")), episodes=1)


@pytest.mark.parametrize("pay", [(1.0, -2.0), (2.0, -1.0)])
def test_zero_sum_returns_must_sum_to_zero_either_way(pay):
    """Mutant: ``total < 1e-6`` (a sum below zero passed)."""
    with pytest.raises(GameCheckError, match=r"zero-sum game returns sum to -?1\.0"):
        check_game(OneShot(pay=pay), episodes=1)
    check_game(OneShot(pay=pay, zero_sum=False), episodes=1)
