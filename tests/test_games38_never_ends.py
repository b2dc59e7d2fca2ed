"""games38 (walk38a L4): a game whose episodes never end is seen by the start check.

Before: ``games.check.start_warnings`` (selfplay-train's 200 random steps on a user's game)
played one episode past ``spec.max_steps`` and found nothing, though VectorGame refuses that
step in training; a league on such a game made its folder, a checkpoint and a resume command
and trained nothing. Both start checks now raise :class:`games.check.EpisodeNotEndedError`
(a GameCheckError), which a command line can refuse before it starts.
"""

from __future__ import annotations

import numpy as np
import pytest

import games
from games.check import (
    EpisodeNotEndedError,
    GameCheckError,
    check_game,
    replay_problem,
    start_warnings,
)

WORDS = (r"^games38_never seed 0 step 3: the episode has not ended after 3 steps, but "
         r"spec.max_steps=3; a game must end \(terminate or truncate\) every episode within "
         r"max_steps$")


class NeverEnds(games.Game):
    def __init__(self) -> None:
        self.spec = games.GameSpec(
            "games38_never", (games.AgentSpec("a", "a", "a"),), {"a": (1,)},
            {"a": games.ActionSpace("discrete", n=2)}, 3)

    def _reset(self, seed):
        self.t = 0

    def _step(self, actions):
        self.t += 1
        return games.Transition({"a": 0.0}, {"a": False}, {"a": False})

    def acting_agents(self):
        return ("a",)

    def observe(self, agent):
        return np.zeros(1, np.float32)

    def legal_actions(self, agent):
        return [0, 1]

    def text_observation(self, agent):
        return "a game"


def test_start_warnings_refuse_an_episode_past_max_steps():
    with pytest.raises(EpisodeNotEndedError, match=WORDS):
        start_warnings(NeverEnds())


@pytest.mark.parametrize("check", [lambda: check_game(NeverEnds()),
                                   lambda: replay_problem(NeverEnds, 0)])
def test_the_other_checks_say_it_in_the_same_words_and_class(check):
    with pytest.raises(EpisodeNotEndedError, match=WORDS) as info:
        check()
    assert isinstance(info.value, GameCheckError)  # its catchers still catch it
