"""A user's OpenSpiel Python game may define its State and Observer classes in modules of
their own (``mygame/state.py``, ``mygame/observer.py``), away from the Game class that
``pyspiel.register_game`` names. A bug of theirs while the game is made is still the game's:
one line naming the game, "when made", the user's method and line.

Before: ``games.make`` told the game's code from ours by the modules of the Game class only,
so a KeyError in the observer's ``set_from`` (or the state's ``_legal_actions``) in another
module was taken for ours and raised as a traceback through every command line (exit 1)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import games
from tests.populations.test_exact_info_state_guarded import _one_line_exit

HIGH_CARD = Path(__file__).resolve().parents[2] / "examples" / "openspiel_game" / "high_card.py"


def _split(tag: str, folder: Path, broken: str = "") -> str:
    """examples/openspiel_game/high_card.py as four modules, ``w25_<tag>_common`` (constants),
    ``w25_<tag>_state`` (State), ``w25_<tag>_obs`` (Observer) and ``w25_<tag>`` (the Game,
    registered as ``openspiel/w25_<tag>``); ``broken``: ``"state"`` makes the state's
    ``_legal_actions`` raise, ``"observer"`` the observer's ``set_from``. The Game's module."""
    src = HIGH_CARD.read_text().replace('short_name="high_card"', f'short_name="w25_{tag}"')
    head, rest = src.split("class HighCardGame", 1)
    game, rest = rest.split("class HighCardState", 1)
    state, rest = rest.split("class HighCardObserver", 1)
    observer, register = rest.split("pyspiel.register_game", 1)
    if broken == "state":
        state = state.replace("        return [CHECK_OR_FOLD, BET_OR_CALL]",
                              "        raise KeyError('the state bug')")
    if broken == "observer":
        observer = observer.replace("        self.tensor.fill(0)\n",
                                    "        raise KeyError('the observer bug')\n", 1)
    common = f"w25_{tag}_common"
    intro = ("from __future__ import annotations\nimport numpy as np\nimport pyspiel\n"
             f"from {common} import *\n")
    modules = {
        common: head,
        f"w25_{tag}_state": intro + "\nclass HighCardState" + state,
        f"w25_{tag}_obs": intro + "\nclass HighCardObserver" + observer,
        f"w25_{tag}": intro + f"from w25_{tag}_state import HighCardState\n"
                              f"from w25_{tag}_obs import HighCardObserver\n\n"
                              "class HighCardGame" + game + "pyspiel.register_game" + register,
    }
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in modules.items():
        (folder / f"{name}.py").write_text(text)
        sys.modules.pop(name, None)
    return f"w25_{tag}"


@pytest.fixture()
def split(tmp_path, monkeypatch):
    """``split(tag, broken)``: the game's module, importable and imported."""
    monkeypatch.syspath_prepend(str(tmp_path / "code"))

    def make(tag: str, broken: str = "") -> str:
        module = _split(tag, tmp_path / "code", broken)
        __import__(module)
        return module

    return make


def test_a_game_split_over_modules_plays(split):
    """The working game, split: made and held to the contract like the one-file example."""
    games.check_game(games.make(f"openspiel/{split('ok')}"))


@pytest.mark.parametrize("broken, method", [("observer", "set_from"),
                                            ("state", "_legal_actions")])
def test_a_bug_in_a_state_or_observer_module_when_made_is_one_line(split, broken, method):
    module = split(f"made_{broken}", broken)
    with pytest.raises(games.GameCodeError) as err:
        games.make(f"openspiel/{module}")
    assert re.match(rf"^openspiel/{module} when made: {method} raised KeyError: 'the {broken} "
                    rf"bug' \(at .*{module}_\w+\.py:\d+ in {method}\); HYDRA_FULL_ERROR=1 "
                    "shows the traceback$", str(err.value)), str(err.value)
    assert isinstance(err.value.__cause__, KeyError)


def test_the_cli_names_an_observer_modules_bug_in_one_line(split, tmp_path, monkeypatch, capfd):
    """``selfplay-train imports=[<game>]``: exit 2 and the one line, no run folder."""
    module = split("cli_observer", "observer")
    work = tmp_path / "work"
    work.mkdir()
    line = _one_line_exit([f"imports=[{module}]", f"game.name=openspiel/{module}",
                           "logger=none", "progress=false"], monkeypatch, work, capfd)
    assert re.match(rf"^selfplay-train: openspiel/{module} when made: set_from raised KeyError",
                    line), line
    assert list(work.iterdir()) == []
