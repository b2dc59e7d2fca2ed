"""``check_game`` asks a zero-sum game for zero-sum *returns*, not zero-sum rewards at every
step: OpenSpiel's repeated_leduc_poker (zero-sum by its game type) pays a hand's result to one
player a step before the other, and check_game refused it ("rewards sum to 3.0"). Games
that sample chance inside OpenSpiel say at make time that their episodes do not replay."""

import numpy as np
import pytest

import games


class _Staggered(games.Game):
    """Two steps: the loser pays at the first, the winner is paid at the second."""

    def __init__(self, paid_back: float = 1.0):
        self.paid_back = paid_back
        ids = ("p0", "p1")
        self.spec = games.GameSpec(
            name="staggered", agents=tuple(games.AgentSpec(a, a, a) for a in ids),
            obs_shapes={a: (1,) for a in ids},
            action_spaces={a: games.ActionSpace("discrete", n=1) for a in ids},
            max_steps=2, zero_sum=True)

    def _reset(self, seed):
        self.t = 0

    def _step(self, actions):
        self.t += 1
        r = {"p0": -1.0, "p1": 0.0} if self.t == 1 else {"p0": 0.0, "p1": self.paid_back}
        over = self.t == 2
        return games.Transition(r, {a: over for a in r}, {a: False for a in r})

    def acting_agents(self):
        return () if self.t == 2 else (self.spec.agent_ids[self.t],)

    def observe(self, agent):
        return np.array([self.t], dtype=np.float32)

    def legal_actions(self, agent):
        return [0]

    def text_observation(self, agent):
        return f"step {self.t}"


def test_zero_sum_returns_pass_with_staggered_rewards():
    games.check_game(_Staggered(), episodes=2)
    games.check_game(games.make("openspiel/repeated_leduc_poker"), episodes=2)


def test_returns_that_do_not_sum_to_zero_still_fail():
    with pytest.raises(games.GameCheckError, match=r"episode end\): zero-sum game returns sum"):
        games.check_game(_Staggered(paid_back=2.0), episodes=1)


def test_a_game_that_samples_its_own_chance_says_it_does_not_replay(caplog):
    # negotiation draws its item pools from the game's generator: check_game's replay check
    # failed ("did not replay identically") with nothing telling the user why
    from games import openspiel

    openspiel._warned_sampled.discard("negotiation")
    with caplog.at_level("WARNING", logger="games.openspiel"):
        games.make("openspiel/negotiation")
        games.make("openspiel/negotiation")  # once per game: VectorGame makes many copies
        games.make("openspiel/kuhn_poker")
    (msg,) = [r.getMessage() for r in caplog.records]
    assert msg.startswith("openspiel/negotiation samples its chance") and "reset(seed)" in msg
