"""``check_game`` asks a zero-sum game for zero-sum *returns*, not zero-sum rewards at every
step: OpenSpiel's repeated_leduc_poker (zero-sum by its game type) pays a hand's result to one
player a step before the other, and check_game refused it ("rewards sum to 3.0"). Games
that sample chance inside OpenSpiel are seeded by reset(seed) like every other game."""

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


def test_a_game_that_samples_its_own_chance_is_seeded_by_reset(caplog):
    # negotiation draws its deals from the game's generator, a fixed stream from rng_seed:
    # every VectorGame copy played the same deals, seed= changed nothing, and check_game
    # failed ("did not replay identically"); reset(seed) now reloads it with rng_seed=seed
    first = games.VectorGame("openspiel/negotiation", 3, seed=0).reset().obs["player_0"]
    assert not np.array_equal(first[0], first[1]) and not np.array_equal(first[1], first[2])
    again = games.VectorGame("openspiel/negotiation", 3, seed=0).reset().obs["player_0"]
    other = games.VectorGame("openspiel/negotiation", 3, seed=7).reset().obs["player_0"]
    assert np.array_equal(first, again) and not np.array_equal(first, other)
    games.check_game(games.make("openspiel/negotiation"), episodes=1)  # replays its seed
    from games import openspiel

    openspiel._warned_sampled.discard("negotiation")
    with caplog.at_level("WARNING", logger="games.openspiel"):  # a fixed rng_seed is kept
        games.make("openspiel/negotiation", rng_seed=3)
        games.make("openspiel/negotiation", rng_seed=3)  # once: VectorGame makes many copies
    (msg,) = [r.getMessage() for r in caplog.records]
    assert "rng_seed=3" in msg and "same stream" in msg
