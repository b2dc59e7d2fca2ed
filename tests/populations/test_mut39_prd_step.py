"""Projected replicator dynamics against a hand-written Euler step (mut39 m11: the baseline
``x . u`` replaced by the plain mean of ``u`` passed every test, since from the uniform start
the two agree). A seeded 3x3 general-sum bimatrix game started from non-uniform mixtures."""

import numpy as np
import pytest

from populations.meta_solvers import PRDConfig, projected_replicator_dynamics


def _plain_prd(A, B, x, y, dt, gamma, steps):
    for _ in range(steps):
        u, v = A @ y, B.T @ x  # row player's and column player's deviation payoffs
        nx = x + dt * x * (u - float(x @ u))
        ny = y + dt * y * (v - float(y @ v))
        nx, ny = np.maximum(nx, gamma / 3), np.maximum(ny, gamma / 3)
        x, y = nx / nx.sum(), ny / ny.sum()
    return x, y


@pytest.mark.parametrize("steps", [1, 4])
def test_prd_steps_are_replicator_euler_steps(steps):
    rng = np.random.default_rng(39)
    A, B = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    x0, y0 = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3))
    cfg = PRDConfig(iterations=steps, dt=0.2, gamma=1e-6, average_last=1)
    x, y = projected_replicator_dynamics(np.stack([A, B]), cfg, initial=[x0, y0])
    rx, ry = _plain_prd(A, B, x0, y0, 0.2, 1e-6, steps)
    np.testing.assert_allclose(x, rx, rtol=0, atol=1e-12)
    np.testing.assert_allclose(y, ry, rtol=0, atol=1e-12)
    assert not np.allclose(x, x0, atol=1e-3)  # the step moved the mixture
