"""A user's env factory that returns something other than a PettingZoo env (a ``make_env``
without its ``return``) is refused in one line naming the factory, what it returned and what
is accepted: it raised ``AttributeError: 'NoneType' object has no attribute
'possible_agents'`` from inside ``PettingZooGame.__init__``, with a traceback."""

import sys

import pytest

import games
from tests import subprocs

USER_MODULE = '''
import games
from pettingzoo.classic import rps_v2


def make_env():
    env = rps_v2.parallel_env()  # built, never returned


def make_game():
    return games.make("openspiel/kuhn_poker")


def make_number():
    return 3


def make_rps():
    return rps_v2.parallel_env()


def make_rps_aec():
    return rps_v2.env()
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    (tmp_path / "user_pz_returns.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "user_pz_returns"
    sys.modules.pop("user_pz_returns", None)


@pytest.mark.parametrize(("fn", "returned"), [
    ("make_env", "None"),
    ("make_number", "3 (type int)"),
])
def test_a_factory_returning_no_env_is_one_line(user_module, fn, returned):
    with pytest.raises(games.GameError) as err:
        games.make(f"pettingzoo/{user_module}:{fn}")
    assert str(err.value) == (
        f"pettingzoo/{user_module}:{fn}: the env factory {user_module}.{fn} returned "
        f"{returned}; accepted: a PettingZoo AEC or Parallel env (pettingzoo.AECEnv, "
        "pettingzoo.ParallelEnv)")


def test_a_factory_returning_a_game_is_told_how_to_export_it(user_module):
    with pytest.raises(games.GameError, match=r"returned <OpenSpielGame openspiel/kuhn_poker> "
                       r"\(type OpenSpielGame\); accepted: a PettingZoo AEC or Parallel env "
                       r"\(pettingzoo\.AECEnv, pettingzoo\.ParallelEnv\); a games\.Game "
                       r"becomes one with games\.to_pettingzoo\(game\)$"):
        games.make(f"pettingzoo/{user_module}:make_game")


@pytest.mark.parametrize("fn", ["make_rps", "make_rps_aec"])
def test_factories_returning_envs_still_play(user_module, fn):
    game = games.make(f"pettingzoo/{user_module}:{fn}")
    assert game.spec.agent_ids == ("player_0", "player_1")


def test_the_cli_refuses_it_in_one_line(tmp_path):
    (tmp_path / "mygames.py").write_text(USER_MODULE)
    out = subprocs.run(
        [sys.executable, "-m", "populations.cli", "imports=[mygames]",
         "game.name=pettingzoo/mygames:make_env", "population=none", "frames=1",
         "num_envs=1", "progress=false", "logger=none"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr, out.stderr
    assert out.stderr.strip().splitlines()[-1].endswith(
        "pettingzoo/mygames:make_env: the env factory mygames.make_env returned None; "
        "accepted: a PettingZoo AEC or Parallel env (pettingzoo.AECEnv, "
        "pettingzoo.ParallelEnv)"), out.stderr
    assert not list(tmp_path.rglob("league.db"))
