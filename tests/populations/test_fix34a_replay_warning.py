"""A user's game that does not replay from its seed trains with one warning line (fix34a, M1).

Before: a game whose ``_reset`` made a fresh generator on ``reset(None)`` (walk34a's
``bad_reseed``) trained silently under ``selfplay-train``, two runs with one seed differed, and
only ``games.check_game``, which ``selfplay-train`` never runs, would have said so. Now
:func:`games.check.replay_problem` (check_game's replay checks, cut to 8 steps an episode)
runs on one copy of a game a user's module registered, and ``selfplay-train`` logs one line
naming the game, what differs and ``check_game``; training goes on. Shipped games are not
played (the test suite runs check_game on them: their start costs nothing more).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import games
from games.check import REPLAY_STEPS, replay_problem, user_game
from tests.populations.user_modules import train_here, unregister_games, user_module

MODULE = "fix34a_hop"
SOURCE = '''
import numpy as np

import games


class Hop(games.Game):
    """Two agents hop on a line of 5 cells from places (and marks) drawn at reset."""

    mode = "steady"
    steps = 0  # every step played, by any copy (the check's cost)

    def __init__(self):
        ids = ("a", "b")
        self.spec = games.GameSpec(
            name=f"fix34a_{self.mode}",
            agents=tuple(games.AgentSpec(i, role=i, team=i) for i in ids),
            obs_shapes={i: (2,) for i in ids},
            action_spaces={i: games.ActionSpace("discrete", n=3) for i in ids},
            max_steps=12, simultaneous=True)
        self.rng = np.random.default_rng(0)

    def _reset(self, seed):
        if self.mode == "seedless" or (seed is None and self.mode == "reseed"):
            self.rng = np.random.default_rng()  # the defect: the seed is not used
        elif seed is not None:
            self.rng = np.random.default_rng(seed)
        self.pos = {a: int(self.rng.integers(5)) for a in self.spec.agent_ids}
        self.mark = {a: float(self.rng.random()) for a in self.spec.agent_ids}  # never equal
        self.t = 0

    def _step(self, actions):
        Hop.steps += 1
        for a, act in actions.items():
            self.pos[a] = min(4, max(0, self.pos[a] + act - 1))
        self.t += 1
        over = self.t >= 12
        return games.Transition({a: 0.0 for a in self.spec.agent_ids},
                                {a: over for a in self.spec.agent_ids},
                                {a: False for a in self.spec.agent_ids})

    def acting_agents(self):
        return () if self.t >= 12 else self.spec.agent_ids

    def observe(self, agent):
        return np.array([self.pos[agent] / 4, self.mark[agent]], dtype=np.float32)

    def legal_actions(self, agent):
        return [0, 1, 2]

    def action_text(self, agent, action):
        return ("left", "stay", "right")[action]

    def text_observation(self, agent):
        return f"You are {agent} at cell {self.pos[agent]} of 5."


@games.register("fix34a_steady")
class Steady(Hop):
    mode = "steady"


@games.register("fix34a_reseed")
class Reseed(Hop):
    mode = "reseed"


@games.register("fix34a_seedless")
class Seedless(Hop):
    mode = "seedless"
'''
NAMES = ("fix34a_steady", "fix34a_reseed", "fix34a_seedless")


@pytest.fixture
def hop(tmp_path, monkeypatch):
    """The module above, importable from ``tmp_path`` (the working directory), taken out of
    the registry after."""
    with user_module(tmp_path, monkeypatch, MODULE, SOURCE, unregister_games(*NAMES)) as m:
        yield m


def test_replay_problem_names_the_reset_and_the_first_difference(hop):
    assert replay_problem(lambda: games.make("fix34a_steady"), seed=3) is None
    reseed = replay_problem(lambda: games.make("fix34a_reseed"), seed=3)
    assert reseed is not None and reseed.startswith(
        "reset(seed=3), 8 steps, then reset(None), on two new copies with the same actions, "
        "did not replay: the observation of a at step 0 differs; reset(None) must continue "
        "the random stream the seeded reset started"), reseed
    seedless = replay_problem(lambda: games.make("fix34a_seedless"), seed=3)
    assert seedless == (
        "reset(seed=3) on two new copies with the same actions did not replay: the "
        "observation of a at step 0 differs; a game must draw its randomness from the seed "
        "reset() gives it (runs with one seed differ)"), seedless
    # the same defects check_game finds, with its words
    for name, words in (("fix34a_reseed", "did not replay: reset(None) must continue"),
                        ("fix34a_seedless", "seed 0 did not replay identically")):
        with pytest.raises(games.GameCheckError, match=words.replace("(", r"\(")
                           .replace(")", r"\)")):
            games.check_game(games.make(name), episodes=3)


def test_the_check_plays_a_few_steps_and_only_users_games(hop):
    """Its cost: 4 episodes of at most 8 steps (the game has 12), whatever the game's length,
    and 2 more on a second copy when one is cheap to build (rfix34b); the framework's own
    games and adapter specs are not played at all."""
    hop.Hop.steps = 0
    replay_problem(lambda: games.make("fix34a_steady"))
    assert hop.Hop.steps == 6 * REPLAY_STEPS
    assert all(user_game(n) for n in NAMES)
    assert user_game("fix34a_steady(x=1)")  # a name with its arguments
    assert not user_game("openspiel/kuhn_poker")
    assert not user_game("tool/relay") and "tool/relay" in games.registered()
    assert not user_game("no_such_game")


TINY = ["frames=32", "num_envs=2", "mappo.rollout_steps=8", "mappo.epochs=1",
        "mappo.minibatches=1", "eval_episodes=1", "progress=false", "logger=csv", "seed=3"]


def _warnings(run: Path) -> list[str]:
    return [line for line in (run / "cli.log").read_text().splitlines()
            if "does not replay" in line]


def test_selfplay_train_warns_once_and_trains(hop, tmp_path, monkeypatch):
    run = tmp_path / "reseed"
    train_here([f"imports=[{MODULE}]", "game.name=fix34a_reseed", f"hydra.run.dir={run}", *TINY],
               monkeypatch)
    lines = _warnings(run)
    assert len(lines) == 1, lines
    assert lines[0].split(" - ", 1)[1] == (
        "game fix34a_reseed does not replay from its seed (training goes on): reset(seed=3), "
        "8 steps, then reset(None), on two new copies with the same actions, did not replay: "
        "the observation of a at step 0 differs; "
        "reset(None) must continue the random stream the seeded reset started (VectorGame "
        "resets finished copies with reset(None): runs with one seed would differ); in "
        "_reset, make a new RNG only when seed is not None and keep it across reset(None); "
        "games.check_game(games.make('fix34a_reseed')) checks the whole game contract")
    assert "WARNING" in lines[0]
    assert "run finished" in (run / "cli.log").read_text()  # warned, not refused
    steady = tmp_path / "steady"
    train_here([f"imports=[{MODULE}]", "game.name=fix34a_steady", f"hydra.run.dir={steady}", *TINY],
               monkeypatch)
    assert _warnings(steady) == []
    assert "run finished" in (steady / "cli.log").read_text()
