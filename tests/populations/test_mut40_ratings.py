"""Ratings pinned where mutation testing (mut40) found no test looking: a drawn pair leaves
two equal ratings equal (a draw updated as a win passed), each outcome counts one game for
both snapshots (b's count left alone passed), and ``conservative`` is μ − 3σ (called by
nothing, so any body passed)."""

import pytest
from openskill.models import PlackettLuce

from populations.ratings import PairOutcome, Ratings, pair_outcome


def test_draws_keep_equal_ratings_equal():
    r = Ratings()
    for _ in range(20):
        r.update([pair_outcome(1, 2, 3.0, 3.0)])
    assert r.mu[1] == r.mu[2]
    assert r.sigma[1] == r.sigma[2]
    assert r.elo[1] == r.elo[2] == 1000.0
    assert r.sigma[1] < PlackettLuce().rating().sigma  # the draws were counted


def test_one_draw_is_plackett_luce_with_tied_ranks():
    r = Ratings()
    r.update([PairOutcome(1, 2, 0.5, 0.0)])
    r.update([PairOutcome(1, 3, 1.0, 2.0)])  # 1 is now ahead of 3
    mu1, s1, mu3, s3 = r.mu[1], r.sigma[1], r.mu[3], r.sigma[3]
    r.update([PairOutcome(3, 1, 0.5, 0.0)])  # a draw between unequal ratings
    model = PlackettLuce()
    [[n3], [n1]] = model.rate([[model.rating(mu=mu3, sigma=s3)],
                               [model.rating(mu=mu1, sigma=s1)]], ranks=[0, 0])
    assert (r.mu[3], r.sigma[3], r.mu[1], r.sigma[1]) == pytest.approx(
        (n3.mu, n3.sigma, n1.mu, n1.sigma), rel=1e-12)
    assert r.mu[3] > mu3 and r.mu[1] < mu1  # a draw with a stronger player lifts the weaker


def test_each_outcome_counts_one_game_for_both():
    r = Ratings()
    outcomes = [PairOutcome(1, 2, 1.0, 1.0), PairOutcome(2, 3, 0.0, -1.0),
                PairOutcome(3, 1, 0.5, 0.0), PairOutcome(1, 2, 0.0, -2.0)]
    r.update(outcomes)
    assert r.games == {1: 3, 2: 3, 3: 2}
    assert sum(r.games.values()) == 2 * len(outcomes)
    assert [row[4] for row in sorted(r.table())] == [3, 3, 2]


def test_conservative_is_mu_minus_three_sigma():
    r = Ratings()
    r.update([PairOutcome(1, 2, 1.0, 1.0)])
    for sid in (1, 2):
        assert r.conservative(sid) == pytest.approx(r.mu[sid] - 3.0 * r.sigma[sid], rel=1e-15)
    assert r.conservative(1) > r.conservative(2)
    fresh = PlackettLuce().rating()
    r.ensure(7)
    assert r.conservative(7) == pytest.approx(fresh.mu - 3.0 * fresh.sigma)  # 25 - 3 * 25/3 = 0
    assert r.conservative(7) == pytest.approx(0.0, abs=1e-12)
