"""walk38a L4: a user's game whose episodes run past ``spec.max_steps`` is refused by
``selfplay-train`` in one line before its run folder is made.

Before: VectorGame refused the step after ``max_steps`` only once training was under way, so a
league kept a folder with a checkpoint and a resume command though it trained nothing (the start
checks saw it and left it to training)."""

from __future__ import annotations

import pytest

from tests.populations.user_modules import train_here, unregister_games, user_module

MODULE = "games38_endless"
SOURCE = '''
import numpy as np

import games

IDS = ("a", "b")


@games.register("games38_endless")
class Endless(games.Game):
    """Two players alternate and the game never ends, though spec.max_steps says 20."""

    def __init__(self):
        self.spec = games.GameSpec(
            "games38_endless", (games.AgentSpec("a", "p", "x"), games.AgentSpec("b", "p", "y")),
            {a: (2,) for a in IDS}, {a: games.ActionSpace("discrete", n=2) for a in IDS}, 20)

    def _reset(self, seed):
        self.t = 0

    def _step(self, actions):
        self.t += 1
        return games.Transition({a: 0.0 for a in IDS}, {a: False for a in IDS},
                                {a: False for a in IDS})

    def acting_agents(self):
        return (IDS[self.t % 2],)

    def observe(self, agent):
        return np.array([self.t % 2, 1], np.float32)

    def legal_actions(self, agent):
        return [0, 1]

    def action_text(self, agent, action):
        return ("left", "right")[action]

    def text_observation(self, agent):
        return f"{agent} at {self.t}"
'''

TINY = ["num_envs=2", "mappo.rollout_steps=8", "mappo.epochs=1", "mappo.minibatches=1",
        "eval_episodes=1", "progress=false", "logger=csv", "seed=3"]


@pytest.fixture
def endless(tmp_path, monkeypatch):
    with user_module(tmp_path, monkeypatch, MODULE, SOURCE,
                     unregister_games("games38_endless")) as m:
        yield m


@pytest.mark.parametrize("how", [["frames=64"], ["population=self_play",
                                                "population.generations=1",
                                                "population.frames_per_generation=64"]])
def test_a_game_that_never_ends_is_refused_before_its_folder(endless, tmp_path, monkeypatch,
                                                             capsys, how):
    run = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_:
        train_here([f"imports=[{MODULE}]", "game.name=games38_endless",
                    f"hydra.run.dir={run}", *TINY, *how], monkeypatch)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "has not ended after 20 steps" in err[0], err
    assert "Traceback" not in err[0]
    assert not run.exists()
