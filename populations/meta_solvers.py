"""Meta-solvers: payoff tensor of an empirical game in, one distribution per player out.

PSRO (Lanctot et al., 2017, "A Unified Game-Theoretic Approach to Multiagent
Reinforcement Learning") alternates best responses with solving the *empirical game*
among the current population. The meta-solver decides which mixture of the population
the next best responses are computed against:

* ``nash``: a Nash equilibrium of a 2-player zero-sum (or constant-sum) game by linear
  programming (scipy's HiGHS): maximin strategies, of largest support among them;
* ``prd``: projected replicator dynamics (Lanctot et al., 2017, Sec. 3.1), for
  general-sum and n-player games: replicator dynamics kept at least ``gamma / K`` away from
  the simplex boundary, returning the average of the iterates;
* ``uniform``: every member equally, which makes PSRO fictitious play.

Every solver has one signature, ``solver(payoffs) -> list of distributions``, where
``payoffs`` is ``[P, K_0, ..., K_{P-1}]`` (entry ``[p, i_0, ..., i_{P-1}]`` is player ``p``'s
expected return when player ``q`` plays its member ``i_q``). Solvers register by name with
:func:`register_meta_solver`; :func:`get_meta_solver` raises ``ValueError`` listing the
valid names. The functions here are pure (numpy in, numpy out) and testable alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

MetaSolver = Callable[[np.ndarray], list[np.ndarray]]
"""``payoffs [P, K_0, ..., K_{P-1}] -> [dist_0 [K_0], ..., dist_{P-1} [K_{P-1}]]``."""

_META_SOLVERS: dict[str, MetaSolver] = {}


def register_meta_solver(name: str) -> Callable[[MetaSolver], MetaSolver]:
    """Register a meta-solver under ``name`` (use as a decorator)."""

    def deco(fn: MetaSolver) -> MetaSolver:
        if name in _META_SOLVERS and _META_SOLVERS[name] is not fn:
            raise ValueError(f"meta-solver {name!r} is already registered")
        _META_SOLVERS[name] = fn
        return fn

    return deco


def available_meta_solvers() -> list[str]:
    """Registered meta-solver names."""
    return sorted(_META_SOLVERS)


def get_meta_solver(name: str) -> MetaSolver:
    """The meta-solver registered as ``name``.

    Raises:
        ValueError: ``name`` is unknown; the message lists the valid names.
    """
    if name not in _META_SOLVERS:
        raise ValueError(f"unknown meta-solver {name!r}; choose one of {available_meta_solvers()}")
    return _META_SOLVERS[name]


def check_payoffs(payoffs: np.ndarray) -> np.ndarray:
    """Validate a payoff tensor ``[P, K_0, ..., K_{P-1}]`` and return it as float64."""
    arr = np.asarray(payoffs, dtype=np.float64)
    if arr.ndim < 2 or arr.shape[0] != arr.ndim - 1:
        raise ValueError(
            f"payoffs must have shape [P, K_0, ..., K_(P-1)] with P players, got {arr.shape}"
        )
    if arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ValueError(f"payoffs must be non-empty and finite, got shape {arr.shape}")
    return arr


# --------------------------------------------------------------------------- helpers
def deviation_payoffs(
    payoffs: np.ndarray, strategies: Sequence[np.ndarray], player: int
) -> np.ndarray:
    """``[K_player]`` expected payoff of each pure member of ``player`` against the others'
    ``strategies`` (the player's own strategy is ignored)."""
    t = np.asarray(payoffs[player], dtype=np.float64)
    # Contract the highest axes first so the remaining axis indices stay valid.
    for q in reversed(range(len(strategies))):
        if q != player:
            t = np.tensordot(t, strategies[q], axes=([q], [0]))
    return t


def meta_nash_conv(payoffs: np.ndarray, strategies: Sequence[np.ndarray]) -> float:
    """NashConv of ``strategies`` in the empirical game: the sum over players of what a
    unilateral switch to their best pure member would gain (0 at a Nash equilibrium)."""
    payoffs = check_payoffs(payoffs)
    total = 0.0
    for p in range(payoffs.shape[0]):
        dev = deviation_payoffs(payoffs, strategies, p)
        total += float(dev.max() - dev @ strategies[p])
    return total


def _simplex(x: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """Zero entries below ``floor`` (LP round-off, tiny negatives) and renormalize."""
    x = np.asarray(x, dtype=np.float64)
    x = np.where(x > floor, x, 0.0)
    return x / x.sum()


LP_NOISE = 1e-9
"""LP solutions are accurate to about HiGHS' feasibility tolerance (1e-7); probabilities
below this are round-off. Left in, they make PSRO best-respond to members played with
probability 1e-10 at states nothing else reaches."""


# ------------------------------------------------------------------------------ Nash LP
@dataclass(frozen=True)
class ZeroSumSolution:
    """A Nash equilibrium of a 2-player zero-sum matrix game.

    Attributes:
        row: ``[m]`` maximin strategy of the row player.
        col: ``[n]`` minimax strategy of the column player.
        value: the row player's equilibrium payoff.
    """

    row: np.ndarray
    col: np.ndarray
    value: float


def _maximin(A: np.ndarray) -> tuple[np.ndarray, float]:
    """Row strategy maximizing the worst-case payoff ``min_j x^T A[:, j]`` (an LP)."""
    m, n = A.shape
    c = np.zeros(m + 1)
    c[-1] = -1.0  # maximize v
    a_ub = np.hstack([-A.T, np.ones((n, 1))])  # v - x^T A[:, j] <= 0
    a_eq = np.hstack([np.ones((1, m)), np.zeros((1, 1))])
    bounds = [(0.0, None)] * m + [(None, None)]
    res = linprog(c, A_ub=a_ub, b_ub=np.zeros(n), A_eq=a_eq, b_eq=[1.0], bounds=bounds,
                  method="highs")
    if not res.success:  # pragma: no cover - a finite matrix game always has a solution
        raise RuntimeError(f"Nash LP failed: {res.message}")
    return _simplex(res.x[:m], LP_NOISE), float(res.x[-1])


def _max_support(A: np.ndarray, x0: np.ndarray, value: float) -> np.ndarray:
    """A maximin strategy of largest support: in the relative interior of the optimal face.

    One LP over the cone of the face: scale ``z = lambda * x`` freely and maximize the number
    of coordinates that reach 1 (``sum y`` with ``y <= z``, ``y <= 1``). Falls back to
    ``x0`` if round-off leaves the result short of ``value``.
    """
    m, n = A.shape
    scale = max(1.0, float(np.abs(A).max()))
    floor = value - 1e-9 * scale
    c = np.concatenate([np.zeros(m), -np.ones(m)])
    a_ub = np.vstack([
        np.hstack([-np.eye(m), np.eye(m)]),  # y - z <= 0
        np.hstack([floor - A.T, np.zeros((n, m))]),  # floor * sum(z) - A^T z <= 0
    ])
    bounds = [(0.0, None)] * m + [(0.0, 1.0)] * m
    res = linprog(c, A_ub=a_ub, b_ub=np.zeros(m + n), bounds=bounds, method="highs")
    if not res.success or res.x[:m].sum() <= 0:
        return x0
    x = _simplex(res.x[:m], LP_NOISE * res.x[:m].max())
    return x if (x @ A).min() >= value - 1e-7 * scale else x0


def zero_sum_nash(A: np.ndarray, max_support: bool = True) -> ZeroSumSolution:
    """Nash equilibrium of the zero-sum game with row payoffs ``A [m, n]`` (column player
    gets ``-A``), by linear programming for each player.

    With ``max_support`` each player's strategy lies in the relative interior of its set of
    equilibrium strategies (largest support), as an interior-point LP solver such as
    OpenSpiel's would return; otherwise it is the simplex method's vertex. Empirical games
    of PSRO are often degenerate (members that differ only off the path), and the more
    mixed equilibrium gives less exploitable meta-mixtures in our runs (Leduc poker,
    Liar's dice).
    """
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or A.size == 0:
        raise ValueError(f"A must be a non-empty [m, n] matrix, got shape {A.shape}")
    row, value = _maximin(A)
    col, neg_value = _maximin(-A.T)
    if max_support:
        row, col = _max_support(A, row, value), _max_support(-A.T, col, neg_value)
    return ZeroSumSolution(row=row, col=col, value=value)


def is_constant_sum(payoffs: np.ndarray, atol: float = 1e-6) -> bool:
    """True when every entry's payoffs sum to the same constant."""
    total = np.asarray(payoffs).sum(0)
    scale = max(1.0, float(np.abs(payoffs).max()))
    return bool(np.all(np.abs(total - total.flat[0]) <= atol * scale))


@register_meta_solver("nash")
def nash(payoffs: np.ndarray) -> list[np.ndarray]:
    """Nash equilibrium of a 2-player zero-sum or constant-sum empirical game (LP)."""
    payoffs = check_payoffs(payoffs)
    if payoffs.shape[0] != 2 or not is_constant_sum(payoffs):
        raise ValueError(
            f"meta-solver 'nash' needs a 2-player zero-sum (constant-sum) game; got "
            f"{payoffs.shape[0]} players{'' if payoffs.shape[0] != 2 else ', general-sum'}; "
            "use 'prd' for general-sum or n-player games"
        )
    # Subtracting player 1's payoff keeps the LP exact for constant-sum games.
    sol = zero_sum_nash(0.5 * (payoffs[0] - payoffs[1]))
    return [sol.row, sol.col]


# -------------------------------------------------------------------- replicator dynamics
@dataclass(frozen=True)
class PRDConfig:
    """Projected replicator dynamics settings (OpenSpiel's defaults except iterations)."""

    iterations: int = 20_000  # Euler steps
    dt: float = 1e-3  # step size (in units of payoff)
    gamma: float = 1e-6  # exploration: each probability stays >= about gamma / K
    average_last: int | None = None  # average the last this many iterates (None: all)


def _project(x: np.ndarray, gamma: float) -> np.ndarray:
    """OpenSpiel's projection onto the gamma-interior of the simplex."""
    x = np.maximum(x, gamma / x.size)
    return x / x.sum()


def projected_replicator_dynamics(
    payoffs: np.ndarray,
    config: PRDConfig | None = None,
    initial: Sequence[np.ndarray] | None = None,
) -> list[np.ndarray]:
    """Run projected replicator dynamics from ``initial`` (uniform by default).

    Each step updates every player at once: ``x_p += dt * x_p * (u_p - x_p . u_p)`` with
    ``u_p`` the deviation payoffs against the others, then projects onto the simplex
    interior. Returns the average of the last ``average_last`` iterates, one ``[K_p]``
    distribution per player.
    """
    cfg = config or PRDConfig()
    payoffs = check_payoffs(payoffs)
    P = payoffs.shape[0]
    if initial is None:
        x = [np.full(k, 1.0 / k) for k in payoffs.shape[1:]]
    else:
        x = [_simplex(s) for s in initial]
    keep = cfg.iterations if cfg.average_last is None else cfg.average_last
    keep = max(1, min(keep, cfg.iterations))
    avg = [np.zeros_like(s) for s in x]
    for it in range(cfg.iterations):
        dev = [deviation_payoffs(payoffs, x, p) for p in range(P)]
        x = [
            _project(s + cfg.dt * s * (d - s @ d), cfg.gamma)
            for s, d in zip(x, dev, strict=True)
        ]
        if it >= cfg.iterations - keep:
            for a, s in zip(avg, x, strict=True):
                a += s
    return [_simplex(a) for a in avg] if cfg.iterations else x


@register_meta_solver("prd")
def prd(payoffs: np.ndarray) -> list[np.ndarray]:
    """Projected replicator dynamics with :class:`PRDConfig` defaults (any number of players,
    general-sum)."""
    return projected_replicator_dynamics(payoffs)


@register_meta_solver("uniform")
def uniform(payoffs: np.ndarray) -> list[np.ndarray]:
    """Every member equally: PSRO with this solver is fictitious play."""
    payoffs = check_payoffs(payoffs)
    return [np.full(k, 1.0 / k) for k in payoffs.shape[1:]]
