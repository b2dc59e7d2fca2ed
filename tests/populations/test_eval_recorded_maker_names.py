"""selfplay-eval does not call a maker's name (``env``) that a module the user ``--import``ed
took from elsewhere (``from os import system as env``): a policy file recording
``pettingzoo/<module>:env(command=...)`` ran the command before (review 22, R1b)."""

import os
import sys

import pytest

from tests.populations.eval_cli_run import run_eval
from tests.populations.test_eval_recorded_names import _policy

MODULE = "fr_eval_maker_games"


@pytest.fixture
def maker_games(tmp_path, monkeypatch):
    """The user's module in the working folder; what importing it changes is undone."""
    from games.registry import IMPORTS_ENV

    (tmp_path / f"{MODULE}.py").write_text("from os import system as env  # noqa: F401\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    for var in ("PYTHONPATH", IMPORTS_ENV):
        monkeypatch.setenv(var, os.environ.get(var, ""))
    yield MODULE
    sys.modules.pop(MODULE, None)


@pytest.mark.parametrize("recorded", [
    "pettingzoo/{module}:env(command='touch {marker}')",
    "pettingzoo/{module}(command='touch {marker}')",  # its env, found by the module's name
])
def test_a_makers_name_an_imported_module_imported_is_not_called(recorded, maker_games,
                                                                 tmp_path, capsys):
    marker = tmp_path / "pwned"
    name = recorded.format(module=maker_games, marker=marker)
    a, b = _policy(tmp_path / "a.pt", name), _policy(tmp_path / "b.pt", name)
    code, _, err = run_eval([a, b, "--import", maker_games, "--db", str(tmp_path / "r.db")],
                            capsys)
    lines = err.strip().splitlines()
    assert not marker.exists()
    assert code == 2 and len(lines) == 1, err
    assert "whose function env is posix's, which its module imported" in lines[0], lines
    assert "give the game with --game" in lines[0], lines
    assert not (tmp_path / "r.db").exists()
