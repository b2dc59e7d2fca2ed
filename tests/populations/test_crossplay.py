"""Cross-play statistics against slow reference loops, bootstrap coverage, Elo replay
against populations.ratings' own Elo rule, and α-Rank through OpenSpiel's alpharank."""

from __future__ import annotations

import numpy as np
import pytest

from populations.crossplay import (
    RESAMPLES,
    alpha_rank,
    alpha_rank_interval,
    bootstrap_indices,
    complete_subset,
    crossplay,
    elo_bootstrap,
    episodes,
    pair_rng,
)
from populations.db import MatchRow
from populations.evaluation import pair_outcomes
from populations.ratings import PairOutcome, Ratings
from tests import subprocs


def random_matches(n: int, k: int = 4, seed: int = 0) -> list[MatchRow]:
    """Two-seat episodes between ``k`` snapshots (ids 10, 11, ...), integer returns so
    draws happen; snapshot i beats j more often as i - j grows. Also self-play episodes
    and a three-snapshot one, which must be handled as the module doc says."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(n):
        a, b = rng.choice(k, 2, replace=False)
        r = float(rng.integers(-2, 3) + (a - b))
        out.append(MatchRow(f"m{t}", "g", {"p0": int(a) + 10, "p1": int(b) + 10},
                            {"p0": r, "p1": -r}))
    out.append(MatchRow("self", "g", {"p0": 10, "p1": 10}, {"p0": 5.0, "p1": -5.0}))
    return out


def wilson_reference(k: int, n: int, confidence: float) -> tuple[float, float]:
    """Wilson's score interval from its definition: the p whose score test at level
    ``confidence`` does not reject, |k/n - p| <= z sqrt(p (1 - p) / n), as the two roots of
    the quadratic (1 + z²/n) p² - (2k/n + z²/n) p + (k/n)² = 0."""
    import math
    from statistics import NormalDist

    z, q = NormalDist().inv_cdf((1 + confidence) / 2), k / n
    a, b, c = 1 + z * z / n, -(2 * q + z * z / n), q * q
    root = math.sqrt(max(b * b - 4 * a * c, 0.0))
    return (-b - root) / (2 * a), (-b + root) / (2 * a)


def reference(matches: list[MatchRow], resamples: int, seed: int, confidence: float = 0.95):
    """Slow loops: per ordered pair, margins episode by episode, rates counted one by one
    with Wilson's interval from its definition, and each bootstrap resample's mean margin
    with the same index draws as the module."""
    margins: dict[tuple[int, int], list[float]] = {}
    for m in matches:
        seated: dict[int, list[float]] = {}
        for agent, sid in m.seats.items():
            seated.setdefault(sid, []).append(m.returns[agent])
        score = {sid: sum(r) / len(r) for sid, r in seated.items()}  # the team's return
        for x in score:
            for y in score:
                if x < y:
                    margins.setdefault((x, y), []).append(score[x] - score[y])
    out = {}
    for (a, b), ms in margins.items():
        idx = bootstrap_indices(len(ms), resamples, pair_rng(seed, a, b))
        for row, col, sign in ((a, b, 1.0), (b, a, -1.0)):
            vals = [sign * x for x in ms]
            stats = {}
            for name, f in (("win", lambda v: v > 1e-9), ("loss", lambda v: v < -1e-9),
                            ("draw", lambda v: abs(v) <= 1e-9), ("margin", lambda v: v)):
                point = sum(float(f(v)) for v in vals) / len(vals)
                if name != "margin":
                    count = sum(bool(f(v)) for v in vals)
                    stats[name] = (point, *wilson_reference(count, len(vals), confidence))
                    continue
                boot = []
                for r in range(resamples):
                    boot.append(sum(float(f(vals[i])) for i in idx[r]) / len(vals))
                boot.sort()
                lo = np.quantile(boot, (1 - confidence) / 2)
                hi = np.quantile(boot, (1 + confidence) / 2)
                stats[name] = (point, lo, hi)
            out[(row, col)] = (len(vals), stats)
    return out


@pytest.mark.parametrize("chunk", [1 << 22, 50])  # one block of resamples, or many
def test_tables_match_the_slow_reference_loop(chunk, monkeypatch):
    monkeypatch.setattr("populations.crossplay.CHUNK", chunk)
    matches = random_matches(300)
    cp = crossplay(episodes(matches), resamples=200, seed=3)
    ref = reference(matches, 200, 3)
    assert cp.ids == [10, 11, 12, 13]  # the self-play episode adds no pair
    pos = {s: i for i, s in enumerate(cp.ids)}
    assert len(ref) == 12
    for (a, b), (n, stats) in ref.items():
        i, j = pos[a], pos[b]
        assert cp.n[i][j] == n
        for name, (point, lo, hi) in stats.items():
            assert cp.table[name][i][j] == pytest.approx(point, abs=1e-12), (a, b, name)
            assert cp.table[f"{name}_lo"][i][j] == pytest.approx(lo, abs=1e-12)
            assert cp.table[f"{name}_hi"][i][j] == pytest.approx(hi, abs=1e-12)
    for i in range(4):
        assert cp.table["win"][i][i] is None and cp.n[i][i] == 0
    w, d, lo_ = (np.array(cp.table[s][0][1:]) for s in ("win", "draw", "loss"))
    assert np.allclose(w + d + lo_, 1.0)


def test_three_snapshot_episode_gives_every_pair():
    m = MatchRow("x", "g", {"a": 1, "b": 2, "c": 3, "d": 3}, {"a": 1.0, "b": 2.0, "c": 1.0,
                                                             "d": 1.5})
    e = episodes([m])  # snapshot 3's score is the mean of its seats' returns, 1.25
    assert list(zip(e.a, e.b, e.margin, strict=True)) == [(1, 2, -1.0), (1, 3, -0.25),
                                                          (2, 3, 0.75)]


def test_team_scores_are_team_returns_as_in_the_payoffs_table():
    # 3 seats against 1: the three-seat team's shared reward 1.0 is its return, not 3.0, so
    # snapshot 9 (return 2.0) wins the first episode, as populations.evaluation counts it.
    # Over a complete role-swapped pair the mean margin is the payoffs table's value.
    rows = [
        MatchRow("rr/7-9/ab/e0000", "g", {"x0": 7, "x1": 7, "x2": 7, "y0": 9},
                 {"x0": 1.0, "x1": 1.0, "x2": 1.0, "y0": 2.0}),
        MatchRow("rr/7-9/ba/e0000", "g", {"x0": 9, "x1": 9, "x2": 9, "y0": 7},
                 {"x0": -1.0, "x1": -1.0, "x2": -1.0, "y0": 0.5}),
    ]
    e = episodes(rows)
    assert e.margin.tolist() == [-1.0, 1.5]
    (o,) = pair_outcomes(rows)
    cp = crossplay(e, resamples=10)
    assert (o.a, o.b) == (7, 9) and cp.table["margin"][0][1] == pytest.approx(o.margin / 2)
    assert cp.table["loss"][0][1] == 0.5 and cp.table["win"][0][1] == 0.5


def test_same_seed_same_intervals_and_pairs_are_independent():
    matches = random_matches(200)
    a = crossplay(episodes(matches), resamples=100, seed=1)
    b = crossplay(episodes(matches), resamples=100, seed=1)
    assert a.table == b.table
    # dropping every episode of snapshot 13 leaves the other pairs' intervals unchanged
    fewer = [m for m in matches if 13 not in m.seats.values()]
    c = crossplay(episodes(fewer), resamples=100, seed=1)
    assert c.table["margin_lo"][0][1] == a.table["margin_lo"][0][1]
    assert crossplay(episodes(matches), resamples=100, seed=2).table != a.table


def test_a_pair_that_always_won_has_an_honest_win_rate_interval():
    """10 wins of 10: Wilson's interval is [10 / (10 + z²), 1] = [0.722, 1] at 95 % (a
    percentile bootstrap said [1, 1]); the loser's loss rate mirrors it, no draws [0, 0.278]."""
    ms = [MatchRow(str(t), "g", {"p0": 1, "p1": 2}, {"p0": 1.0, "p1": -1.0}) for t in range(10)]
    t = crossplay(episodes(ms), resamples=50).table
    z2 = 1.959963984540054 ** 2
    assert t["win"][0][1] == 1.0 and t["win_hi"][0][1] == 1.0
    assert t["win_lo"][0][1] == pytest.approx(10 / (10 + z2), abs=1e-12)
    assert t["loss_lo"][1][0] == pytest.approx(10 / (10 + z2), abs=1e-12)
    assert t["draw_lo"][0][1] == 0.0
    assert t["draw_hi"][0][1] == pytest.approx(z2 / (10 + z2), abs=1e-12)


def test_bootstrap_interval_covers_the_true_win_rate():
    """Episodes of a coin with p = 0.3: the 95 % interval covers p in about 95 % of 200
    independent data sets (binomial: 183..197 holds with probability > 0.99)."""
    rng = np.random.default_rng(0)
    covered = 0
    for rep in range(200):
        wins = rng.random(60) < 0.3
        ms = [MatchRow(str(t), "g", {"p0": 1, "p1": 2}, {"p0": float(w) * 2 - 1, "p1": 0.0})
              for t, w in enumerate(wins)]
        cp = crossplay(episodes(ms), resamples=400, seed=rep)
        covered += cp.table["win_lo"][0][1] <= 0.3 <= cp.table["win_hi"][0][1]
    assert 180 <= covered <= 198, covered


def test_elo_replay_matches_the_leagues_elo_rule():
    matches = random_matches(120)
    eps = episodes(matches)
    ids = sorted(set(eps.a) | set(eps.b))
    out = elo_bootstrap(eps, ids, resamples=50, seed=0)
    ratings = Ratings()
    for a, b, m in zip(eps.a, eps.b, eps.margin, strict=True):
        score = 1.0 if m > 1e-9 else 0.0 if m < -1e-9 else 0.5
        ratings.update([PairOutcome(int(a), int(b), score, float(m))])
    for s in ids:
        assert out[s]["elo"] == pytest.approx(ratings.elo[s])
        assert out[s]["elo_lo"] < out[s]["elo_hi"]
    assert out[13]["elo_lo"] > out[10]["elo_hi"]  # the strongest is clearly above the weakest


def test_alpha_rank_uses_openspiel_and_ranks_a_dominant_snapshot_first():
    matches = random_matches(400)
    cp = crossplay(episodes(matches), resamples=RESAMPLES, seed=0)
    ar = alpha_rank(cp.table["margin"], cp.ids)
    assert ar["ids"] == [10, 11, 12, 13] and ar["left_out"] == []
    assert sum(ar["pi"]) == pytest.approx(1.0)
    assert ar["rank"][3] == 1 and ar["pi"][3] > 0.9  # 13 beats everyone
    from open_spiel.python.egt import alpharank  # the same numbers as OpenSpiel's own call
    m = np.nan_to_num(np.array(cp.table["margin"], dtype=float))
    _, _, pi, _, _ = alpharank.compute([m], m=50, use_inf_alpha=True)
    assert ar["pi"] == pytest.approx(list(pi))


def test_alpha_rank_rock_paper_scissors_is_uniform_and_missing_pairs_are_left_out():
    rps = [[None, 1.0, -1.0, None], [-1.0, None, 1.0, 0.5], [1.0, -1.0, None, None],
           [None, -0.5, None, None]]
    ar = alpha_rank(rps, [1, 2, 3, 4], alpha=5.0)
    assert ar["ids"] == [1, 2, 3] and ar["left_out"] == [4]
    assert ar["pi"] == pytest.approx([1 / 3] * 3)
    assert alpha_rank([[None]], [7])["pi"] == [1.0]
    assert complete_subset(np.zeros((2, 2), dtype=bool)) == [0]


def test_bad_arguments_are_one_line_errors():
    eps = episodes(random_matches(10))
    with pytest.raises(ValueError, match="resamples=0"):
        crossplay(eps, resamples=0)
    with pytest.raises(ValueError, match="confidence=95"):
        crossplay(eps, confidence=95)


def test_alpharank_import_leaves_logging_alone():
    """Without matplotlib, OpenSpiel's plotting module logs (attaching a stderr handler to
    the root logger) before failing; the stand-in keeps it from running at all."""
    import sys

    code = ("import logging; from populations.crossplay import alpha_rank; "
            "alpha_rank([[None, 1.0], [-1.0, None]], [1, 2]); print(len(logging.root.handlers))")
    out = subprocs.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0", out.stderr


def test_alpharank_stand_in_answers_introspection_like_a_module():
    """Tools that walk sys.modules (hypothesis reads every module's ``__file__`` with
    ``getattr(m, "__file__", None)``) must get AttributeError from the stand-in, not
    ImportError: that failed an unrelated hypothesis test run after the dashboard's."""
    import sys

    from populations.crossplay import import_alpharank

    import_alpharank()
    mod = sys.modules["open_spiel.python.egt.alpharank_visualizer"]
    assert getattr(mod, "__file__", "absent") in ("absent", None) or isinstance(mod.__file__,
                                                                                 str)
    if getattr(mod, "__doc__", "") == "stand-in: matplotlib is not installed":
        with pytest.raises(ImportError, match="needs matplotlib"):
            mod.plot_pi_vs_alpha  # noqa: B018


def test_alpha_rank_interval_is_wide_with_few_episodes_and_narrow_with_many():
    few = crossplay(episodes(random_matches(24)), resamples=200, seed=0)
    many = crossplay(episodes(random_matches(2000)), resamples=200, seed=0)
    widths = []
    for cp in (few, many):
        ar = alpha_rank(cp.table["margin"], cp.ids)
        iv = alpha_rank_interval(cp, ar, resamples=100)
        assert len(iv["pi_lo"]) == len(ar["ids"]) and sum(iv["top"]) == pytest.approx(1.0)
        assert all(0.0 <= lo <= hi <= 1.0 for lo, hi in zip(iv["pi_lo"], iv["pi_hi"],
                                                             strict=True))
        widths.append(max(h - lo for lo, h in zip(iv["pi_lo"], iv["pi_hi"], strict=True)))
    assert widths[1] < widths[0]
    assert iv["top"][ar["ids"].index(13)] > 0.9  # with 2000 episodes 13 is first every time
