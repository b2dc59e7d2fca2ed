"""``recorded_name_refusal`` (review 22, R1 and R1b): a recorded name may give no folder
either (OpenSpiel's crossword lists ``puzzles_root`` recursively when it is made), only an
empty value reads nothing (``filename=''/etc/passwd`` is not empty), and a maker's name
(``env``, ``parallel_env``, ``raw_env``) in a module the user imported is called only when
the module, or PettingZoo, defines it: ``from os import system as env`` is not a game."""

import sys

import pytest

from games.registry import IMPORTS_ENV, recorded_name_refusal

MAKER_IMPORTS = '''
from os import system as env  # noqa: F401
from subprocess import getoutput as raw_env  # noqa: F401
'''

OWN_MAKERS = '''
from pettingzoo.classic.rps_v2 import env as rps_env
from pettingzoo.utils.conversions import parallel_wrapper_fn


def env(**kwargs):  # the user's own, wrapped by PettingZoo's helper below
    return rps_env(**kwargs)


parallel_env = parallel_wrapper_fn(env)
'''


def _module(tmp_path, monkeypatch, name, text):
    (tmp_path / f"{name}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(IMPORTS_ENV, name)
    __import__(name)
    return name


@pytest.fixture
def maker_imports(tmp_path, monkeypatch):
    yield _module(tmp_path, monkeypatch, "fr_maker_imports", MAKER_IMPORTS)
    sys.modules.pop("fr_maker_imports", None)


@pytest.fixture
def own_makers(tmp_path, monkeypatch):
    yield _module(tmp_path, monkeypatch, "fr_own_makers", OWN_MAKERS)
    sys.modules.pop("fr_own_makers", None)


@pytest.mark.parametrize("name, parameter", [
    ("openspiel/crossword(puzzles_root=/)", "puzzles_root"),
    ("openspiel/crossword(puzzles_root='/tmp')", "puzzles_root"),
    ("openspiel/g(data_dir=/x)", "data_dir"),
    ("openspiel/g(log_path=/x)", "log_path"),
    ("openspiel/g(cache_folder=x)", "cache_folder"),
    ("openspiel/g(path=/x)", "path"),
    ("openspiel/g(root=/)", "root"),
    ("openspiel/g(a=1,dir=/)", "dir"),
    ("openspiel/g(Puzzles_Root=/)", "Puzzles_Root"),
    ("openspiel/nfg_game(filename=''/etc/passwd)", "filename"),
    ('openspiel/nfg_game(filename=""/etc/passwd)', "filename"),
    ("openspiel/nfg_game(filename='' /etc/passwd)", "filename"),
    ("openspiel/nfg_game(filename= /etc/passwd)", "filename"),
])
def test_a_parameter_naming_a_folder_or_a_not_empty_path_is_refused(name, parameter):
    assert recorded_name_refusal(name) == f"which reads a file its parameter {parameter} names"


@pytest.mark.parametrize("name", [
    "openspiel/nfg_game(filename='')",
    'openspiel/nfg_game(filename="")',
    "openspiel/crossword(puzzles_root=,word_list_file='')",
    "openspiel/crossword(puzzles_root= '' )",
    "openspiel/bargaining(instances_file=)",
    "openspiel/goofspiel(num_cards=4,points_order=random)",
    "openspiel/mfg_dynamic_routing(network=braess)",
])
def test_an_empty_value_and_other_parameters_are_made(name):
    assert recorded_name_refusal(name) == ""


@pytest.mark.parametrize("function", ["env", "raw_env"])
def test_a_makers_name_the_module_imported_is_refused(maker_imports, function):
    why = recorded_name_refusal(f"pettingzoo/{maker_imports}:{function}(command='x')")
    assert why.startswith(f"whose function {function} is ") and why.endswith(
        "which its module imported, not one it defines"), why


def test_a_module_whose_env_it_imported_is_refused(maker_imports):
    assert recorded_name_refusal(f"pettingzoo/{maker_imports}").startswith(
        "whose function env is ")  # found by the module's name alone


def test_makers_the_module_defines_or_pettingzoo_wraps_are_made(own_makers):
    assert recorded_name_refusal(f"pettingzoo/{own_makers}") == ""  # parallel_env
    assert recorded_name_refusal(f"pettingzoo/{own_makers}:env") == ""
    assert recorded_name_refusal(f"pettingzoo/{own_makers}:parallel_env") == ""
    assert recorded_name_refusal(f"pettingzoo/{own_makers}:rps_env") == ""  # PettingZoo's
