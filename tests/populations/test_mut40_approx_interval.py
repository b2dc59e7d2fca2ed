"""Approximate exploitability's confidence intervals recomputed by hand (mut40: the t-interval
without its ``/ sqrt(seeds)``, the one-seed normal quantile ``ndtri(confidence)`` instead of
``ndtri(0.5 + confidence / 2)``, and the one-seed self-play variance term set to 0 all
passed: the tests bounded the half-width loosely, on zero-sum games, where the teams' own
values sum to a constant and that term is 0).

The game makes every term known from the result: one simultaneous move, each seat 0 or 1;
both seats are paid player_0's action, so it is general-sum (the returns sum to 0 or 2).
Against a uniformly random target, self-play's per-episode sum of the two teams' values is
twice a fair coin; player_0's trained response plays greedily at a constant observation,
so its value is the same every episode; player_1's response is paid player_0's coin."""

from collections.abc import Sequence

import numpy as np
import pytest
import torch
from scipy.special import ndtri, stdtrit

import games
from games import ActionSpace, AgentSpec, GameSpec
from games.core import Game, Transition
from marl.mappo import MAPPOConfig
from marl.train import RandomPolicy
from populations.approx_exploit import ApproxConfig, approx_nash_conv

GAME = "test_mut40/copy_the_first"
SEATS = ("player_0", "player_1")


@games.register(GAME)
class CopyTheFirst(Game):
    """Both seats are paid player_0's action (0 or 1)."""

    def __init__(self) -> None:
        self.spec = GameSpec(
            name=GAME, agents=tuple(AgentSpec(a, role=a, team=a) for a in SEATS),
            obs_shapes={a: (1,) for a in SEATS},
            action_spaces={a: ActionSpace("discrete", n=2) for a in SEATS},
            max_steps=1, simultaneous=True, state_shape=(1,))
        self.over = False

    def _reset(self, seed: int | None) -> None:
        self.over = False

    def _step(self, actions: dict) -> Transition:
        self.over = True
        first = float(actions["player_0"])
        return Transition({a: first for a in SEATS}, {a: True for a in SEATS},
                          {a: False for a in SEATS})

    def acting_agents(self) -> tuple[str, ...]:
        return () if self.over else SEATS

    def observe(self, agent: str) -> np.ndarray:
        return np.zeros(1, np.float32)

    def legal_actions(self, agent: str) -> Sequence[int]:
        return [] if self.over else [0, 1]

    def text_observation(self, agent: str) -> str:
        return "choose 0 or 1"

    def state(self) -> np.ndarray:
        return np.zeros(1, np.float32)


def _estimate(seeds: int, episodes: int, confidence: float = 0.95):
    torch.set_num_threads(1)
    spec = games.make(GAME).spec
    return approx_nash_conv(GAME, RandomPolicy(spec, seed=0), ApproxConfig(
        frames=16, seeds=seeds, eval_episodes=episodes, num_envs=4, greedy_policy=False,
        confidence=confidence, learner_config=MAPPOConfig(rollout_steps=2, epochs=1,
                                                          minibatches=1)))


def _coin_var(mean: float, n: int) -> float:
    """np.var(ddof=1) of ``n`` zeros and ones of mean ``mean``."""
    return mean * (1.0 - mean) * n / (n - 1)


@pytest.mark.parametrize("confidence", [0.95, 0.8])
def test_one_seed_interval_is_normal_over_every_evaluation(confidence):
    E = 301
    res = _estimate(1, E, confidence)
    assert res.interval == f"normal over {E} episodes"
    own, br0, br1 = res.values["player_0"], res.br_values["player_0"], res.br_values["player_1"]
    assert res.values["player_1"] == own  # both are paid player_0's coin
    assert br0 in (0.0, 1.0)  # greedy at one observation: one action every episode
    assert 0.3 < own < 0.7 and 0.3 < br1 < 0.7  # fair coins, drawn
    assert res.nash_conv == pytest.approx(br0 + br1 - 2 * own, abs=1e-12)
    # self-play: the two teams' values sum to 2 * coin; player_0's response: no variance
    var = (4 * _coin_var(own, E) + 0.0 + _coin_var(br1, E)) / E
    half = float(ndtri(0.5 + confidence / 2)) * np.sqrt(var)
    assert res.half_width == pytest.approx(half, rel=1e-9)
    assert res.high - res.nash_conv == pytest.approx(half, rel=1e-9)
    assert res.nash_conv - res.low == pytest.approx(half, rel=1e-9)


def test_seeds_interval_is_t_over_the_per_seed_estimates():
    res = _estimate(3, 40)
    assert res.interval == "t over 3 seeds"
    est = res.per_seed
    assert len(est) == 3 and np.std(est) > 0
    assert res.nash_conv == pytest.approx(float(est.mean()), abs=1e-12)
    half = float(stdtrit(2, 0.975)) * float(np.std(est, ddof=1)) / np.sqrt(3)
    assert res.high - res.nash_conv == pytest.approx(half, rel=1e-9)
    assert res.nash_conv - res.low == pytest.approx(half, rel=1e-9)
