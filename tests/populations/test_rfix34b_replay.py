"""What selfplay-train's replay warning says is what it saw (rfix34b, review of fix34a M1).

Before: ``replay_problem`` played one copy twice and said "runs with one seed would differ"
for a game that only counts its episodes (a curriculum counter in the observation), whose
runs replay since each builds new copies; a game drawing its layout from numpy's global
generator in ``__init__`` (runs differ) passed. Two plays whose observations name other
agents made ``_first_difference`` raise StopIteration, which the CLI logged at debug level:
the warning was lost. The hint ``games.check_game(games.make('x'))`` left out game.kwargs.
"""

from __future__ import annotations

import pytest

import games
from games.check import _first_difference, replay_problem
from tests.populations.user_modules import unregister_games, user_module

MODULE = "rfix34b_mod"
SOURCE = '''
import numpy as np

import games


class Base(games.Game):
    """Two agents; a card drawn at reset from the seeded generator, 12 steps."""

    name = "rfix34b_ok"

    def __init__(self, cap=5):
        ids = ("a", "b")
        self.spec = games.GameSpec(
            name=self.name, agents=tuple(games.AgentSpec(i, role=i, team=i) for i in ids),
            obs_shapes={i: (3,) for i in ids},
            action_spaces={i: games.ActionSpace("discrete", n=2) for i in ids},
            max_steps=12, simultaneous=True)
        self.rng = np.random.default_rng(0)
        self.cap, self.episodes, self.layout = cap, 0, 0.0

    def _reset(self, seed):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.card, self.t = float(self.rng.random()), 0
        self.episodes += 1

    def _step(self, actions):
        self.t += 1
        over = self.t >= 12
        return games.Transition({a: 0.0 for a in self.spec.agent_ids},
                                {a: over for a in self.spec.agent_ids},
                                {a: False for a in self.spec.agent_ids})

    def acting_agents(self):
        return () if self.t >= 12 else self.spec.agent_ids

    def observe(self, agent):
        return np.array([self.card, self.layout, self.extra()], dtype=np.float32)

    def extra(self):
        return 0.0

    def legal_actions(self, agent):
        return [0, 1]

    def text_observation(self, agent):
        return f"card {self.card:.2f}"


@games.register("rfix34b_counter")
class Counter(Base):
    """A curriculum: the observation counts the episodes this copy played (up to cap)."""

    name = "rfix34b_counter"

    def extra(self):
        return float(min(self.episodes, self.cap))


@games.register("rfix34b_layout")
class Layout(Base):
    """A layout drawn in __init__ from numpy's global generator: each copy's differs."""

    name = "rfix34b_layout"

    def __init__(self, cap=5):
        super().__init__(cap)
        self.layout = float(np.random.random())
'''
NAMES = ("rfix34b_counter", "rfix34b_layout")


@pytest.fixture
def mod(tmp_path, monkeypatch):
    with user_module(tmp_path, monkeypatch, MODULE, SOURCE, unregister_games(*NAMES)) as m:
        yield m


def test_a_copy_that_counts_its_episodes_is_not_said_to_differ_between_runs(mod):
    problem = replay_problem(lambda: games.make("rfix34b_counter"), seed=2)
    assert problem == (
        "reset(seed=2) on a copy that had played before did not replay: the observation of a "
        "at step 0 differs; two new copies do (so runs with one seed may replay: each builds "
        "its copies anew), but check_game asks one copy to replay its seed: keep no state "
        "across reset(seed) (such as an episode counter)"), problem
    assert "would differ" not in problem


def test_two_new_copies_that_differ_are_said_to_differ(mod):
    problem = replay_problem(lambda: games.make("rfix34b_layout"), seed=2)
    assert problem == (
        "reset(seed=2) on two new copies with the same actions did not replay: the "
        "observation of a at step 0 differs; a game must draw its randomness from the seed "
        "reset() gives it (runs with one seed differ)"), problem


def test_observations_of_other_agents_are_named_not_lost():
    one = [(("a", "b"), {"a": b"1", "b": b"2"}), {"a": 0.0, "b": 0.0}]
    other = [(("a", "b"), {"a": b"1", "b": b"2", "c": b"3"}), {"a": 0.0, "b": 0.0}]
    assert _first_difference(one, other) == (
        "the agents observed at step 0 differ (['a', 'b'] vs ['a', 'b', 'c'])")
    assert _first_difference(other, one).startswith("the agents observed at step 0 differ")
    assert _first_difference([(("a",), {}), {"a": 1.0}], [(("a",), {}), {"b": 1.0}]) == (
        "the rewards of step 0 differ (a: 1.0 vs None)")


def test_the_hint_gives_the_games_kwargs(mod, tmp_path, monkeypatch):
    from tests.populations.test_fix34a_replay_warning import TINY, _warnings
    from tests.populations.user_modules import train_here as _train

    run = tmp_path / "counter"
    _train([f"imports=[{MODULE}]", "game.name=rfix34b_counter", "+game.kwargs.cap=3",
            f"hydra.run.dir={run}", *TINY], monkeypatch)
    [line] = _warnings(run)
    assert line.endswith("; games.check_game(games.make('rfix34b_counter', cap=3)) checks the "
                         "whole game contract"), line
    assert "on a copy that had played before did not replay" in line, line
