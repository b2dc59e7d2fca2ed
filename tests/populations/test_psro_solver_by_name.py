"""PSRO asks its meta-solver by name at each iteration's step 3 (``solve_meta``), which
checks what it returns; it keeps no function of its own. An unknown name still fails when
the settings are made (``PSROConfig``), before any game is built.

Before: ``PSRO.__init__`` kept ``self.solver = get_meta_solver(...)``, read nowhere since
``solve_meta``: a second, stale copy of the solver (a notebook cell that defined the solver
again changed what runs, not that attribute)."""

from __future__ import annotations

import numpy as np
import pytest

from populations import meta_solvers as ms
from populations.psro import PSRO, ExactBestResponse, PSROConfig

KUHN = "openspiel/kuhn_poker"
NAME = "w24_pick"


def _solver(pick: int):
    """A meta-solver putting all weight on each player's member ``pick`` (or the last)."""
    def solver(payoffs, full_game=None):
        return [np.eye(k)[min(pick, k - 1)] for k in payoffs.shape[1:]]

    return solver


@pytest.fixture()
def pick():
    """``w24_pick`` registered (the first member); taken out of the registry after."""
    ms.register_meta_solver(NAME)(_solver(0))
    yield
    ms._META_SOLVERS.pop(NAME, None)


def test_psro_solves_by_name_with_the_solver_registered_now(pick):
    psro = PSRO(KUHN, ExactBestResponse(KUHN), PSROConfig(meta_solver=NAME, seed=0))
    assert not hasattr(psro, "solver")  # no copy of its own to go stale
    ms.register_meta_solver(NAME)(_solver(1))  # the cell run again: the same function's name
    first = psro.iteration()
    second = psro.iteration()
    assert all(len(m) == 2 for m in first.meta_strategy.values())
    for dist in first.meta_strategy.values():
        np.testing.assert_array_equal(dist, [0.0, 1.0])  # the new solver's, not the old one's
    for dist in second.meta_strategy.values():
        np.testing.assert_array_equal(dist, [0.0, 1.0, 0.0])


def test_an_unknown_solver_fails_with_the_settings():
    with pytest.raises(ValueError, match=r"^unknown meta-solver 'w24_nowhere'; choose one of "):
        PSRO(KUHN, ExactBestResponse(KUHN), PSROConfig(meta_solver="w24_nowhere"))
