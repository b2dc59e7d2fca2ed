"""A game OpenSpiel or VMAS knows, named without its prefix (``game.name=othello``), is
refused with the prefixed name to use (walk41: only the prefixes were listed), before torch."""
from __future__ import annotations

import subprocess
import sys

import pytest

from games.core import UnknownGameError
from games.registry import make


@pytest.mark.parametrize("name, hint", [("othello", "openspiel/othello"),
                                        ("kuhn_poker", "openspiel/kuhn_poker"),
                                        ("passage", "vmas/passage"),
                                        ("simple_spread", "vmas/simple_spread")])
def test_a_known_name_without_its_prefix_gets_the_prefixed_name(name, hint):
    with pytest.raises(UnknownGameError, match=f"unknown game '{name}'; did you mean '{hint}'"):
        make(name)


@pytest.mark.parametrize("name", ["tictactoe", "__init__", "no_such_game", "os.path"])
def test_a_name_nothing_knows_gets_no_guess(name):
    with pytest.raises(UnknownGameError) as err:
        make(name)
    assert "did you mean" not in str(err.value)


def test_the_guess_imports_neither_torch_nor_vmas():
    code = ("import sys\nfrom games.registry import make\ntry:\n    make('passage')\n"
            "except ValueError as err:\n    print(err)\n"
            "print(sorted(m for m in ('torch', 'vmas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout.splitlines()
    assert "did you mean 'vmas/passage'?" in out[0] and out[-1] == "[]"


def test_a_vmas_of_another_layout_gives_no_hint_and_no_crash(tmp_path):
    """A local vmas package without scenarios/ (review41 L1: FileNotFoundError)."""
    (tmp_path / "vmas").mkdir()
    (tmp_path / "vmas" / "__init__.py").write_text("")
    code = ("from games.registry import make\ntry:\n    make('no_such_game')\n"
            "except ValueError as err:\n    print(type(err).__name__, err)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path, check=True).stdout
    assert out.startswith("UnknownGameError unknown game 'no_such_game'; registered"), out
