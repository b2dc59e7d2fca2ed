"""Meta-solvers: known equilibria, a second method for the LP, replicator dynamics on
general-sum and 3-player games, and the registry."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from populations import meta_solvers as ms

RPS = np.array([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]])


def zero_sum(A: np.ndarray) -> np.ndarray:
    return np.stack([A, -A])


def fictitious_play(A: np.ndarray, iters: int) -> tuple[float, float]:
    """Brown's fictitious play on a zero-sum game: (lower, upper) bounds on its value."""
    m, n = A.shape
    cx, cy = np.zeros(m), np.zeros(n)
    i = j = 0
    for _ in range(iters):
        cx[i] += 1
        cy[j] += 1
        i, j = int(np.argmax(A @ cy)), int(np.argmin(cx @ A))
    x, y = cx / cx.sum(), cy / cy.sum()
    return float((x @ A).min()), float((A @ y).max())


def test_registry_lists_valid_names():
    assert {"nash", "prd", "uniform"} <= set(ms.available_meta_solvers())
    with pytest.raises(ValueError, match=r"unknown meta-solver 'alpharnk'.*nash.*prd.*uniform"):
        ms.get_meta_solver("alpharnk")


@pytest.mark.parametrize(
    ("A", "row", "col", "value"),
    [
        (RPS, [1 / 3] * 3, [1 / 3] * 3, 0.0),
        (np.array([[1.0, -1.0], [-1.0, 1.0]]), [0.5, 0.5], [0.5, 0.5], 0.0),  # matching pennies
        (np.array([[2.0, -1.0], [-1.0, 1.0]]), [0.4, 0.6], [0.4, 0.6], 0.2),  # by hand
        (np.array([[3.0, 1.0], [4.0, 2.0]]), [0.0, 1.0], [0.0, 1.0], 2.0),  # saddle point
    ],
)
def test_lp_nash_known_equilibria(A, row, col, value):
    sol = ms.zero_sum_nash(A)
    np.testing.assert_allclose(sol.row, row, atol=1e-8)
    np.testing.assert_allclose(sol.col, col, atol=1e-8)
    assert sol.value == pytest.approx(value, abs=1e-8)
    dists = ms.get_meta_solver("nash")(zero_sum(A))
    np.testing.assert_allclose(dists[0], row, atol=1e-8)
    np.testing.assert_allclose(dists[1], col, atol=1e-8)


def test_lp_nash_prefers_the_most_mixed_equilibrium():
    # Duplicated and dominated members: every mix of the two copies of "paper" is optimal.
    A = np.array(
        [
            [0.0, -1.0, 1.0, -1.0],
            [1.0, 0.0, -1.0, 0.0],
            [-1.0, 1.0, 0.0, 1.0],
            [1.0, 0.0, -1.0, 0.0],
        ]
    )
    sol = ms.zero_sum_nash(A)
    assert np.all(sol.row > 0.05) and np.all(sol.col > 0.05)
    assert ms.meta_nash_conv(zero_sum(A), [sol.row, sol.col]) < 1e-8
    vertex = ms.zero_sum_nash(A, max_support=False)
    assert (vertex.row > 1e-9).sum() == 3 and vertex.value == pytest.approx(sol.value)


def test_lp_nash_random_5x5_against_fictitious_play():
    A = np.random.default_rng(3).normal(size=(5, 5))
    sol = ms.zero_sum_nash(A)
    lower, upper = fictitious_play(A, 20_000)
    assert upper - lower < 0.05  # fictitious play has (slowly) converged
    assert lower - 1e-9 <= sol.value <= upper + 1e-9
    # Both LPs agree on the value (minimax theorem) and neither player can gain.
    assert sol.row @ A @ sol.col == pytest.approx(sol.value, abs=1e-8)
    assert ms.meta_nash_conv(zero_sum(A), [sol.row, sol.col]) < 1e-8


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 6),
    st.integers(1, 6),
    st.integers(0, 2**31 - 1),
    st.floats(-5, 5),
)
def test_lp_nash_is_unexploitable(m, n, seed, constant):
    A = np.random.default_rng(seed).integers(-3, 4, size=(m, n)).astype(float)
    payoffs = np.stack([A, constant - A])  # constant-sum is fine too
    dists = ms.nash(payoffs)
    for d, k in zip(dists, (m, n), strict=True):
        assert d.shape == (k,) and np.all(d >= 0) and d.sum() == pytest.approx(1.0)
    assert ms.meta_nash_conv(payoffs, dists) < 1e-7


def test_nash_rejects_general_sum_and_three_players():
    pd = np.array([[[3.0, 0.0], [5.0, 1.0]], [[3.0, 5.0], [0.0, 1.0]]])
    with pytest.raises(ValueError, match="zero-sum.*prd"):
        ms.nash(pd)
    with pytest.raises(ValueError, match="3 players.*prd"):
        ms.nash(np.zeros((3, 2, 2, 2)))
    with pytest.raises(ValueError, match="shape"):
        ms.nash(np.zeros((2, 3)))


def test_meta_nash_conv_known_value():
    rock = np.array([1.0, 0.0, 0.0])
    assert ms.meta_nash_conv(zero_sum(RPS), [rock, rock]) == pytest.approx(2.0)
    uniform = np.full(3, 1 / 3)
    assert ms.meta_nash_conv(zero_sum(RPS), [uniform, uniform]) == pytest.approx(0.0)


def test_prd_prisoners_dilemma():
    # Row: cooperate, defect. Defection strictly dominates: the equilibrium is (D, D).
    pd = np.array([[[3.0, 0.0], [5.0, 1.0]], [[3.0, 5.0], [0.0, 1.0]]])
    cfg = ms.PRDConfig(iterations=5_000, dt=1e-2, average_last=100)
    x, y = ms.projected_replicator_dynamics(pd, cfg)
    assert x[1] > 0.99 and y[1] > 0.99
    assert ms.meta_nash_conv(pd, [x, y]) < 0.05


def test_prd_three_player_dominance_solvable():
    rng = np.random.default_rng(0)
    payoffs = rng.uniform(-1, 1, size=(3, 3, 3, 3))
    best = (2, 0, 1)  # each player's strictly dominant action gets a bonus
    for p, a in enumerate(best):
        index = [slice(None)] * 3
        index[p] = a
        payoffs[(p, *index)] += 3.0
    cfg = ms.PRDConfig(iterations=4_000, dt=1e-2, average_last=100)
    dists = ms.projected_replicator_dynamics(payoffs, cfg)
    for p, a in enumerate(best):
        assert dists[p][a] > 0.99
    assert ms.meta_nash_conv(payoffs, dists) < 0.05


def test_prd_rps_time_average_is_uniform():
    dists = ms.projected_replicator_dynamics(
        zero_sum(RPS),
        ms.PRDConfig(iterations=20_000, dt=1e-2),
        initial=[np.array([0.6, 0.3, 0.1]), np.array([0.2, 0.5, 0.3])],
    )
    for d in dists:
        np.testing.assert_allclose(d, np.full(3, 1 / 3), atol=0.05)


def test_prd_stays_in_simplex_interior():
    pd = np.array([[[3.0, 0.0], [5.0, 1.0]], [[3.0, 5.0], [0.0, 1.0]]])
    x, _ = ms.projected_replicator_dynamics(
        pd, ms.PRDConfig(iterations=3_000, dt=0.1, gamma=0.1, average_last=1)
    )
    # OpenSpiel's projection: clip at gamma / K, then renormalize (sum <= 1 + gamma).
    assert x.sum() == pytest.approx(1.0) and x.min() >= 0.1 / 2 / 1.1 - 1e-12


def test_uniform_solver():
    dists = ms.get_meta_solver("uniform")(np.zeros((3, 2, 4, 1)))
    assert [d.tolist() for d in dists] == [[0.5, 0.5], [0.25] * 4, [1.0]]


def matrix_response(A: np.ndarray) -> ms.ResponseProblem:
    """The column player's best response to mixtures of the row player's pure strategies
    (row payoffs ``A [K, N]``) as a one-state sequence-form problem."""
    K, N = A.shape
    payoff = np.vstack([np.zeros((1, K)), -A.T])  # [1 + N, K], empty sequence first
    return ms.ResponseProblem(
        payoff=payoff,
        seq_state=np.array([-1] + [0] * N),
        parent=np.zeros(1, np.int64),
        depth=np.zeros(1, np.int64),
    )


@pytest.mark.parametrize(
    ("A", "weights", "value"),
    [
        (RPS, [1 / 3] * 3, 0.0),  # the full population: the equilibrium
        (RPS[:2], [1 / 3, 2 / 3], 1 / 3),  # rock and paper only, by hand: max(x-1, x, 1-2x)
        (np.array([[2.0, -1.0], [-1.0, 1.0]]), [0.4, 0.6], -0.2),
    ],
)
def test_least_exploitable_mixture_known_values(A, weights, value):
    sol = ms.least_exploitable_mixture(matrix_response(A))
    np.testing.assert_allclose(sol.weights, weights, atol=1e-8)
    assert sol.value == pytest.approx(value, abs=1e-9)
    assert sol.lp_value == pytest.approx(value, abs=1e-9)
    # In a matrix game it is the row player's maximin strategy over its members.
    assert -sol.value == pytest.approx(ms.zero_sum_nash(A).value, abs=1e-8)
    # The exploiter is the column player's minimax strategy, as a realization plan.
    y = sol.exploiter
    assert y[0] == pytest.approx(1.0) and y[1:].sum() == pytest.approx(1.0)
    assert (A @ y[1:]).max() == pytest.approx(-value, abs=1e-8)


def test_least_exploitable_solver_in_the_registry():
    # Rock-paper-scissors with populations {rock, paper} for both players.
    payoffs = zero_sum(RPS[:2, :2])
    full = ms.FullGame(responses=(matrix_response(RPS[:2]), matrix_response(-RPS.T[:2])))
    dists = ms.get_meta_solver("least_exploitable")(payoffs, full_game=full)
    np.testing.assert_allclose(dists[0], [1 / 3, 2 / 3], atol=1e-8)
    np.testing.assert_allclose(dists[1], [1 / 3, 2 / 3], atol=1e-8)
    with pytest.raises(ValueError, match="full_game has 2 members of player 1, payoffs 3"):
        ms.least_exploitable(np.zeros((2, 2, 3)), full_game=full)


def support_union(A: np.ndarray, value: float) -> np.ndarray:
    """Reference: the members some maximin strategy plays, one LP per member (max x_i over
    the optimal face, tolerance 1e-10)."""
    from scipy.optimize import linprog

    m, n = A.shape
    out = []
    for i in range(m):
        c = np.zeros(m)
        c[i] = -1.0
        r = linprog(c, A_ub=-A.T, b_ub=np.full(n, 1e-10 - value), A_eq=np.ones((1, m)),
                    b_eq=[1.0], bounds=[(0, None)] * m, method="highs")
        out.append(bool(r.success and -r.fun > 1e-6))
    return np.array(out)


def test_lp_nash_support_is_every_member_some_equilibrium_plays():
    # Columns 0 and 3 both hold the row player to -2: the column player's largest-support
    # equilibrium mixes them. The old one-LP cone formulation returned the vertex [1, 0, 0, 0, 0]
    # (its tolerance slack, scaled up, covered every member at weight ~1e-10).
    sol = ms.zero_sum_nash(np.array([[-2.0, -1.0, 1.0, -2.0, 0.0]]))
    np.testing.assert_allclose(sol.col, [0.5, 0, 0, 0.5, 0], atol=1e-8)
    rng = np.random.default_rng(0)
    for _ in range(8):  # small integer games: ties and several equilibria
        A = rng.integers(-2, 3, size=tuple(rng.integers(1, 5, 2))).astype(float)
        sol = ms.zero_sum_nash(A)
        np.testing.assert_array_equal(sol.row > 1e-6, support_union(A, sol.value))
        np.testing.assert_array_equal(sol.col > 1e-6, support_union(-A.T, -sol.value))
        assert ms.meta_nash_conv(zero_sum(A), [sol.row, sol.col]) < 1e-8
        small = ms.zero_sum_nash(A * 1e-3)  # the LP's absolute tolerances: solved at unit scale
        np.testing.assert_allclose(small.row, sol.row, atol=1e-8)
        np.testing.assert_allclose(small.col, sol.col, atol=1e-8)
        assert small.value == pytest.approx(sol.value * 1e-3, abs=1e-12)


def test_lp_nash_support_leaves_out_a_member_worse_by_a_little():
    """A member that does a little worse against the opponent's equilibrium plays in no
    equilibrium. Each support LP may fall short of the value by ~1e-9 (relative), which let
    a member with a small deficit ``g`` in at weight ``~1e-9 / g`` (kept above 1e-6)."""
    for scale in (1.0, 1e3):
        sol = ms.zero_sum_nash(np.array([[0.0], [-1e-4]]) * scale)
        np.testing.assert_array_equal(sol.row, [1.0, 0.0])
    rps = np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0], [-1e-4, -1e-4, -1e-4]])
    np.testing.assert_allclose(ms.zero_sum_nash(rps).row, [1 / 3, 1 / 3, 1 / 3, 0], atol=1e-9)
    rng = np.random.default_rng(0)  # generic: one equilibrium, of support 85 (deficits ~1e-4)
    M = rng.normal(size=(150, 150))
    sol = ms.zero_sum_nash(M - M.T)
    assert (sol.row > 0).sum() == (sol.col > 0).sum() == 85
