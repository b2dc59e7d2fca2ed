"""``games/core.py`` split along its seams (session 38): it was 901 lines, over STYLE's ~800 a
module, holding three ideas: the errors a game can raise with the one-line text of a game's own
exception (now ``games.errors``), the action-text matcher that ``parse_action``, check_game and
``llm_agents`` share (now ``games.action_text``), and the contract itself (``games.core``).
``games.check`` imported three of core's private helpers (``_action_said``, ``_method_of``,
``_norm_text``); it now reads only public names.

Every name ``games.core`` offered keeps working from it (re-exports), and a game's own
exception still names the game's method, not a frame of the contract's modules.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import games
import games.core
from games import ActionSpace, AgentSpec, Game, GameCodeError, GameSpec, Transition

ROOT = Path(__file__).resolve().parents[1]

CORE_PUBLIC = (
    "Action", "ActionSpace", "AgentSpec", "EntityGraph", "EpisodeTooLongError", "Game",
    "GameCodeError", "GameContractError", "GameError", "GameSpec", "IllegalActionError",
    "InvalidAction", "TimeStep", "Transition", "UnknownGameError", "action_key",
    "action_matches", "choice_index", "last_action_tag", "raised_text", "where_raised")
"""The public names games.core offered before the split (what the repo imports from it)."""


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_reads(path: Path) -> list[str]:
    """Where ``path`` reads an underscored (not dunder) name of another ``games`` module:
    ``from games.x import _name`` (or a relative import) or ``<games module>._name``."""
    rel = str(path.relative_to(ROOT))
    tree = ast.parse(path.read_text(), rel)
    modules: set[str] = set()  # local names bound to a games module
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(
                "games")):
            found += [f"{rel}:{node.lineno} imports {node.module}.{a.name}"
                      for a in node.names if _private(a.name)]
            modules |= {a.asname or a.name for a in node.names}  # `from games import core`
        elif isinstance(node, ast.Import):
            modules |= {a.asname or a.name.split(".")[0] for a in node.names
                        if a.name.startswith("games")}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            base = ast.unparse(node.value)
            if base.split(".")[0] in modules and base not in ("self", "cls"):
                found.append(f"{rel}:{node.lineno} reads {base}.{node.attr}")
    return found


def test_every_games_module_is_at_most_800_lines():
    long = {str(p.relative_to(ROOT)): n for p in sorted((ROOT / "games").rglob("*.py"))
            if (n := len(p.read_text().splitlines())) > 800}
    assert long == {}, long


@pytest.mark.parametrize("name", ["check", "core", "errors", "action_text"])
def test_the_contract_modules_read_only_public_names_of_the_others(name):
    assert _private_reads(ROOT / "games" / f"{name}.py") == []


def test_the_walk_finds_both_forms(tmp_path, monkeypatch):
    """The walk's own check: it finds an import of an underscored name and an attribute read
    (a walk that finds nothing passes the test above on any code)."""
    probe = ROOT / "games" / "split38a_probe_never_written.py"
    text = ("from games.core import Game, _x\nfrom games import core\n"
            "def f(self):\n    return core._y, self._z\n")
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: text)
    assert [r.split(" ", 1)[1] for r in _private_reads(probe)] == [
        "imports games.core._x", "reads core._y"]


@pytest.mark.parametrize("name", CORE_PUBLIC)
def test_games_core_still_offers_every_public_name(name):
    value = getattr(games.core, name)
    if hasattr(games, name):  # and `games` the same object
        assert getattr(games, name) is value


def test_the_moved_names_are_the_same_objects_in_their_new_homes():
    from games import action_text, errors

    moved = {errors: ("EpisodeTooLongError", "GameCodeError", "GameContractError", "GameError",
                      "IllegalActionError", "InvalidAction", "UnknownGameError", "raised_text",
                      "where_raised"),
             action_text: ("action_key", "action_matches", "last_action_tag")}
    for module, names in moved.items():
        assert set(names) <= set(module.__all__), module
        for name in names:
            assert getattr(games.core, name) is getattr(module, name), name


def test_games_imports_without_torch():
    code = "import sys, games, games.core, games.check; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


class _Raises(Game):
    """One agent whose ``observe`` raises at step 1 (reset observes fine)."""

    def __init__(self) -> None:
        self.spec = GameSpec("split38a_raises", (AgentSpec("p0", "p0", "p0"),),
                             {"p0": (1,)}, {"p0": ActionSpace("discrete", n=2)}, max_steps=5)
        self.t = 0

    def _reset(self, seed):
        self.t = 0

    def _step(self, actions):
        self.t += 1
        return Transition({"p0": 0.0}, {"p0": False}, {"p0": False})

    def acting_agents(self):
        return ("p0",)

    def observe(self, agent):
        if self.t:
            raise RuntimeError("sensor broke")
        return np.zeros(1, np.float32)

    def legal_actions(self, agent):
        return [0, 1]

    def text_observation(self, agent):
        return str(1 / self.t)


def test_a_games_own_exception_still_names_its_method_not_the_contracts():
    """The method named is the outermost frame outside the contract (``games.core``: reset,
    step, guarded, the agent-id wrappers), now that GameCodeError lives in games.errors."""
    g = _Raises()
    g.reset(seed=0)
    with pytest.raises(GameCodeError) as info:
        g.step({"p0": 1})
    assert info.value.method == "observe"
    assert str(info.value).startswith("split38a_raises step 1: observe raised RuntimeError: "
                                      "sensor broke (at ")
    g.reset(seed=0)
    with pytest.raises(GameCodeError) as info:
        g.guarded(g.text_observation, "p0")
    assert info.value.method == "text_observation"
    assert "text_observation('p0') raised ZeroDivisionError" in str(info.value)
