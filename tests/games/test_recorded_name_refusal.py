"""``games.registry.recorded_name_refusal``: which game names read from a file ``games.make``
may make. ``make`` runs what a name says (``pettingzoo/os:system(command=...)`` ran the
command; ``openspiel/nfg_game(filename=...)`` reads the file), so the one home of the check
that every reader of a recorded name uses (``selfplay-eval`` without ``--game``)."""

import os
import sys

import pytest

from games.registry import IMPORTS_ENV, printable, recorded_name_refusal

USER_GAMES = '''
from os import system  # noqa: F401
from pettingzoo.classic.tictactoe_v3 import env  # noqa: F401 - a maker it re-exports


def make_env(**kwargs):
    from pettingzoo.classic import tictactoe_v3
    return tictactoe_v3.env(**kwargs)
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A user's module that the command line imported (``--import f5_rec_games``)."""
    (tmp_path / "f5_rec_games.py").write_text(USER_GAMES)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(IMPORTS_ENV, "f5_rec_games")
    __import__("f5_rec_games")
    yield "f5_rec_games"
    sys.modules.pop("f5_rec_games", None)


@pytest.mark.parametrize("name", [
    "openspiel/kuhn_poker",
    "openspiel/goofspiel(num_cards=4,players=2)",
    "openspiel/bargaining(instances_file=)",  # empty: the game's own data
    "tool/lookup",
    "matrix/climbing",
    "no_such_game",  # games.make says it is unknown
    "vmas/balance(n_agents=2)",  # a scenario of VMAS's own list
    "pettingzoo/mpe2.simple_spread_v3(N=2,max_cycles=25)",
    "pettingzoo/pettingzoo.classic.tictactoe_v3",
    "pettingzoo/pettingzoo.classic.tictactoe_v3:env",
])
def test_names_of_games_that_read_nothing_and_call_no_user_code_are_made(name):
    assert recorded_name_refusal(name) == ""


@pytest.mark.parametrize("name, said", [
    ("pettingzoo/os:system(command='touch x')", "whose module os is neither a game of"),
    ("pettingzoo/subprocess.getoutput(cmd='x')", "whose module subprocess.getoutput is "),
    ("pettingzoo/pettingzoo.classic.all_modules", "whose module pettingzoo.classic.all_modules"),
    ("pettingzoo/mpe2.simple_spread_v3:some_function", "whose module mpe2.simple_spread_v3 "),
    ("pettingzoo/..os:system", "whose module ..os:system is not a module path"),
    ("openspiel/nfg_game(filename=/etc/passwd)", "which reads a file its parameter filename "
                                                 "names"),
    ("openspiel/efg_game(filename='/x.efg')", "which reads a file"),
    ("openspiel/turn_based_simultaneous_game(game=nfg_game(filename=a.nfg))",
     "its parameter filename names"),
    ("openspiel/bargaining(instances_file=/tmp/i.txt)", "its parameter instances_file names"),
    ("openspiel/python_hangman(word_list_file=w.txt)", "its parameter word_list_file names"),
])
def test_names_that_read_a_file_or_import_an_unnamed_module_are_refused(name, said):
    assert said in recorded_name_refusal(name)


def test_a_module_the_command_line_imported_may_name_its_own_functions(user_module):
    assert recorded_name_refusal(f"pettingzoo/{user_module}:make_env") == ""
    assert recorded_name_refusal(f"pettingzoo/{user_module}.make_env") == ""
    assert recorded_name_refusal(f"pettingzoo/{user_module}") == ""  # its env
    assert recorded_name_refusal(f"pettingzoo/{user_module}:env") == ""  # a maker's name
    # what it imported is not its game
    why = recorded_name_refusal(f"pettingzoo/{user_module}:system(command='x')")
    assert why == f"whose function system is {os.system.__module__}'s, which its module " \
        "imported, not one it defines"
    assert "not one it defines" in recorded_name_refusal(f"pettingzoo/{user_module}.system")


def test_a_module_that_was_not_imported_is_refused_before_it_is_imported(user_module):
    # refused from the name alone: the module is not imported to find out
    why = recorded_name_refusal("pettingzoo/f5_never_imported:make_env")
    assert why.startswith("whose module f5_never_imported is neither")
    assert "f5_never_imported" not in sys.modules


def test_what_a_refusal_quotes_of_the_name_is_escaped():
    why = recorded_name_refusal("pettingzoo/\x1b[2J:f")
    assert "\x1b" not in why and "\\x1b[2J" in why
    assert printable("a\nb\x1bc") == "a\\nb\\x1bc"
