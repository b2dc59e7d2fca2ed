"""games36 (walk36a M1/M2): an exception of a game's ``__init__`` is one GameError line naming
the game, the exception and the user's file:line.

Before: an AttributeError there (``self.foo = self.bar``) was a traceback from selfplay-train,
after its run folder was made; a ValueError built without arguments came out as it was
(``selfplay-train: my init is broken``: no game, no line); with arguments, any ValueError
blamed the arguments without saying where it was raised.
"""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest

import games
from tests import subprocs

HERE = r"test_games36_init_errors.py:\d+ in __init__"


class _Base(games.Game):
    def __init__(self, target: int = 8) -> None:
        self.spec = games.GameSpec(
            "games36_init", (games.AgentSpec("a", "a", "a"),), {"a": (1,)},
            {"a": games.ActionSpace("discrete", n=2)}, 4)

    def _reset(self, seed):
        self.t = 0

    def _step(self, actions):
        self.t += 1
        return games.Transition({"a": 0.0}, {"a": self.t >= 2}, {"a": False})

    def acting_agents(self):
        return ("a",) if self.t < 2 else ()

    def observe(self, agent):
        return np.zeros(1, np.float32)

    def legal_actions(self, agent):
        return [0, 1]

    def action_text(self, agent, action):
        return ("x", "y")[action]

    def text_observation(self, agent):
        return "a game"


@games.register("games36_attr")
class AttrBug(_Base):
    def __init__(self, target: int = 8) -> None:
        super().__init__(target)
        self.foo = self.bar  # the walker's typical bug


@games.register("games36_value")
class ValueBug(_Base):
    def __init__(self, target: int = 8) -> None:
        raise ValueError("my init is broken")


def test_an_attribute_error_is_one_line_naming_game_and_line():
    with pytest.raises(games.GameError, match=(
            r"^games36_attr: __init__ raised AttributeError: 'AttrBug' object has no attribute "
            rf"'bar' \(at .*{HERE}\)$")) as info:
        games.make("games36_attr")
    assert isinstance(info.value.__cause__, AttributeError)  # HYDRA_FULL_ERROR=1 shows it


def test_a_value_error_without_arguments_names_game_and_line():
    with pytest.raises(games.GameError, match=(
            rf"^games36_value: __init__ raised ValueError: my init is broken \(at .*{HERE}\)$")):
        games.make("games36_value")


def test_with_arguments_a_value_error_names_them_and_the_line():
    with pytest.raises(games.GameError, match=(
            r"^games36_value cannot be built with the game arguments \{'target': 3\} "
            r"\(ValueError: my init is broken\); check their values and types "
            rf"\(at .*{HERE}\)$")):
        games.make("games36_value", target=3)


def test_with_arguments_an_attribute_error_is_the_games_bug():
    with pytest.raises(games.GameError, match=r"^games36_attr\(target=3\)?: __init__ raised "
                                              r"AttributeError|^games36_attr: __init__ raised "
                                              r"AttributeError"):
        games.make("games36_attr", target=3)


GAME = '''
from games.matrix import MatrixGame


class AttrBug(MatrixGame):
    def __init__(self):
        self.foo = self.bar


import games

games.register("games36_cli_attr")(AttrBug)
'''


def test_selfplay_train_says_one_line_and_makes_no_folder(tmp_path):
    (tmp_path / "games36_cli.py").write_text(GAME)
    args = [sys.executable, "-m", "populations.cli", "imports=[games36_cli]",
            "game.name=games36_cli_attr", "frames=64", "num_envs=2", "progress=false",
            "logger=none", "hydra.run.dir=runs/r1"]
    res = subprocs.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert re.fullmatch(r"selfplay-train: games36_cli_attr: __init__ raised AttributeError: "
                        r"'AttrBug' object has no attribute 'bar' \(at games36_cli.py:7 in "
                        r"__init__\)", last), last
    assert not (tmp_path / "runs").exists()
