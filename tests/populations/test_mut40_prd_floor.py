"""Projected replicator dynamics' floor is ``gamma / K`` per probability (mut40: a floor of
``gamma`` itself passed, since every test ran with gamma = 1e-6, which no probability
reached): one Euler step by hand from mixtures the step drives under the floor."""

import numpy as np
import pytest

from populations.meta_solvers import PRDConfig, projected_replicator_dynamics


def test_one_step_clips_at_gamma_over_k():
    # a 2-player game, 4 actions against 2: the row player's action 0 loses badly
    A = np.array([[-5.0, -5.0], [1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    B = np.array([[0.0, 1.0], [1.0, 0.0], [0.2, 0.3], [0.0, 0.0]])
    x0, y0 = np.array([0.04, 0.3, 0.3, 0.36]), np.array([0.5, 0.5])
    dt, gamma = 0.19, 0.2  # floors 0.05 (K=4) and 0.1 (K=2)
    u, v = A @ y0, B.T @ x0
    x = x0 + dt * x0 * (u - x0 @ u)
    y = y0 + dt * y0 * (v - y0 @ v)
    assert x[0] < gamma / 4  # the step goes under the floor: the projection acts
    x, y = np.maximum(x, gamma / 4), np.maximum(y, gamma / 2)
    x, y = x / x.sum(), y / y.sum()
    cfg = PRDConfig(iterations=1, dt=dt, gamma=gamma, average_last=1)
    got_x, got_y = projected_replicator_dynamics(np.stack([A, B]), cfg, initial=[x0, y0])
    np.testing.assert_allclose(got_x, x, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got_y, y, rtol=0, atol=1e-12)
    assert got_x[0] == pytest.approx(0.05 / (1 + 0.05 - (x0 + dt * x0 * (u - x0 @ u))[0]),
                                     rel=1e-12)
