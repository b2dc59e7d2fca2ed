"""A game name read from a policy file reaches ``games.make`` only once
``games.registry.recorded_name_refusal`` passed it, in ``selfplay-eval``'s every use of it.

dd9c3c8 refused a recorded PettingZoo name whose module the user had not ``--import``ed, but
took any function of an imported module: a user's ``mygames.py`` holding ``from os import
system`` let a file's ``pettingzoo/mygames:system(command='...')`` run the command. Its file
check knew ``filename=`` only (``python_hangman(word_list_file=...)`` read the file), and
the notes on a file trained on other arguments of the game given made the recorded name
unchecked (``_spec_of``).
"""

import dataclasses
import os
import sys

import pytest

import games
from marl import registry
from tests.populations.eval_cli_run import run_eval

KUHN = "openspiel/kuhn_poker"
USER_MODULE = "f5_user_games"
USER_GAMES = '''
from os import system  # noqa: F401 - a module's imports are not its games
from subprocess import getoutput  # noqa: F401

import games


def make_env(**kwargs):  # the user's own PettingZoo env
    return games.to_pettingzoo(games.make("openspiel/kuhn_poker", **kwargs))
'''


@pytest.fixture
def user_games(tmp_path, monkeypatch):
    """The user's module in the working folder; what importing it changes is undone."""
    from games.registry import IMPORTS_ENV

    (tmp_path / f"{USER_MODULE}.py").write_text(USER_GAMES)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    for var in ("PYTHONPATH", IMPORTS_ENV):
        monkeypatch.setenv(var, os.environ.get(var, ""))
    yield USER_MODULE
    sys.modules.pop(USER_MODULE, None)


@pytest.fixture
def made(monkeypatch):
    """The names ``games.make`` was asked for (the CLI imports it when it runs)."""
    names: list[str] = []
    real = games.make

    def make(spec, **kwargs):
        names.append(spec)
        return real(spec, **kwargs)

    monkeypatch.setattr(games, "make", make)
    return names


def _policy(path, recorded):
    pol = registry.get("mappo").build(games.make(KUHN).spec).policy()
    pol.meta = dataclasses.replace(pol.meta, game=recorded)
    return str(pol.save(path))


@pytest.mark.parametrize("recorded, said", [
    ("pettingzoo/{module}:system(command='touch {marker}')",
     "whose function system is posix's, which its module imported"),
    ("pettingzoo/{module}.getoutput(cmd='touch {marker}')",
     "whose function getoutput is subprocess's, which its module imported"),
])
def test_a_function_an_imported_module_imported_is_not_called(recorded, said, user_games,
                                                               tmp_path, capsys):
    marker = tmp_path / "pwned"
    name = recorded.format(module=user_games, marker=marker)
    a, b = _policy(tmp_path / "a.pt", name), _policy(tmp_path / "b.pt", name)
    code, _, err = run_eval([a, b, "--import", user_games, "--db", str(tmp_path / "r.db")], capsys)
    lines = err.strip().splitlines()
    assert not marker.exists()
    assert code == 2 and len(lines) == 1, err
    assert said in lines[0] and "give the game with --game" in lines[0], lines
    assert not (tmp_path / "r.db").exists()


def test_a_game_parameter_naming_a_file_is_not_made(tmp_path, capsys, made):
    words = tmp_path / "words.txt"
    words.write_text("secret\n")
    name = f"openspiel/python_hangman(word_list_file={words})"
    a, b = _policy(tmp_path / "a.pt", name), _policy(tmp_path / "b.pt", name)
    code, _, err = run_eval([a, b, "--db", str(tmp_path / "r.db")], capsys)
    lines = err.strip().splitlines()
    assert name not in made
    assert code == 2 and len(lines) == 1, err
    assert "which reads a file its parameter word_list_file names" in lines[0], lines


def test_a_pettingzoo_module_that_is_no_game_of_its_package_is_not_made(tmp_path, capsys,
                                                                          made):
    # a function below a package of PettingZoo games, not a game module's env
    name = "pettingzoo/pettingzoo.classic.all_modules.find_spec(name='os')"
    a, b = _policy(tmp_path / "a.pt", name), _policy(tmp_path / "b.pt", name)
    code, _, err = run_eval([a, b, "--db", str(tmp_path / "r.db")], capsys)
    lines = err.strip().splitlines()
    assert name not in made
    assert code == 2 and len(lines) == 1, err
    assert "whose module pettingzoo.classic.all_modules.find_spec is neither a game of a " \
        "package of PettingZoo games" in lines[0], lines


def test_the_notes_on_another_game_make_no_recorded_name_that_reads_a_file(made):
    # --game openspiel/nfg_game(filename=1) given, a file trained on filename=2: the notes
    # compared the two games by making the recorded one, which read the file it names
    from populations.eval_notes import game_notes

    spec = games.make(KUHN).spec
    spec = dataclasses.replace(spec, name="openspiel/nfg_game(filename=1)")
    notes = game_notes("a", "openspiel/nfg_game(filename=2)", spec)
    assert made == [KUHN]  # this test's own
    assert notes == ["a was trained on openspiel/nfg_game(filename=2); it plays "
                     "openspiel/nfg_game(filename=1) here"]
