"""A ValueError or TypeError that a user game raises when built with the user's arguments is a
``GameError`` naming the game and the arguments, the line ``selfplay-train`` gives any other
exception there (``<game> cannot be built with the game arguments {...} (KeyError: ...); check
their values and types``). Before (walk 25): ``selfplay-train game.kwargs.speed=fast`` printed
``selfplay-train: could not convert string to float: 'fast'``, naming neither. A game's own
refusals (``GameError``, already one line naming the value) pass unchanged."""

from __future__ import annotations

import re
import sys

import pytest

import games
from tests import subprocs

# The walker's line pursuit, cut to its constructor's arguments: ``float(speed)`` and
# ``steps + 1`` fail on a word where a number goes; ``mode`` is looked up in a dict.
PURSUIT = '''
import numpy as np
import games

AGENTS = ("hunter", "runner")


class Pursuit(games.Game):
    def __init__(self, steps: int = 3, speed: float = 0.1, mode: str = "a"):
        self.steps, self.speed = steps, float(speed)
        self.horizon = steps + 1
        self.mode = {"a": 1, "b": 2}[mode]
        if self.speed <= 0:
            raise games.GameError(f"speed must be > 0, got {speed}")
        self.spec = games.GameSpec(
            name="w25_pursuit", agents=tuple(games.AgentSpec(a, a, a) for a in AGENTS),
            obs_shapes={a: (1,) for a in AGENTS},
            action_spaces={a: games.ActionSpace("discrete", n=2) for a in AGENTS},
            max_steps=steps, simultaneous=True, zero_sum=True)

    def _reset(self, seed):
        self.t = 0

    def _step(self, actions):
        self.t += 1
        return games.Transition({"hunter": 1.0, "runner": -1.0},
                                {a: self.t >= self.steps for a in AGENTS},
                                {a: False for a in AGENTS})

    def acting_agents(self):
        return () if self.t >= self.steps else AGENTS

    def observe(self, agent):
        return np.array([self.t * self.speed], np.float32)

    def legal_actions(self, agent):
        return [0, 1]

    def text_observation(self, agent):
        return f"step {self.t}"


games.register("w25_pursuit")(Pursuit)
games.register("w25_pursuit_broken")(lambda: Pursuit(speed="never"))
'''


@pytest.fixture()
def pursuit(tmp_path, monkeypatch):
    """The module of ``PURSUIT``, written in ``tmp_path`` and imported."""
    (tmp_path / "w25_pursuit.py").write_text(PURSUIT)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("w25_pursuit", None)
    __import__("w25_pursuit")
    yield tmp_path
    sys.modules.pop("w25_pursuit", None)


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"speed": "fast"}, "ValueError: could not convert string to float: 'fast'"),
    ({"steps": "5"}, 'TypeError: can only concatenate str (not "int") to str'),
    ({"speed": "fast", "teams": [["hunter"], ["runner"]]},  # every argument the user gave
     "ValueError: could not convert string to float: 'fast'"),
])
def test_a_value_or_type_error_on_the_arguments_names_game_and_arguments(pursuit, kwargs,
                                                                         error):
    with pytest.raises(games.GameError) as info:
        games.make("w25_pursuit", **kwargs)
    # games36: the line the error came from ends it
    text = str(info.value)
    assert text.startswith(f"w25_pursuit cannot be built with the game arguments {kwargs} "
                           f"({error}); check their values and types (at "), text
    assert re.search(r"w25_pursuit\.py:\d+ in __init__\)$", text), text
    assert isinstance(info.value.__cause__, (ValueError, TypeError))  # HYDRA_FULL_ERROR=1


def test_a_games_own_refusal_passes_unchanged(pursuit):
    with pytest.raises(games.GameError, match=r"^speed must be > 0, got -1$"):
        games.make("w25_pursuit", speed=-1)
    with pytest.raises(games.GameError, match=r"^tool/relay needs max_value >= 1, "):
        games.make("tool/relay", max_calls=0)  # a built-in game's own
    with pytest.raises(games.GameError, match=r"^bad arguments for game 'w25_pursuit': "):
        games.make("w25_pursuit", sped=0.2)  # an argument it does not take: as before


def test_without_arguments_it_is_the_games_bug_named_with_its_line(pursuit):
    """No argument of the user's failed: the game's own error, named with the game and the
    line it came from (games36; it raised as it was, naming neither), its traceback kept as
    the cause."""
    with pytest.raises(games.GameError) as info:
        games.make("w25_pursuit_broken")
    text = str(info.value)
    assert text.startswith("w25_pursuit_broken: ") and "game arguments" not in text, text
    assert "ValueError: could not convert string to float: 'never' (at " in text, text
    assert re.search(r"w25_pursuit\.py:\d+ in __init__\)$", text), text
    assert isinstance(info.value.__cause__, ValueError)


def test_selfplay_train_names_game_and_argument(pursuit):
    """The walker's command: the same line a KeyError there got (a word where a number
    goes, exit 2, no run folder)."""
    lines = {}
    for kwarg in ("speed=fast", "mode=c"):
        args = [sys.executable, "-m", "populations.cli", "imports=[w25_pursuit]",
                "game.name=w25_pursuit", f"game.kwargs.{kwarg}", "frames=64", "num_envs=2",
                "progress=false", "logger=none", "hydra.run.dir=runs/r1"]
        res = subprocs.run(args, cwd=pursuit, capture_output=True, text=True, timeout=600)
        assert res.returncode == 2, res.stderr
        assert "Traceback" not in res.stderr
        line = res.stderr.strip().splitlines()[-1]
        assert re.search(r" \(at \S*w25_pursuit\.py:\d+ in __init__\)$", line), line
        lines[kwarg] = re.sub(r" \(at \S*w25_pursuit\.py:\d+ in __init__\)$", "", line)
    assert lines == {
        "speed=fast": "selfplay-train: w25_pursuit cannot be built with the game arguments "
                      "{'speed': 'fast'} (ValueError: could not convert string to float: "
                      "'fast'); check their values and types",
        "mode=c": "selfplay-train: w25_pursuit cannot be built with the game arguments "
                  "{'mode': 'c'} (KeyError: 'c'); check their values and types"}
    assert not (pursuit / "runs").exists()
