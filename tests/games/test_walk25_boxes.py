"""Continuous action boxes bounded per dimension keep their bounds (session 25, fix25d).

VMAS's ``kinematic_bicycle`` accelerates in [-1, 1] and steers in [-0.52, 0.52]; the adapter
gave ``ActionSpace(low=-1.0, high=1.0)`` (the min and max over the dimensions), so a policy's
[-1, 1] became [-1, 1] of steering and VMAS clamped it at 0.52: half the range did nothing.
A PettingZoo ``Box(low=[-1, 0], high=[1, 2])`` collapsed the same way into [-1, 2], and random
play (check_game) sent actions outside the env's own box. ``ActionSpace.low``/``high`` now
take one number (as before) or one per dimension; ``bounds()`` gives both as arrays.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest
from gymnasium import spaces
from pettingzoo.test import parallel_api_test

import games
from games import ActionSpace, AgentSpec, Game, GameSpec, Transition

IDS = ("agent_0", "agent_1")
LOW, HIGH = (-1.0, -0.5), (1.0, 0.5)  # Steer's box: throttle in [-1, 1], steering [-0.5, 0.5]


class Steer(Game):
    """Two agents, each a box bounded per dimension (:data:`LOW`, :data:`HIGH`); each sees a
    target point of its box in unit coordinates ([-1, 1] in both dimensions) and is paid
    minus its action's distance to it; a fresh target every step, 3 steps an episode."""

    def __init__(self) -> None:
        self.spec = GameSpec(
            name="test/steer", agents=tuple(AgentSpec(a, "driver", "team") for a in IDS),
            obs_shapes={a: (2,) for a in IDS},
            action_spaces={a: ActionSpace("continuous", shape=(2,), low=LOW, high=HIGH)
                           for a in IDS},
            max_steps=3, simultaneous=True)
        self.rng = np.random.default_rng(0)
        self.t = 0
        self.target = np.zeros((2, 2))

    def _reset(self, seed: int | None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t = 0
        self.target = self.rng.uniform(LOW, HIGH, size=(2, 2))

    def _step(self, actions: dict) -> Transition:
        self.t += 1
        rewards = {a: -float(np.linalg.norm(np.asarray(actions[a]) - self.target[i]))
                   for i, a in enumerate(IDS)}
        self.target = self.rng.uniform(LOW, HIGH, size=(2, 2))
        end = self.t >= 3
        return Transition(rewards, {a: False for a in IDS}, {a: end for a in IDS})

    def acting_agents(self) -> tuple[str, ...]:
        return () if self.t >= 3 else IDS

    def observe(self, agent: str) -> np.ndarray:
        low, high = np.array(LOW), np.array(HIGH)
        unit = (self.target[IDS.index(agent)] - low) / (high - low) * 2 - 1
        return unit.astype(np.float32)

    def legal_actions(self, agent: str) -> list[int]:
        return []

    def text_observation(self, agent: str) -> str:
        return f"target {self.target[IDS.index(agent)]}"


# ------------------------------------------------------------------------------ VMAS
@pytest.mark.parametrize("scenario", ["kinematic_bicycle", "road_traffic"])
def test_a_vmas_box_keeps_vmas_own_bounds_per_dimension(scenario):
    game = games.make(f"vmas/{scenario}", continuous_actions=True)
    own = game._sim.env.action_space  # VMAS's own Tuple of Boxes, one per agent
    for i, a in enumerate(game.spec.agent_ids):
        low, high = game.spec.action_spaces[a].bounds()
        np.testing.assert_array_equal(low, own[i].low.astype(np.float64))
        np.testing.assert_array_equal(high, own[i].high.astype(np.float64))
    low, high = game.spec.action_spaces[game.spec.agent_ids[0]].bounds()
    assert high[1] < 0.62 and high[0] == 1.0  # steering's bound, not acceleration's


def test_a_vmas_box_of_one_bound_stays_one_number():
    """Every dimension alike (simple_spread's [-1, 1]): one number, as snapshots recorded."""
    space = games.make("vmas/simple_spread", continuous_actions=True).spec.action_spaces[
        "agent_0"]
    assert (space.low, space.high) == (-1.0, 1.0) and type(space.low) is float


# ---------------------------------------------------------------------- ActionSpace
@pytest.mark.parametrize("low", [[-1, -0.5], (-1.0, -0.5), np.array([-1, -0.5], np.float32)])
def test_per_dimension_bounds_are_kept_as_tuples_of_floats(low):
    space = ActionSpace("continuous", shape=(2,), low=low, high=[1, 0.5])
    assert space.low == (-1.0, -0.5) and space.high == (1.0, 0.5)
    assert all(type(v) is float for v in (*space.low, *space.high))
    same = ActionSpace("continuous", shape=(2,), low=LOW, high=HIGH)
    assert space.per_dimension and space == same and hash(space) == hash(same)
    low_, high_ = space.bounds()
    assert low_.tolist() == [-1.0, -0.5] and high_.tolist() == [1.0, 0.5]


def test_one_number_bounds_are_unchanged_and_broadcast():
    space = ActionSpace("continuous", shape=(3,), low=-2, high=3.0)
    assert (space.low, space.high) == (-2, 3.0) and not space.per_dimension
    low, high = space.bounds()
    assert low.tolist() == [-2.0] * 3 and high.tolist() == [3.0] * 3
    mixed = ActionSpace("continuous", shape=(2,), low=0.0, high=[1.0, 2.0])
    assert mixed.bounds()[0].tolist() == [0.0, 0.0] and mixed.per_dimension
    grid = ActionSpace("continuous", shape=(2, 2), low=[[0, 1], [2, 3]], high=9)
    assert grid.low == ((0.0, 1.0), (2.0, 3.0)) and grid.bounds()[1].shape == (2, 2)
    # an unbounded box of one number passes as it always did
    ActionSpace("continuous", shape=(2,), low=-np.inf, high=np.inf)


def test_box_keeps_one_number_where_every_dimension_shares_it():
    assert ActionSpace.box((2,), np.float32([-1, -1]), np.float32([1, 1])) == ActionSpace(
        "continuous", shape=(2,), low=-1.0, high=1.0)
    box = ActionSpace.box((2,), np.float32([-1, -0.5]), np.float32([1, 0.5]))
    assert box.low == (-1.0, -0.5) and box.high == (1.0, 0.5)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"low": [-1, 0, 1]}, r"ActionSpace\('continuous', shape=\(2,\), low=\[-1, 0, 1\]\); "
                          r"accepted: one number, or 2 numbers \(one per dimension\)$"),
    ({"high": [[1, 2]]}, r"ActionSpace.*high=\[\[1, 2\]\]\); accepted: one number, or 2 numbers"),
    ({"low": ["a", 0]}, r"ActionSpace.*low=\['a', 0\]\); accepted: one number, or 2 numbers"),
    ({"low": [-1, 0.5], "high": [1, 0.5]},
     r"ActionSpace\('continuous', low=\(-1.0, 0.5\), high=\(1.0, 0.5\)\); accepted: low < high "
     r"in every dimension \(dimension 1: low=0.5, high=0.5\)$"),
    ({"low": [2, 0], "high": 1.0},
     r"ActionSpace.*accepted: low < high in every dimension \(dimension 0: low=2.0, high=1.0\)$"),
    ({"low": [-1, -np.inf]}, r"ActionSpace\('continuous', low=\(-1.0, -inf\), high=1.0\); "
                             r"accepted: finite numbers in a box with bounds per dimension$"),
    ({"low": [-1, np.nan]}, r"ActionSpace.*low=\(-1.0, nan\).*accepted: finite numbers"),
    ({"low": "a", "high": [1, 2]}, r"ActionSpace.*accepted: numbers with low < high$"),
])
def test_bad_per_dimension_bounds_are_refused_in_one_line(kwargs, message):
    with pytest.raises(games.GameError, match=f"^{message}") as err:
        ActionSpace("continuous", shape=(2,), **kwargs)
    assert "\n" not in str(err.value)


def test_a_discrete_space_has_no_bounds():
    with pytest.raises(games.GameError, match=r"discrete', n=3\) has no box bounds"):
        ActionSpace("discrete", n=3).bounds()


# ------------------------------------------------------------------- the game contract
def test_an_action_outside_one_dimension_is_refused_naming_it():
    game = Steer()
    game.reset(seed=0)
    with pytest.raises(games.IllegalActionError,
                       match=r"^test/steer: action \[0.0, 0.8999999761581421\] for agent_1 is "
                             r"outside its box in dimension 1 \(\[-0.5, 0.5\]\)$"):
        game.step({"agent_0": np.zeros(2, np.float32), "agent_1": np.float32([0.0, 0.9])})
    game.step({a: np.float32([0.9, -0.5]) for a in IDS})  # inside, each in its own bounds


def test_check_game_plays_inside_each_dimension():
    report = games.check_game(Steer(), episodes=4)
    assert report.episodes == 4


# -------------------------------------------------------------------------- PettingZoo
USER_MODULE = '''
import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

BOX = spaces.Box(low=np.float32([-1, 0]), high=np.float32([1, 2]), dtype=np.float32)


class BoxEnv(ParallelEnv):
    """Two agents in a box bounded per dimension; an action outside it is an error (a
    simulator clamping it would hide the lost range instead)."""

    metadata = {"name": "box_env_v0", "is_parallelizable": True}

    def __init__(self):
        self.possible_agents = ["a_0", "a_1"]
        self.agents = []
        self.t = 0
        self.rng = np.random.default_rng(0)

    def observation_space(self, agent):
        return spaces.Box(-1, 1, shape=(2,), dtype=np.float32)

    def action_space(self, agent):
        return BOX

    def _obs(self):
        return {a: self.rng.uniform(-1, 1, 2).astype(np.float32) for a in self.agents}

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.agents, self.t = list(self.possible_agents), 0
        return self._obs(), {a: {} for a in self.agents}

    def step(self, actions):
        for a, x in actions.items():
            if not BOX.contains(np.asarray(x, np.float32)):
                raise ValueError(f"{a}: action {x} outside {BOX}")
        self.t += 1
        rew = {a: float(-np.abs(actions[a]).sum()) for a in self.agents}
        trunc = {a: self.t >= 5 for a in self.agents}
        term = {a: False for a in self.agents}
        obs = self._obs()
        if self.t >= 5:
            self.agents = []
        return obs, rew, term, trunc, {a: {} for a in rew}


def parallel_env():
    return BoxEnv()
'''


@pytest.fixture
def box_env(tmp_path, monkeypatch):
    (tmp_path / "walk25_box_env.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "pettingzoo/walk25_box_env"
    sys.modules.pop("walk25_box_env", None)


def test_a_pettingzoo_box_keeps_its_bounds_per_dimension(box_env):
    game = games.make(box_env)
    space = game.spec.action_spaces["a_0"]
    assert space.low == (-1.0, 0.0) and space.high == (1.0, 2.0)
    games.check_game(game, episodes=3)  # random play inside the env's own box


def test_to_pettingzoo_exports_the_box_per_dimension_and_passes_parallel_api_test(box_env):
    env = games.to_pettingzoo(games.make(box_env))
    box = env.action_space("a_0")
    assert box == spaces.Box(low=np.float32([-1, 0]), high=np.float32([1, 2]),
                             dtype=np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parallel_api_test(env, num_cycles=50)
    assert not {str(w.message) for w in caught}
