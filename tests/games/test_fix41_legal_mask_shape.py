"""A game's own ``legal_mask`` of another shape than ``[n]`` is a contract error naming the
game, step and agent (review41 L2: a ``(1,)`` mask was broadcast into every action, a longer
one was numpy's "Output array is the wrong shape" from VectorGame)."""
from __future__ import annotations

import numpy as np
import pytest

from games.core import ActionSpace, AgentSpec, Game, GameContractError, GameSpec, Transition
from games.vector import VectorGame


def _game(mask):
    class Masked(Game):
        def __init__(self):
            self.spec = GameSpec("masked", (AgentSpec("a", "a", "t0"), AgentSpec("b", "b", "t1")),
                                 {"a": (3,), "b": (3,)},
                                 {"a": ActionSpace("discrete", n=2),
                                  "b": ActionSpace("discrete", n=2)},
                                 max_steps=5, simultaneous=True)
            self.t = 0

        def _reset(self, seed):
            self.t = 0

        def _step(self, actions):
            self.t += 1
            done = self.t >= 3
            return Transition({"a": 1.0, "b": -1.0}, {"a": done, "b": done},
                              {"a": False, "b": False})

        def acting_agents(self):
            return () if self.t >= 3 else ("a", "b")

        def observe(self, agent):
            return np.zeros(3, np.float32)

        def legal_actions(self, agent):
            return range(2)

        def text_observation(self, agent):
            return ""

        def legal_mask(self, agent):
            return mask

    return Masked


@pytest.mark.parametrize("mask, shape", [(np.array([True]), "(1,)"),
                                         (np.array([True, False, True]), "(3,)"),
                                         (np.ones((2, 1), bool), "(2, 1)")])
def test_a_mask_of_another_shape_is_refused_naming_the_game(mask, shape):
    with pytest.raises(GameContractError, match=rf"masked.*legal mask of a is bool of shape "
                                                rf"{re_escape(shape)}, expected bool of "
                                                rf"shape \(2,\)"):
        VectorGame(_game(mask), 3, seed=0).reset()


@pytest.mark.parametrize("mask", [np.array([1, 0]), [True, False], np.array([0.5, 0.0])])
def test_masks_of_the_right_length_keep_working(mask):
    vs = VectorGame(_game(mask), 3, seed=0).reset()
    assert vs.legal["a"].shape == (3, 2)


def re_escape(text: str) -> str:
    import re

    return re.escape(text)
