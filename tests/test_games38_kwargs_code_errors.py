"""games38 (walk38a M1): with ``game.kwargs`` given, an exception of the game's own code in
its reset or first step is named with the method and the user's file:line, as without them.

Before: ``selfplay-train imports=[buggy2] game.name=bug_reset game.kwargs.horizon=4`` said
``bug_reset fails on its first step with the game arguments {'horizon': 4} (KeyError:
'missing'); check their values and types``: no method, no line (without the kwarg the run
said ``reset(seed=…): _reset raised KeyError: 'missing' (at …/buggy2.py:8 in _reset)``), and
"first step" for a failure in ``_reset``.
"""

from __future__ import annotations

import numpy as np
import pytest

import games
from populations.config_checks import check_game_kwargs

HERE = r"test_games38_kwargs_code_errors\.py:\d+"


class _Base(games.Game):
    def __init__(self, horizon: int = 4) -> None:
        self.horizon = horizon
        self.spec = games.GameSpec(
            "games38_kwargs", (games.AgentSpec("a", "a", "a"),), {"a": (1,)},
            {"a": games.ActionSpace("discrete", n=2)}, horizon)

    def _reset(self, seed):
        self.t = 0

    def _step(self, actions):
        self.t += 1
        return games.Transition({"a": 0.0}, {"a": self.t >= self.horizon}, {"a": False})

    def acting_agents(self):
        return ("a",) if self.t < self.horizon else ()

    def observe(self, agent):
        return np.zeros(1, np.float32)

    def legal_actions(self, agent):
        return [0, 1]

    def text_observation(self, agent):
        return "a game"


@games.register("games38_bad_reset")
class BadReset(_Base):
    def _reset(self, seed):
        self.t = 0
        return {}["missing"]


@games.register("games38_bad_step")
class BadStep(_Base):
    def _step(self, actions):
        return self.lookup()

    def lookup(self):
        return [][self.horizon]


def test_a_bug_in_reset_names_reset_the_method_and_the_line():
    with pytest.raises(ValueError, match=(
            r"^games38_bad_reset fails at reset\(seed=0\) with the game arguments "
            r"\{'horizon': 4\}: _reset raised KeyError: 'missing' "
            rf"\(at .*{HERE} in _reset\); check their values and types")) as info:
        check_game_kwargs("games38_bad_reset", {"horizon": 4})
    assert "first step" not in str(info.value)
    assert isinstance(info.value.__cause__, KeyError)  # HYDRA_FULL_ERROR=1 shows its traceback


def test_a_bug_in_the_first_step_names_the_step_the_method_and_the_line():
    # time step 0 (as the run says it); the method the contract called (_step), the line
    # that raised (in lookup)
    with pytest.raises(ValueError, match=(
            r"^games38_bad_step fails at step 0 with the game arguments \{'horizon': 4\}: "
            rf"_step raised IndexError: list index out of range \(at .*{HERE} in lookup\)")):
        check_game_kwargs("games38_bad_step", {"horizon": 4})
