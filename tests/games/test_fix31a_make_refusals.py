"""games.make refuses, in one line, a game that cannot be played (walk31 H1, H2).

- H1: README's "Add your own game" skeleton (``...`` bodies: ``__init__`` sets no
  ``self.spec``) was a bare AttributeError from games/registry.py; ``selfplay-train`` exited 1
  with a traceback and left ``.hydra/`` and ``cli.log``, the league CLI left ``.lock``.
- H2: ``vmas/flocking`` with ``n_agents=0`` was made with no agents; ``selfplay-train`` then
  crashed with an IndexError in populations/single_run.py.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

import games
from tests import subprocs

SKELETON = '''\
import games

@games.register("fix31a_skel")
class Nim(games.Game):
    def __init__(self, stones=10, max_take=3): ...          # builds self.spec
    def _reset(self, seed): ...
    def _step(self, actions) -> games.Transition: ...
    def acting_agents(self): ...
    def observe(self, agent): ...
    def legal_actions(self, agent): ...
    def text_observation(self, agent): ...


class NoAgents(games.Game):
    def __init__(self, players=0):
        ids = [f"p{i}" for i in range(players)]
        self.spec = games.GameSpec(
            name="fix31a_noagents",
            agents=tuple(games.AgentSpec(a, a, a) for a in ids),
            obs_shapes={a: (1,) for a in ids},
            action_spaces={a: games.ActionSpace("discrete", n=2) for a in ids},
            max_steps=4)
        self.closed = False
    def _reset(self, seed): ...
    def _step(self, actions): ...
    def acting_agents(self): return ()
    def observe(self, agent): ...
    def legal_actions(self, agent): ...
    def text_observation(self, agent): ...
    def close(self): self.closed = True


games.register("fix31a_noagents")(NoAgents)
games.register("fix31a_none")(lambda: None)
'''
MODULE = "fix31a_skelgame"


@pytest.fixture()
def user_game(tmp_path, monkeypatch):
    """The module of ``SKELETON`` written in ``tmp_path``, imported; yields its folder."""
    (tmp_path / f"{MODULE}.py").write_text(SKELETON)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    sys.modules.pop(MODULE, None)
    importlib.import_module(MODULE)
    yield tmp_path
    sys.modules.pop(MODULE, None)


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HYDRA_FULL_ERROR": "0"}
    env.pop("SELFPLAY_IMPORTS", None)
    return subprocs.run([sys.executable, *args], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600, env=env)


def _one_line(res: subprocess.CompletedProcess, prog: str) -> str:
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr, res.stderr
    lines = [ln for ln in res.stderr.strip().splitlines() if ln.startswith(f"{prog}: ")]
    assert len(lines) == 1, res.stderr
    return lines[0]


# ------------------------------------------------------------------------------- H1
def test_a_game_whose_init_sets_no_spec_is_one_line_naming_it_and_the_line(user_game):
    with pytest.raises(games.GameError) as info:
        games.make("fix31a_skel")
    assert str(info.value) == ("fix31a_skel: its __init__ set no self.spec (a games.GameSpec) "
                               f"(at {MODULE}.py:5)")


def test_a_factory_that_returns_none_is_one_line(user_game):
    with pytest.raises(games.GameError, match=r"^fix31a_none: its factory .* returned None, "
                                              r"not a games\.Game"):
        games.make("fix31a_none")


def test_selfplay_train_refuses_the_skeleton_in_one_line_and_makes_no_folder(user_game):
    # what the selfplay-train script runs (python -m populations.cli calls the same main)
    res = _cli(user_game, "-m", "populations.cli", f"imports=[{MODULE}]",
               "game.name=fix31a_skel", "frames=64", "progress=false", "logger=none",
               "hydra.run.dir=runs/skel")
    line = _one_line(res, "selfplay-train")
    assert line.endswith("fix31a_skel: its __init__ set no self.spec (a games.GameSpec) "
                         f"(at {MODULE}.py:5)"), line
    assert not (user_game / "runs").exists()


def test_the_league_cli_refuses_the_skeleton_in_one_line_and_leaves_no_lock(user_game):
    res = _cli(user_game, "-m", "populations.league", "--run-dir", "runs/sk", "--import",
               MODULE, "--game", "fix31a_skel", "--generations", "1")
    line = _one_line(res, "python -m populations.league")
    assert "fix31a_skel: its __init__ set no self.spec (a games.GameSpec)" in line, line
    assert not (user_game / "runs" / "sk").exists()


# ------------------------------------------------------------------------------- H2
def test_a_game_with_no_agents_is_refused_naming_its_arguments_and_is_closed(user_game):
    built = []
    module = sys.modules[MODULE]
    original = module.NoAgents.close
    module.NoAgents.close = lambda self: built.append(self) or original(self)
    with pytest.raises(games.GameError) as info:
        games.make("fix31a_noagents", players=0)
    assert str(info.value) == ("fix31a_noagents: no agents (its spec.agents is empty); a game "
                               "needs one or more: check its arguments {'players': 0}")
    assert len(built) == 1 and built[0].closed
    assert games.make("fix31a_noagents", players=2).spec.num_agents == 2


def test_vmas_with_zero_agents_is_refused_at_make_time():
    pytest.importorskip("vmas")
    with pytest.raises(games.GameError) as info:
        games.make("vmas/flocking", n_agents=0)
    # refused before it is built, by the count rule of VMAS scenario parameters (fix 32a);
    # flocking's entities are bounded at 64 in all (fix36), so is one count
    assert str(info.value) == ("bad parameter for vmas/flocking: n_agents=0; accepted: an "
                               "integer in [1, 64]")


def test_selfplay_train_refuses_vmas_with_zero_agents_in_one_line(tmp_path):
    pytest.importorskip("vmas")
    res = _cli(tmp_path, "-m", "populations.cli", "game.name=vmas/flocking",
               "game.kwargs.n_agents=0", "frames=64", "progress=false", "logger=none",
               "hydra.run.dir=runs/badflock")
    line = _one_line(res, "selfplay-train")
    assert "vmas/flocking: n_agents=0; accepted: an integer in [1, 64]" in line, line
    assert "IndexError" not in line, line
    assert not (tmp_path / "runs").exists()


def test_check_game_says_a_game_built_by_hand_has_no_agents(user_game):
    game = sys.modules[MODULE].NoAgents(players=0)  # not through games.make
    with pytest.raises(games.GameCheckError) as info:
        games.check_game(game)
    assert str(info.value) == ("fix31a_noagents: no agents (spec.agents is empty); a game needs "
                               "one or more")
