"""Projected replicator dynamics runs as one vector of every player's mixture, a few numpy
calls per step (session 41: 20,000 steps one player and one tensordot at a time took 1.5-4 s
per meta-solve, bench/prd41_bench.py). The results stay those of the per-player formula
within float rounding, and OpenSpiel's PRD with the same floor agrees as closely."""

import numpy as np
import pytest
from open_spiel.python.algorithms import projected_replicator_dynamics as os_prd

from populations.meta_solvers import BLOCK_SIZE, PRDConfig, projected_replicator_dynamics


def per_player(payoffs, cfg, initial):
    """The formula one player at a time (the loop before session 41, written out)."""
    P = payoffs.shape[0]
    x = [np.asarray(s, dtype=np.float64) / np.sum(s) for s in initial]
    avg = [np.zeros_like(s) for s in x]
    keep = cfg.iterations if cfg.average_last is None else cfg.average_last
    for it in range(cfg.iterations):
        new = []
        for p in range(P):
            u = np.moveaxis(payoffs[p], p, 0)
            for q in reversed(range(P)):
                if q != p:
                    u = u @ x[q]
            s = x[p] + cfg.dt * x[p] * (u - x[p] @ u)
            s = np.maximum(s, cfg.gamma / s.size)
            new.append(s / s.sum())
        x = new
        if it >= cfg.iterations - keep:
            for a, s in zip(avg, x, strict=True):
                a += s
    return [a / a.sum() for a in avg]


GAMES = [(2, 2), (2, 5), (4, 3), (7, 7), (3, 3, 3), (2, 3, 4), (2, 2, 2, 2),
         (40, 30), (30, 20, 20)]  # the last two: above BLOCK_SIZE members, per-player path


@pytest.mark.parametrize("sizes", GAMES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("average_last", [None, 1, 37])
def test_same_as_the_per_player_formula(sizes, average_last):
    assert (sum(sizes) > BLOCK_SIZE) == (sizes in GAMES[-2:])
    rng = np.random.default_rng(sum(sizes) * 7 + len(sizes))
    payoffs = rng.uniform(-1, 1, size=(len(sizes), *sizes))
    initial = [rng.uniform(0.1, 1, size=k) for k in sizes]
    cfg = PRDConfig(iterations=500, dt=0.05, gamma=0.05, average_last=average_last)
    got = projected_replicator_dynamics(payoffs, cfg, initial=initial)
    want = per_player(payoffs, cfg, initial)
    assert [g.shape for g in got] == [(k,) for k in sizes]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-12)


def test_the_floor_acts_as_in_the_formula():
    # gamma large enough that members sit on the floor gamma / K_p (K differs per player)
    rng = np.random.default_rng(3)
    payoffs = rng.uniform(-1, 1, size=(3, 2, 4, 3))
    initial = [np.full(k, 1.0 / k) for k in (2, 4, 3)]
    cfg = PRDConfig(iterations=300, dt=0.2, gamma=0.3, average_last=1)
    got = projected_replicator_dynamics(payoffs, cfg, initial=initial)
    want = per_player(payoffs, cfg, initial)
    assert all(0.3 / w.size / 1.3 < w.min() < 0.3 / w.size for w in want)  # on the floor
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-12)


@pytest.mark.parametrize("players,k", [(2, 2), (2, 6), (3, 3)])
def test_agrees_with_openspiel_same_floor(players, k):
    # OpenSpiel's approximate projection floors at gamma itself: ours at gamma / K.
    rng = np.random.default_rng(players * 10 + k)
    payoffs = rng.uniform(-1, 1, size=(players, *([k] * players)))
    cfg = PRDConfig(iterations=2_000, dt=0.01, gamma=0.02, average_last=1)
    ours = projected_replicator_dynamics(payoffs, cfg)
    theirs = os_prd.projected_replicator_dynamics(
        list(payoffs), prd_iterations=cfg.iterations, prd_dt=cfg.dt, prd_gamma=cfg.gamma / k,
        average_over_last_n_strategies=1, use_approx=True)
    for o, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(o, t, rtol=0, atol=1e-12)


def test_zero_iterations_returns_the_initial_mixtures():
    got = projected_replicator_dynamics(np.zeros((2, 2, 3)), PRDConfig(iterations=0),
                                        initial=[np.array([1.0, 3.0]), np.array([1.0, 1, 2])])
    np.testing.assert_array_equal(got[0], [0.25, 0.75])
    np.testing.assert_array_equal(got[1], [0.25, 0.25, 0.5])
