"""A game that ends before anyone acts is refused where it is made or reset (walk31 M1).

``openspiel/oware`` with ``num_seeds_per_house=0`` (or -1) passed the make-time parameter
check (the check took any name holding "seed" for a random seed) and failed at the first step
of a run with "step() after the episode ended; call reset()", which named no cause.
"""

from __future__ import annotations

import numpy as np
import pytest

import games


class Ended(games.Game):
    """A game whose every episode is over at its reset (no agent acts)."""

    def __init__(self):
        self.spec = games.GameSpec(
            name="fix31a_ended", agents=(games.AgentSpec("p0", "p0", "p0"),),
            obs_shapes={"p0": (1,)}, action_spaces={"p0": games.ActionSpace("discrete", n=2)},
            max_steps=4)

    def _reset(self, seed):
        pass

    def _step(self, actions):
        raise AssertionError("not reached")

    def acting_agents(self):
        return ()

    def observe(self, agent):
        return np.zeros(1, np.float32)

    def legal_actions(self, agent):
        return [0, 1]

    def text_observation(self, agent):
        return "over"


# ------------------------------------------------------------------------------- M1
@pytest.mark.parametrize("seeds", [0, -1])
def test_oware_with_no_seeds_is_refused_at_make_time_naming_the_argument(seeds):
    pytest.importorskip("pyspiel")
    with pytest.raises(games.GameError) as info:
        games.make("openspiel/oware", num_seeds_per_house=seeds)
    assert str(info.value) == (f"bad parameter for openspiel/oware: num_seeds_per_house={seeds}; "
                               "accepted: an integer in [1, 100]")
    assert games.make("openspiel/oware", num_seeds_per_house=1).reset(seed=0).acting


def test_an_openspiel_game_whose_first_state_is_terminal_is_refused_at_make_time():
    pytest.importorskip("pyspiel")
    with pytest.raises(games.GameError) as info:
        games.make("openspiel/checkers", rows=2)
    msg = str(info.value)
    assert msg.startswith("bad parameters for openspiel/checkers {'rows': 2}: the game ends "
                          "before anyone acts"), msg
    assert "step() after the episode ended" not in msg


def test_a_vector_game_whose_reset_ends_the_episode_names_the_game_at_reset():
    with pytest.raises(games.GameContractError) as info:
        games.VectorGame(Ended, num_envs=2).reset()
    assert str(info.value) == (
        "fix31a_ended reset(seed=0): no agent acts: the episode ended before anyone acted; "
        "check its arguments (a game whose random start may end an episode at once must "
        "still give someone a turn: reset() returns a time step in which an agent acts)")
