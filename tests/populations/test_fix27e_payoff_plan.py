"""PSRO's sampled payoffs, planned before the run: ``population.psro.episodes_per_entry=1000``
(the default) on connect four with ``population.iterations=2 population.oracle_frames=2000``
sampled 1,000 + 3,000 + 5,000 episodes (about 220,000 frames) around best responses of 2,000
frames each, and nothing at the start said so. :func:`payoff_plan` counts them (one line) and
warns when they will play many times the frames the best responses train, naming the key."""

from __future__ import annotations

import math

import pytest

import games
from populations.psro import PSRO, ExactBestResponse, PSROConfig
from populations.psro_config import PAYOFFS_TOLD, payoff_plan, random_episode_frames


def test_the_plan_counts_every_entry_of_the_final_table():
    plan = payoff_plan(players=2, iterations=2, episodes_per_entry=1000, episode_frames=24.5,
                       oracle_frames=2000)
    assert (plan.episodes, plan.entries) == (9000, 9)  # 1,000 + 3,000 + 5,000
    assert plan.line == ("PSRO: sampled payoffs play about 9,000 episodes over the run "
                         "(population.psro.episodes_per_entry=1000 for each of the 9 entries "
                         "of the final table: 3 members per player, 2 players)")
    assert plan.warning == (
        "PSRO: the sampled payoffs will play about 220,500 frames (about 24.5 an episode in "
        "random play), 28x the 8,000 the best responses train (population.oracle_frames=2000 "
        "x 2 players x 2 iterations): most of the run would go to payoffs; lower "
        "population.psro.episodes_per_entry")


def test_three_players_and_the_bound_of_the_warning():
    plan = payoff_plan(players=3, iterations=1, episodes_per_entry=10, episode_frames=5,
                       oracle_frames=1000)
    assert (plan.episodes, plan.entries) == (80, 8)
    assert plan.warning is None  # 400 frames of payoffs for 3,000 of best responses
    # 8 entries of one-frame episodes: 1,500 each play 12,000 frames, PAYOFFS_TOLD x 3,000
    assert PAYOFFS_TOLD == 4
    assert payoff_plan(3, 1, 1500, 1.0, 1000).warning is None
    assert "12,008 frames" in payoff_plan(3, 1, 1501, 1.0, 1000).warning


def test_an_exact_oracle_trains_nothing_to_compare_with():
    assert payoff_plan(2, 5, 1000, 30.0, oracle_frames=0).warning is None


@pytest.mark.parametrize("iterations", [1, 2])
def test_the_plan_is_what_psro_samples(iterations):
    """Kuhn poker with sampled payoffs: the episodes PSRO's estimator reports sampling over
    the initial table and ``iterations`` iterations are the plan's."""
    game = "openspiel/kuhn_poker"
    psro = PSRO(game, ExactBestResponse(game), PSROConfig(payoffs="sampled", nash_conv=False,
                                                          episodes_per_entry=3, num_envs=2))
    sampled, block = [], psro.estimator.block

    def counted(index):  # the episodes of the entries asked for
        sampled.append(math.prod(len(i) for i in index) * psro.estimator.episodes)
        return block(index)

    psro.estimator.block = counted  # after the initial entry, sampled as PSRO is made
    for _ in range(iterations):
        psro.iteration()
    plan = payoff_plan(2, iterations, 3, 2.0, 0)
    assert 3 + sum(sampled) == plan.episodes
    assert psro.payoffs[0].size == plan.entries


def test_random_episode_frames_measures_a_random_episode():
    """Kuhn poker: two or three moves (pass-pass, bet-call, bet-fold; pass-bet-call/fold)."""
    frames = random_episode_frames("openspiel/kuhn_poker", episodes=16, seed=0)
    assert 2.0 <= frames <= 3.0
    assert games.make("openspiel/kuhn_poker").spec.max_steps >= frames
