"""Elo and Plackett-Luce ratings, role-swapped pair outcomes, and PFSP weights."""

import numpy as np
import pytest

from populations.db import MatchRow
from populations.evaluation import pair_outcomes
from populations.matchmaking import MatchmakingConfig, opponent_distribution
from populations.ratings import Ratings, elo_expected, pair_outcome


def test_elo_known_values():
    assert elo_expected(1000, 1000) == pytest.approx(0.5)
    assert elo_expected(1400, 1000) == pytest.approx(10 / 11)  # 400 points: 10:1 odds
    r = Ratings(k=32)
    r.update([pair_outcome(1, 2, 1.0, 0.0)])
    assert r.elo[1] == pytest.approx(1016) and r.elo[2] == pytest.approx(984)
    assert r.mu[1] > r.mu[2] and r.sigma[1] < 25 / 3


def test_ratings_order_a_consistent_ladder():
    r = Ratings()
    rng = np.random.default_rng(0)
    strength = {1: 0.0, 2: 1.0, 3: 2.0}
    for _ in range(300):
        a, b = rng.choice([1, 2, 3], 2, replace=False)
        p = 1 / (1 + np.exp(strength[b] - strength[a]))
        win = rng.random() < p
        r.update([pair_outcome(int(a), int(b), float(win), float(not win))])
    assert r.elo[3] > r.elo[2] > r.elo[1]
    assert r.mu[3] > r.mu[2] > r.mu[1]


def test_pair_outcomes_swap_roles():
    # snapshot 7 is strong in both roles: as team "adv" it scores 5 vs 1, as "good" -1 vs -4
    def m(key, seats, rets):
        return MatchRow(key, "g", seats, rets)

    rows = [
        m("p/ab/e0000", {"x0": 7, "x1": 7, "y0": 9}, {"x0": 5.0, "x1": 5.0, "y0": -4.0}),
        m("p/ba/e0000", {"x0": 9, "x1": 9, "y0": 7}, {"x0": 1.0, "x1": 1.0, "y0": -1.0}),
        m("p/ab/e0001", {"x0": 7, "x1": 7, "y0": 9}, {"x0": 0.0, "x1": 0.0, "y0": 0.0}),
    ]  # e0001 lacks its swapped half: ignored
    (o,) = pair_outcomes(rows)
    assert (o.a, o.b, o.score_a) == (7, 9, 1.0)
    assert o.margin == pytest.approx((5 - 1) - (-4 + 1))


def test_pfsp_weights_match_formulas():
    wr = [0.9, 0.5, 0.2, None]
    hard = opponent_distribution(wr, MatchmakingConfig(rule="pfsp", weighting="hard"))
    f = np.array([(1 - 0.9) ** 2, 0.5**2, 0.8**2, 0.5**2])
    np.testing.assert_allclose(hard, f / f.sum())
    var = opponent_distribution(wr, MatchmakingConfig(rule="pfsp", weighting="variance"))
    g = np.array([0.09, 0.25, 0.16, 0.25])
    np.testing.assert_allclose(var, g / g.sum())
    smooth = opponent_distribution(wr, MatchmakingConfig(weighting="hard", smoothing=0.2))
    np.testing.assert_allclose(smooth, 0.8 * f / f.sum() + 0.05)
    # beating everyone surely: hard weights vanish, fall back to uniform
    np.testing.assert_allclose(opponent_distribution([1.0, 1.0], MatchmakingConfig()), [0.5, 0.5])


def test_pfsp_hard_weights_with_a_large_exponent_still_focus():
    """(1 - p) ** 2000 underflowed to 0 for every opponent: PFSP fell back to uniform, the
    opposite of focusing on the opponent the learner loses to (weights now in log space)."""
    cfg = MatchmakingConfig(exponent=2000.0)
    np.testing.assert_allclose(opponent_distribution([0.5, 0.9], cfg), [1.0, 0.0], atol=1e-300)
    np.testing.assert_allclose(opponent_distribution([0.9, 0.9, 1.0], cfg), [0.5, 0.5, 0.0])
    np.testing.assert_allclose(opponent_distribution([1.0, 1.0], cfg), [0.5, 0.5])  # uniform
    zero = MatchmakingConfig(exponent=0.0)  # (1 - p) ** 0 = 1, at p = 1 too: uniform
    np.testing.assert_allclose(opponent_distribution([0.2, 1.0], zero), [0.5, 0.5])
    # the exponent is checked where it is used (pfsp, hard) only: fsp said "pfsp exponent"
    assert opponent_distribution([0.3, 0.6], MatchmakingConfig(rule="fsp", exponent=-1.0))[0] \
        == 0.5
    MatchmakingConfig(weighting="variance", exponent=float("nan"))


def test_self_play_and_fsp():
    wr = [0.3, 0.6, 0.5]
    np.testing.assert_array_equal(
        opponent_distribution(wr, MatchmakingConfig(rule="self_play")), [0, 0, 1])
    fsp = opponent_distribution(wr, MatchmakingConfig(rule="fsp"))
    np.testing.assert_allclose(fsp, [1 / 3] * 3)


def test_matchmaking_errors():
    with pytest.raises(ValueError, match=r"rule 'alphastar' unknown; choose one of \['fsp', "):
        MatchmakingConfig(rule="alphastar")
    with pytest.raises(ValueError, match="weighting 'soft' unknown"):
        MatchmakingConfig(weighting="soft")
    with pytest.raises(ValueError, match="no candidate opponents"):
        opponent_distribution([], MatchmakingConfig())
    for bad in (-1.0, float("nan"), float("inf")):  # NaN probabilities (a crash mid-run) before
        with pytest.raises(ValueError, match=r"pfsp exponent=.*expected a finite value >= 0"):
            MatchmakingConfig(exponent=bad)
