"""games36 (walk36a L5): selfplay-train warns, as it starts, of what check_game refuses but
training runs through (:func:`games.check.start_warnings`) on a user's game.

Before: walk36a's corridor gave -0.1 to a walker that had already finished (counted in its
return), its ``notsim`` had both walkers act at once without ``simultaneous=True``, and
``selfplay-train`` trained both silently; only ``check_game``, which it never runs, refused
them. Training goes on, warned.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.populations.user_modules import train_here, unregister_games, user_module

MODULE = "games36_late"
SOURCE = '''
import numpy as np

import games

IDS = ("w0", "w1")


@games.register("games36_late")
class Late(games.Game):
    """w0 finishes at step 2, w1 at step 4; ``after``: w0's reward once it has finished."""

    def __init__(self, after: float = -0.1):
        self.after = after
        self.spec = games.GameSpec(
            "games36_late", tuple(games.AgentSpec(a, "walker", "team") for a in IDS),
            {a: (2,) for a in IDS}, {a: games.ActionSpace("discrete", n=2) for a in IDS}, 6,
            simultaneous=True)

    def _reset(self, seed):
        self.t = 0

    def _step(self, actions):
        self.t += 1
        rew = {"w0": self.after if self.t > 2 else 1.0, "w1": 1.0}
        return games.Transition(rew, {"w0": self.t >= 2, "w1": self.t >= 4},
                                {a: False for a in IDS})

    def acting_agents(self):
        return tuple(a for a, e in zip(IDS, (2, 4)) if self.t < e)

    def observe(self, agent):
        return np.array([self.t, 0], np.float32)

    def legal_actions(self, agent):
        return [0, 1]

    def action_text(self, agent, action):
        return ("stay", "walk")[action]

    def text_observation(self, agent):
        return f"{agent} at {self.t}"
'''

TINY = ["frames=32", "num_envs=2", "mappo.rollout_steps=8", "mappo.epochs=1",
        "mappo.minibatches=1", "eval_episodes=1", "progress=false", "logger=csv", "seed=3"]


@pytest.fixture
def late(tmp_path, monkeypatch):
    with user_module(tmp_path, monkeypatch, MODULE, SOURCE,
                     unregister_games("games36_late")) as m:
        yield m


def _warnings(run: Path) -> list[str]:
    return [line.split(" - ", 1)[1] for line in (run / "cli.log").read_text().splitlines()
            if "check_game refuses" in line]


def test_selfplay_train_warns_of_a_reward_after_an_agents_end_and_trains(late, tmp_path,
                                                                          monkeypatch):
    run = tmp_path / "late"
    train_here([f"imports=[{MODULE}]", "game.name=games36_late", f"hydra.run.dir={run}", *TINY],
               monkeypatch)
    assert _warnings(run) == [
        "game games36_late (training goes on): seed 3 step 2: reward -0.1 to w0, whose episode "
        "has ended; an agent whose episode ended (terminated or truncated at an earlier step) "
        "gets no more rewards: learners train on its rewards up to its own end, and "
        "VectorGame's episode_return counts those alone; give it 0.0 (check_game refuses "
        "games36_late for it); games.check_game(games.make('games36_late')) checks the whole "
        "game contract"]
    assert "run finished" in (run / "cli.log").read_text()  # warned, not refused
    clean = tmp_path / "clean"
    train_here([f"imports=[{MODULE}]", "game.name=games36_late", "game.kwargs.after=0.0",
                f"hydra.run.dir={clean}", *TINY], monkeypatch)
    assert _warnings(clean) == []
