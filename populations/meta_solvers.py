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
* ``uniform``: every member equally, which makes PSRO fictitious play;
* ``auto``: ``nash`` for a 2-player constant-sum empirical game, else ``prd``;
* ``least_exploitable``: for each player of a 2-player zero-sum game with an exactly known
  full game, the mixture of its population whose full-game best-response value for the
  opponent is smallest: Anytime PSRO's restricted distribution (McAleer et al., 2022,
  "Anytime PSRO for Two-Player Zero-Sum Games"), here exact, by one linear program per
  player (:func:`least_exploitable_mixture`). The Nash equilibrium of the empirical game
  only knows how members fare against each other and can be much more exploitable in the
  full game; this one is the least exploitable mixture the population allows, so its
  exploitability never increases as populations grow.

Every solver has one signature, ``solver(payoffs, full_game=None) -> list of
distributions``, where ``payoffs`` is ``[P, K_0, ..., K_{P-1}]`` (entry
``[p, i_0, ..., i_{P-1}]`` is player ``p``'s expected return when player ``q`` plays its
member ``i_q``) and ``full_game`` (:class:`FullGame`) the sequence-form best-response
problems behind the empirical game, which only solvers registered with
``full_game=True`` read (:func:`needs_full_game`; the others ignore it). Solvers register
by name with :func:`register_meta_solver`; :func:`get_meta_solver` raises ``ValueError``
listing the valid names. The functions here are pure (numpy in, numpy out) and testable
alone. PSRO calls a solver through :func:`solve_meta`, which checks what it returns (one
finite, non-negative distribution per player, of its population's size, summing to 1) and
reports a solver's exception or bad output in one line naming it (:class:`MetaSolverError`).
"""

from __future__ import annotations

import inspect
import os
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from games.core import where_raised
from games.registry import OWN_PACKAGES, defined_at, redefinition
from marl.configs import did_you_mean

MetaSolver = Callable[..., list[np.ndarray]]
"""``(payoffs [P, K_0, ..., K_{P-1}], full_game: FullGame | None = None)
-> [dist_0 [K_0], ..., dist_{P-1} [K_{P-1}]]``."""

_META_SOLVERS: dict[str, MetaSolver] = {}
_FULL_GAME: set[str] = set()  # names of the solvers that read ``full_game``


def register_meta_solver(name: str, full_game: bool = False) -> Callable[[MetaSolver], MetaSolver]:
    """Register a meta-solver under ``name`` (use as a decorator); ``full_game`` declares
    that it needs the :class:`FullGame` argument (an exactly known 2-player zero-sum game)."""

    def deco(fn: MetaSolver) -> MetaSolver:
        if name in _META_SOLVERS and not redefinition(_META_SOLVERS[name], fn):
            raise ValueError(f"meta-solver {name!r} is already registered by "
                             f"{defined_at(_META_SOLVERS[name])}; register yours under another "
                             "name")
        _META_SOLVERS[name] = fn  # a notebook cell run again: its new function replaces
        if full_game:
            _FULL_GAME.add(name)
        return fn

    return deco


def needs_full_game(name: str) -> bool:
    """Whether the meta-solver ``name`` needs the :class:`FullGame` behind the payoffs."""
    get_meta_solver(name)
    return name in _FULL_GAME


def available_meta_solvers() -> list[str]:
    """Registered meta-solver names."""
    return sorted(_META_SOLVERS)


def get_meta_solver(name: str) -> MetaSolver:
    """The meta-solver registered as ``name``.

    Raises:
        ValueError: ``name`` is unknown; the message lists the valid names.
    """
    if name not in _META_SOLVERS:  # installed packages' ``selfplay.meta_solvers`` entry points
        from games.registry import load_entry_points

        load_entry_points("selfplay.meta_solvers")
    if name not in _META_SOLVERS:
        raise ValueError(f"unknown meta-solver {name!r}; choose one of {available_meta_solvers()}"
                         "; a meta-solver of your own is registered by @register_meta_solver "
                         "(populations.meta_solvers) when its module is imported "
                         f"(selfplay-train imports=[module]){did_you_mean(name, _META_SOLVERS)}")
    return _META_SOLVERS[name]


class MetaSolverError(ValueError):
    """A meta-solver raised, or returned something other than one distribution per player:
    one line naming the solver (its name and function), what went wrong and, for an
    exception, the line of the solver's code that raised (``__cause__`` is the exception;
    ``HYDRA_FULL_ERROR=1`` shows its traceback on the command line). A ``ValueError``, so the
    command lines report it as a user error (exit 2)."""


DIST_TOL = 1e-6
"""How far a meta-solver's distribution may sum from 1 (and fall below 0: LP round-off,
clipped to 0) before it is refused."""


def solve_meta(name: str, payoffs: np.ndarray, full_game: FullGame | None = None,
               players: Sequence[str] | None = None) -> list[np.ndarray]:
    """The meta-solver ``name`` run on ``payoffs [P, K_0, ..., K_{P-1}]``: ``P``
    distributions ``[K_p]``, checked (see :func:`check_distributions`), entries within
    :data:`DIST_TOL` below 0 set to 0. ``players``: the players' names, for messages.

    Raises:
        MetaSolverError: a solver of the user's own raised (any exception: its message, type
            and line), or any solver returned something else than the distributions. A
            built-in's own ``ValueError`` (a game it does not solve) passes unchanged.
    """
    fn = get_meta_solver(name)
    try:
        dists = fn(payoffs, full_game=full_game)
    except Exception as err:
        if getattr(fn, "__module__", "").split(".")[0] in OWN_PACKAGES:
            raise  # the framework's own solvers say what they refuse themselves
        why = " ".join(str(err).split()) or "no message"
        raise MetaSolverError(
            f"meta-solver {name!r} ({defined_at(fn)}) raised {type(err).__name__}: {why} (at "
            f"{code_line(fn, err)}); HYDRA_FULL_ERROR=1 shows the traceback") from err
    return check_distributions(name, fn, dists, np.shape(payoffs)[1:], players)


def check_distributions(name: str, fn: object, dists: object, sizes: Sequence[int],
                        players: Sequence[str] | None = None) -> list[np.ndarray]:
    """``dists``, what the meta-solver ``name`` (function ``fn``) returned for populations of
    ``sizes`` ``[K_0, ..., K_{P-1}]``, as ``P`` float64 arrays ``[K_p]``: each finite,
    non-negative and summing to 1 (within :data:`DIST_TOL`; entries in ``[-DIST_TOL, 0)``
    become 0). Else :class:`MetaSolverError` naming the solver, the player and the value."""
    sizes = [int(k) for k in sizes]
    names = list(players) if players is not None and len(players) == len(sizes) else \
        [f"player {p}" for p in range(len(sizes))]
    want = (f"expected a list of {len(sizes)} distributions, one per player "
            f"({', '.join(names)}), of lengths {sizes}: finite, non-negative, each summing to 1")
    where = f"meta-solver {name!r} ({defined_at(fn)})"
    if isinstance(dists, (str, bytes)) or not isinstance(dists, (Sequence, np.ndarray)):
        raise MetaSolverError(f"{where} returned {type(dists).__name__}; {want}")
    if len(dists) != len(sizes):
        raise MetaSolverError(f"{where} returned {len(dists)} distribution"
                              f"{'s' if len(dists) != 1 else ''} for {len(sizes)} players; "
                              f"{want}")
    out = []
    for who, k, dist in zip(names, sizes, dists, strict=True):
        try:
            x = np.asarray(dist, dtype=np.float64)
        except (TypeError, ValueError):
            raise MetaSolverError(f"{where} returned {type(dist).__name__} for {who}, not "
                                  f"numbers; {want}") from None
        bad = None
        if x.shape != (k,):
            bad = (f"an array of shape {x.shape} for {who}, whose population has {k} "
                   f"member{'s' if k != 1 else ''}")
        elif not np.all(np.isfinite(x)):
            bad = f"a non-finite probability ({x[~np.isfinite(x)][0]}) for {who}"
        elif x.min() < -DIST_TOL:
            bad = f"a negative probability ({x.min():.6g}) for {who}"
        elif abs(x.sum() - 1.0) > DIST_TOL:
            bad = f"a distribution summing to {x.sum():.6g} for {who}"
        if bad is not None:
            raise MetaSolverError(f"{where} returned {bad}; {want}")
        out.append(np.where(x < 0.0, 0.0, x) if x.min() < 0.0 else x)
    return out


def code_line(fn: object, err: BaseException) -> str:
    """``file:line in function`` where ``err`` was raised in the code of ``fn`` (a registered
    function of the user's): the innermost frame in ``fn``'s file (its path from the working
    directory when below it), else the innermost outside the standard library and installed
    packages (:func:`games.core.where_raised`)."""
    try:
        own = inspect.getsourcefile(fn)  # type: ignore[arg-type]
    except TypeError:
        own = None
    frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename == own]
    if not frames:
        return where_raised(err)
    frame = frames[-1]
    rel = os.path.relpath(frame.filename)  # the user's project: a path from where they run
    return f"{frame.filename if rel.startswith('..') else rel}:{frame.lineno} in {frame.name}"


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
    from scipy.optimize import linprog  # scipy.optimize takes 0.3 s to import; CLI startup

    m, n = A.shape
    c = np.zeros(m + 1)
    c[-1] = -1.0  # maximize v
    a_ub = np.hstack([-A.T, np.ones((n, 1))])  # v - x^T A[:, j] <= 0
    a_eq = np.hstack([np.ones((1, m)), np.zeros((1, 1))])
    bounds = [(0.0, None)] * m + [(None, None)]
    res = linprog(
        c, A_ub=a_ub, b_ub=np.zeros(n), A_eq=a_eq, b_eq=[1.0], bounds=bounds, method="highs"
    )
    if not res.success:  # pragma: no cover - a finite matrix game always has a solution
        raise RuntimeError(f"Nash LP failed: {res.message}")
    return _simplex(res.x[:m], LP_NOISE), float(res.x[-1])


SUPPORT_MIN = 1e-6
"""A member belongs to the support of some maximin strategy when one gives it at least this
probability (members whose deficit is ``g`` reach only about ``1e-9 * scale / g``)."""


def _max_support(A: np.ndarray, x0: np.ndarray, value: float, y: np.ndarray) -> np.ndarray:
    """A maximin strategy of largest support: in the relative interior of the optimal face.

    For each member outside the support found so far that is a best response to the
    opponent's equilibrium strategy ``y`` (only those can be played by an equilibrium, by
    complementary slackness), one LP over the face (mixtures that guarantee ``value`` up to
    round-off) maximizes that member's probability; the mean of ``x0`` and every solution
    that gives a new member at least :data:`SUPPORT_MIN` is a maximin strategy whose support
    is the union of all of theirs. Falls back to ``x0`` if round-off leaves the mean short
    of ``value``.

    (A single LP over the cone of the face, ``A^T z >= (value - tol) sum(z)`` with ``z``
    scaled freely, does not work: scaling an optimal ``z`` up multiplies the tolerance's
    slack, which then covers any member at weight ``~1e-10``, later dropped as noise, so
    degenerate games came back at the simplex method's vertex.)
    """
    from scipy.optimize import linprog

    m, n = A.shape
    scale = max(1.0, float(np.abs(A).max()))
    floor = value - 1e-9 * scale
    points = [x0]
    covered = (x0 >= SUPPORT_MIN) | (A @ y < value - 1e-7 * scale)  # in, or surely out
    for i in range(m):
        if covered[i]:
            continue
        c = np.zeros(m)
        c[i] = -1.0  # maximize x_i
        res = linprog(c, A_ub=-A.T, b_ub=np.full(n, -floor), A_eq=np.ones((1, m)), b_eq=[1.0],
                      bounds=[(0.0, None)] * m, method="highs")
        if res.success and res.x[i] >= SUPPORT_MIN:
            x = _simplex(res.x, LP_NOISE)
            points.append(x)
            covered |= x >= SUPPORT_MIN
    if len(points) == 1:
        return x0
    x = _simplex(np.mean(points, axis=0), LP_NOISE)
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
    # HiGHS' tolerances are absolute: solve at unit scale so a game paid in thousandths is
    # solved as accurately as one paid in units (and the support tests below stay relative)
    scale = float(np.abs(A).max()) or 1.0
    B = A / scale
    row, value = _maximin(B)
    col, neg_value = _maximin(-B.T)
    if max_support:
        row, col = _max_support(B, row, value, col), _max_support(-B.T, col, neg_value, row)
    return ZeroSumSolution(row=row, col=col, value=value * scale)


def is_constant_sum(payoffs: np.ndarray, atol: float = 1e-6) -> bool:
    """True when every entry's payoffs sum to the same constant (within ``atol`` times the
    largest payoff: a game paid in 1e-7 is judged as the same game paid in units)."""
    payoffs = np.asarray(payoffs)
    total = payoffs.sum(0)
    scale = float(np.abs(payoffs).max()) if payoffs.size else 0.0
    return scale == 0.0 or bool(np.all(np.abs(total - total.flat[0]) <= atol * scale))


@register_meta_solver("nash")
def nash(payoffs: np.ndarray, full_game: FullGame | None = None) -> list[np.ndarray]:
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
    """Clip each probability at ``gamma / K`` and renormalize: OpenSpiel's approximate
    projection (``use_approx=True``), whose floor is ``gamma`` itself (Lanctot et al. 2017:
    ``gamma / (K + 1)``); OpenSpiel's default is the exact L2 projection. With the same floor
    and steps the two runs agree to 2e-4 (OpenSpiel also averages the initial point in);
    with both libraries' defaults (20,000 steps), to 3e-5."""
    x = np.maximum(x, gamma / x.size)
    return x / x.sum()


BLOCK_SIZE = 64
"""Up to this many members in all, projected replicator dynamics works with ``[K, K]``
matrices over all players' members (``K`` the total: a block matrix of a 2-player game's
payoffs, per-player sums): one numpy call where per-player ones would cost more; above it,
their ``K**2`` products would (200 x 200: 3x slower than per player)."""


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

    The players' mixtures live in one vector and each step is a fixed handful of numpy
    calls on it (for 2 players with up to :data:`BLOCK_SIZE` members in all, one block
    matrix product gives both players' deviation payoffs): the step is Python-bound on
    meta-games, and 20,000 of them ran about 5x slower one player and one ``tensordot`` at
    a time (2.3x on 200 x 200; bench/prd41_bench.py). Same arithmetic up to float
    rounding.
    """
    cfg = config or PRDConfig()
    payoffs = check_payoffs(payoffs)
    sizes = payoffs.shape[1:]
    x = [np.full(k, 1.0 / k) for k in sizes] if initial is None else [_simplex(s) for s in initial]
    if not cfg.iterations:
        return x
    keep = cfg.iterations if cfg.average_last is None else cfg.average_last
    keep = max(1, min(keep, cfg.iterations))
    z = np.concatenate(x)  # every player's mixture; updated in place, so views stay valid
    owner = np.repeat(np.arange(len(sizes)), sizes)
    floor = cfg.gamma / np.asarray(sizes, dtype=np.float64)[owner]
    if z.size <= BLOCK_SIZE:  # one small matrix product: each entry's player's sum
        same = (owner[:, None] == owner[None, :]).astype(np.float64)
        sums: Callable[[np.ndarray], np.ndarray] = same.__matmul__
    else:  # O(K) where a K x K product would cost more than the calls it saves
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        sums = lambda v: np.add.reduceat(v, starts)[owner]  # noqa: E731
    deviations = _deviations(payoffs, z)
    dt = cfg.dt
    step = np.empty_like(z)
    avg = np.zeros_like(z)

    def advance() -> None:
        d = deviations()
        np.multiply(z, d, out=step)
        d -= sums(step)  # u_p - x_p . u_p
        np.multiply(z, dt, out=step)
        np.multiply(step, d, out=step)
        np.add(z, step, out=z)
        np.maximum(z, floor, out=z)
        np.divide(z, sums(z), out=z)

    for _ in range(cfg.iterations - keep):
        advance()
    for _ in range(keep):
        advance()
        avg += z
    return [_simplex(a) for a in np.split(avg, np.cumsum(sizes)[:-1])]


def _deviations(payoffs: np.ndarray, z: np.ndarray) -> Callable[[], np.ndarray]:
    """A function returning every player's deviation payoffs (``deviation_payoffs``),
    stacked like ``z``, the players' mixtures stacked, read at each call."""
    sizes = payoffs.shape[1:]
    cuts = np.cumsum(sizes)[:-1]
    xs = np.split(z, cuts)  # views
    out = np.empty_like(z)
    outs = np.split(out, cuts)
    if len(sizes) == 2 and z.size <= BLOCK_SIZE:  # both players in one product
        block = np.zeros((z.size, z.size))
        block[:sizes[0], sizes[0]:] = payoffs[0]
        block[sizes[0]:, :sizes[0]] = payoffs[1].T
        return lambda: block @ z
    if len(sizes) == 2:
        row, col = payoffs[0], np.ascontiguousarray(payoffs[1].T)

        def two() -> np.ndarray:
            np.matmul(row, xs[1], out=outs[0])
            np.matmul(col, xs[0], out=outs[1])
            return out
        return two
    # Each player's axis first, the others in order: contract the last axis each time.
    plans = []
    for p in range(len(sizes)):
        t = np.ascontiguousarray(np.moveaxis(payoffs[p], p, 0))
        others = [q for q in reversed(range(len(sizes))) if q != p]
        chain = [(xs[q], sizes[nxt]) for q, nxt in zip(others, others[1:], strict=False)]
        plans.append((t.reshape(-1, sizes[others[0]]), chain, xs[others[-1]], outs[p]))

    def deviations() -> np.ndarray:
        for t, chain, last, dst in plans:
            for xq, k_next in chain:
                t = (t @ xq).reshape(-1, k_next)
            np.matmul(t, last, out=dst)
        return out
    return deviations


@register_meta_solver("prd")
def prd(payoffs: np.ndarray, full_game: FullGame | None = None) -> list[np.ndarray]:
    """Projected replicator dynamics with :class:`PRDConfig` defaults (any number of players,
    general-sum), run on the payoffs divided by their largest magnitude.

    ``dt`` is in payoff units, so on raw payoffs a game paid in thousandths would move a
    thousand times slower and stay near uniform after its 20,000 steps (PSRO passes its
    empirical payoffs as measured). Rescaling changes only the dynamics' time scale, not
    their fixed points: the same game gives the same mixture in any unit, the one OpenSpiel's
    defaults give where the largest payoff is 1 (``zero_sum_nash`` rescales likewise).
    """
    payoffs = check_payoffs(payoffs)
    scale = float(np.abs(payoffs).max()) or 1.0
    return projected_replicator_dynamics(payoffs / scale)


@register_meta_solver("auto")
def auto(payoffs: np.ndarray, full_game: FullGame | None = None) -> list[np.ndarray]:
    """``nash`` when the empirical game is 2-player and constant-sum, else ``prd``: decided
    on each iteration's payoffs (a game constant-sum by its rules stays on ``nash``; PSRO's
    experiment layer settles it up front where the game declares it, ``psro_run``)."""
    payoffs = check_payoffs(payoffs)
    if payoffs.shape[0] == 2 and is_constant_sum(payoffs):
        return nash(payoffs)
    return prd(payoffs)


@register_meta_solver("uniform")
def uniform(payoffs: np.ndarray, full_game: FullGame | None = None) -> list[np.ndarray]:
    """Every member equally: PSRO with this solver is fictitious play."""
    payoffs = check_payoffs(payoffs)
    return [np.full(k, 1.0 / k) for k in payoffs.shape[1:]]


# ------------------------------------------------------- least-exploitable restricted mixture
@dataclass(frozen=True)
class ResponseProblem:
    """One player's full-game best response to mixtures of the other player's members, in
    sequence form (Koller, Megiddo & von Stengel, 1994; von Stengel, 1996).

    The responder picks a realization plan ``y [Q]`` over its sequences: ``y[0] = 1`` on the
    empty sequence and, at each of its information states ``s``, ``y[parent[s]]`` equals the
    sum of ``y`` over the sequences ending at ``s``. Against the mixture ``w [K]`` of the
    other player's members its expected return is ``y @ payoff @ w``, linear in both.

    Attributes:
        payoff: ``[Q, K]`` the responder's return collected at each of its sequences (chance
            and the member's own action probabilities included) against each member.
        seq_state: ``[Q]`` the responder's information state at which sequence ``j`` ends
            with an action (-1 for the empty sequence ``0``).
        parent: ``[S]`` the sequence leading to each of the responder's information states.
        depth: ``[S]`` number of the responder's own decisions before each state.
    """

    payoff: np.ndarray
    seq_state: np.ndarray
    parent: np.ndarray
    depth: np.ndarray


@dataclass(frozen=True)
class LeastExploitable:
    """A least-exploitable mixture of one player's members, and the opponent strategy that
    exploits the population most.

    Attributes:
        weights: ``[K]`` the mixture.
        value: the opponent's full-game best-response value against it (recomputed exactly
            for ``weights``); the player's exploitability is ``value`` minus the opponent's
            game value.
        lp_value: the linear program's optimum (equal to ``value`` up to LP tolerance).
        exploiter: ``[Q]`` the opponent's realization plan from the LP's dual: a full-game
            strategy earning at least ``lp_value`` against every mixture of the members (an
            equilibrium strategy of the game in which the player is restricted to its
            members and the opponent is not).
    """

    weights: np.ndarray
    value: float
    lp_value: float
    exploiter: np.ndarray


@dataclass(frozen=True)
class FullGame:
    """The exactly known 2-player constant-sum game behind an empirical game.

    Attributes:
        responses: ``responses[p]`` is the other player's best-response problem against
            player ``p``'s members (:class:`ResponseProblem`, ``K = K_p``).
        constant: the players' returns sum to this at every terminal (0: zero-sum).
    """

    responses: tuple[ResponseProblem, ResponseProblem]
    constant: float = 0.0
    _solved: dict[int, LeastExploitable] = field(default_factory=dict, repr=False, compare=False)

    def least_exploitable(self, p: int) -> LeastExploitable:
        """:func:`least_exploitable_mixture` of player ``p``'s members (solved once)."""
        if p not in self._solved:
            self._solved[p] = least_exploitable_mixture(self.responses[p])
        return self._solved[p]


def best_response_value(problem: ResponseProblem, weights: np.ndarray) -> float:
    """The responder's best-response value against the mixture ``weights [K]``: deepest
    information states first, each state's value is its best sequence's payoff plus the
    values of the states that sequence leads to."""
    base = problem.payoff @ np.asarray(weights, np.float64)  # [Q]
    acts = np.flatnonzero(problem.seq_state >= 0)
    state_value = np.zeros(len(problem.parent))
    below = np.zeros(len(base))  # values of the states each sequence leads to
    for d in range(int(problem.depth.max(initial=0)), -1, -1):
        rows = np.flatnonzero(problem.depth == d)
        here = acts[problem.depth[problem.seq_state[acts]] == d]
        best = np.full(len(problem.parent), -np.inf)
        np.maximum.at(best, problem.seq_state[here], base[here] + below[here])
        state_value[rows] = best[rows]
        np.add.at(below, problem.parent[rows], state_value[rows])
    return float(base[0] + below[0])


def least_exploitable_mixture(problem: ResponseProblem) -> LeastExploitable:
    """The mixture ``w`` of the members minimizing the responder's best-response value.

    The best-response value is the linear program ``max y @ payoff @ w`` over realization
    plans ``y``; its dual has one free variable ``v_s`` per information state (the state's
    value) and ``v_0`` for the root: ``v_0 >= payoff[0] @ w + sum of v_s over the first
    states`` and, for each sequence ``j`` ending at state ``s``,
    ``v_s >= payoff[j] @ w + sum of v_t over the states t that j leads to``. Minimizing
    ``v_0`` jointly over ``v`` and ``w`` in the simplex is one LP (HiGHS), of
    ``K + 1 + S`` variables and ``Q`` inequalities. The inequalities' dual values are the
    responder's realization plan ``y`` of the max-min problem (the ``exploiter``).
    """
    from scipy import sparse
    from scipy.optimize import linprog

    payoff = np.asarray(problem.payoff, np.float64)
    Q, K = payoff.shape
    S = len(problem.parent)
    acts = np.flatnonzero(problem.seq_state >= 0)
    # Variables [w (K), v_0, v (S)]; row j: payoff[j] @ w + sum_{parent[t]=j} v_t - V_j <= 0.
    rows = np.concatenate([problem.parent, acts, [0]])
    cols = np.concatenate([1 + np.arange(S), 1 + problem.seq_state[acts], [0]])  # of [v_0, v]
    vals = np.concatenate([np.ones(S), -np.ones(len(acts)), [-1.0]])
    values_part = sparse.csr_matrix((vals, (rows, cols)), shape=(Q, S + 1))
    a_ub = sparse.hstack([sparse.csr_matrix(payoff), values_part], format="csr")
    a_eq = sparse.csr_matrix(np.concatenate([np.ones(K), np.zeros(S + 1)])[None])
    c = np.zeros(K + 1 + S)
    c[K] = 1.0
    bounds = [(0.0, None)] * K + [(None, None)] * (S + 1)
    res = linprog(
        c,
        A_ub=a_ub,
        b_ub=np.zeros(Q),
        A_eq=a_eq,
        b_eq=[1.0],
        bounds=bounds,
        method="highs",
        options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
    )
    if not res.success:  # pragma: no cover - bounded and feasible by construction
        raise RuntimeError(f"least-exploitable mixture LP failed: {res.message}")
    weights = _simplex(res.x[:K], LP_NOISE)
    exploiter = np.clip(-res.ineqlin.marginals, 0.0, None)  # >= 0 up to round-off
    return LeastExploitable(
        weights=weights,
        value=best_response_value(problem, weights),
        lp_value=float(res.fun),
        exploiter=exploiter,
    )


@register_meta_solver("least_exploitable", full_game=True)
def least_exploitable(payoffs: np.ndarray, full_game: FullGame | None = None) -> list[np.ndarray]:
    """For each player, the mixture of its members least exploitable in the full game
    (Anytime PSRO's restricted distribution, solved exactly); needs ``full_game``."""
    payoffs = check_payoffs(payoffs)
    if full_game is None:
        raise ValueError(
            "meta-solver 'least_exploitable' needs the exact full game behind the payoffs "
            "(a 2-player zero-sum enumerable OpenSpiel game with exact payoffs); got none"
        )
    if payoffs.shape[0] != 2:
        raise ValueError(
            f"meta-solver 'least_exploitable' is for 2-player games; got {payoffs.shape[0]} players"
        )
    dists = []
    for p, problem in enumerate(full_game.responses):
        if problem.payoff.shape[1] != payoffs.shape[1 + p]:
            raise ValueError(
                f"full_game has {problem.payoff.shape[1]} members of player {p}, "
                f"payoffs {payoffs.shape[1 + p]}"
            )
        dists.append(full_game.least_exploitable(p).weights)
    return dists
