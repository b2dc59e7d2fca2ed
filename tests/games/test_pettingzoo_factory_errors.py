"""A bug inside a user's env factory is reported as a bug in their code, not as bad arguments:
the one-line error names the factory, the exception and the line that raised it."""

import sys

import pytest

import games

USER_MODULE = '''
import games


def buggy(num_cards=4):
    return games.to_pettingzoo(games.make("openspiel/goofspiel", num_cards=num_cardz))


def checks(num_cards=4):
    if num_cards < 2:
        raise ValueError(f"num_cards must be at least 2, got {num_cards}")
    return games.to_pettingzoo(games.make("openspiel/goofspiel", num_cards=num_cards))


def lookup():
    return {}["env"]
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    path = tmp_path / "user_pz_buggy.py"
    path.write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "user_pz_buggy", str(path)
    sys.modules.pop("user_pz_buggy", None)  # the next test's copy lies in another folder


@pytest.mark.parametrize(("fn", "kwargs", "kind", "line"), [
    ("buggy", {}, "NameError: name 'num_cardz' is not defined", 6),
    ("buggy", {"num_cards": 3}, "NameError: name 'num_cardz' is not defined", 6),
    ("lookup", {}, "KeyError: 'env'", 16),
])
def test_a_bug_in_a_user_factory_names_the_factory_the_error_and_the_line(
        user_module, fn, kwargs, kind, line):
    module, path = user_module
    with pytest.raises(games.GameError) as info:
        games.make(f"pettingzoo/{module}:{fn}", **kwargs)
    msg = str(info.value)
    assert "bad arguments" not in msg and "\n" not in msg
    assert f"factory {module}.{fn} raised {kind}" in msg
    assert f"{path}:{line} in {fn}" in msg and "HYDRA_FULL_ERROR=1" in msg
    assert info.value.__cause__ is not None  # the traceback behind HYDRA_FULL_ERROR=1


def test_arguments_a_user_factory_rejects_still_read_as_bad_arguments(user_module):
    module, path = user_module
    with pytest.raises(games.GameError) as info:
        games.make(f"pettingzoo/{module}:checks", num_cards=1)
    msg = str(info.value)
    assert msg.startswith(f"bad arguments for pettingzoo/{module}:checks {{'num_cards': 1}}")
    assert "ValueError: num_cards must be at least 2, got 1" in msg
    assert f"{path}:11 in checks" in msg and "the env refused the value num_cards=1" in msg
    with pytest.raises(games.GameError, match=r"bad arguments.*unexpected keyword.*'cards'"):
        games.make(f"pettingzoo/{module}:checks", cards=1)
