"""Mutation walk mut41b over llm_agents/opponents.py: the pool's draw and its size bound,
pinned where mutations survived the league test (named in each docstring)."""

import numpy as np
import pytest

import games
from llm_agents.opponents import OpponentPool
from marl.train import RandomPolicy

KUHN = "openspiel/kuhn_poker"


def _policies(n):
    spec = games.make(KUHN).spec
    return [RandomPolicy(spec, seed=i) for i in range(n)]


def test_the_pool_drops_its_oldest_policy_beyond_max_size():
    """(mutations: the bound was reached one policy early; the newest was dropped)."""
    a, b, c = _policies(3)
    pool = OpponentPool(max_size=2)
    pool.add(a)
    pool.add(b)
    assert pool.policies == [a, b]
    pool.add(c)
    assert pool.policies == [b, c]


def test_a_group_meets_the_pool_with_probability_prob_on_one_whole_side():
    """About ``prob`` of the groups draw an opponent, which takes every seat of one side and
    no other (mutations: the chance was inverted; the side was inverted)."""
    spec = games.make(KUHN).spec
    pool = OpponentPool(_policies(2), prob=0.25)
    rng = np.random.default_rng(0)
    draws = [pool.sample(spec, rng) for _ in range(2000)]
    assert np.mean([bool(d) for d in draws]) == pytest.approx(0.25, abs=0.03)
    sides = {tuple(sorted(d)) for d in draws if d}
    assert sides == {("player_0",), ("player_1",)}
    assert {id(p) for d in draws for p in d.values()} == {id(p) for p in pool.policies}


def test_the_opponent_takes_exactly_one_side_of_three():
    """Three-player Kuhn poker: the opponent takes one side, the team the other two
    (mutation: the drawn side was the team's; two sides of three went to the opponent)."""
    spec = games.make("openspiel/kuhn_poker(players=3)").spec
    pool = OpponentPool(_policies(1), prob=1.0)
    rng = np.random.default_rng(0)
    draws = [pool.sample(spec, rng) for _ in range(60)]
    assert {tuple(sorted(d)) for d in draws} == {(a,) for a in spec.agent_ids}


def test_a_cooperative_game_is_always_self_play():
    """One team: nothing to take a side of (mutation: single-team games drew opponents)."""
    spec = games.make("tool/relay").spec
    pool = OpponentPool(_policies(1), prob=1.0)
    assert pool.sample(spec, np.random.default_rng(0)) == {}
