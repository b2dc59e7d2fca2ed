"""Ratings from match outcomes: Elo and a TrueSkill-style Bayesian rating (openskill's
Plackett-Luce model, Weng & Lin 2011), plus paired outcomes for role-asymmetric games.

Two snapshots meet in a *pair* of episodes with the same seed and roles swapped (X plays
team 0 and Y team 1, then Y team 0 and X team 1), so neither gets the easier side. X's
score in the pair is the sum of its team returns over both episodes; X wins the pair when
its score beats Y's. In a symmetric zero-sum game this is plain win/lose/draw; in a game
like ``simple_tag`` it compares how well each plays *both* roles against the other.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from openskill.models import PlackettLuce

ELO_START = 1000.0


@dataclass(frozen=True)
class PairOutcome:
    """Result of one role-swapped pair between snapshots ``a`` and ``b`` (score in [0, 1])."""

    a: int
    b: int
    score_a: float  # 1 win, 0.5 draw, 0 loss
    margin: float  # a's total return minus b's


def pair_outcome(a: int, b: int, a_total: float, b_total: float, tol: float = 1e-9) -> PairOutcome:
    """The pair's outcome: a draw when the totals differ by at most ``tol`` times the larger
    magnitude (at least 1): summed returns above ~1e7 differ by rounding alone."""
    diff = a_total - b_total
    draw = abs(diff) <= tol * max(1.0, abs(a_total), abs(b_total))
    score = 0.5 if draw else (1.0 if diff > 0 else 0.0)
    return PairOutcome(a, b, score, diff)


def elo_expected(ra: float, rb: float) -> float:
    """Probability that a player rated ``ra`` beats one rated ``rb``."""
    return 1.0 / (1.0 + 10.0 ** ((rb - ra) / 400.0))


@dataclass
class Ratings:
    """Elo and Plackett-Luce (μ, σ) per snapshot id, updated one outcome at a time."""

    k: float = 24.0  # Elo K-factor
    elo: dict[int, float] = field(default_factory=dict)
    mu: dict[int, float] = field(default_factory=dict)
    sigma: dict[int, float] = field(default_factory=dict)
    games: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._model = PlackettLuce()

    def ensure(self, sid: int) -> None:
        if sid not in self.elo:
            r = self._model.rating()
            self.elo[sid], self.mu[sid], self.sigma[sid], self.games[sid] = (
                ELO_START, r.mu, r.sigma, 0)

    def update(self, outcomes: Iterable[PairOutcome]) -> None:
        for o in outcomes:
            self.ensure(o.a)
            self.ensure(o.b)
            ea = elo_expected(self.elo[o.a], self.elo[o.b])
            delta = self.k * (o.score_a - ea)
            self.elo[o.a] += delta
            self.elo[o.b] -= delta
            ra = self._model.rating(mu=self.mu[o.a], sigma=self.sigma[o.a])
            rb = self._model.rating(mu=self.mu[o.b], sigma=self.sigma[o.b])
            ranks = [0, 0] if o.score_a == 0.5 else ([0, 1] if o.score_a > 0.5 else [1, 0])
            [[na], [nb]] = self._model.rate([[ra], [rb]], ranks=ranks)
            self.mu[o.a], self.sigma[o.a] = na.mu, na.sigma
            self.mu[o.b], self.sigma[o.b] = nb.mu, nb.sigma
            self.games[o.a] += 1
            self.games[o.b] += 1

    def conservative(self, sid: int) -> float:
        """μ − 3σ: the TrueSkill leaderboard score."""
        return self.mu[sid] - 3.0 * self.sigma[sid]

    def table(self) -> list[tuple[int, float, float, float, int]]:
        """``(snapshot, elo, mu, sigma, games)`` rows for the database."""
        return [(s, self.elo[s], self.mu[s], self.sigma[s], self.games[s]) for s in self.elo]

    def state_dict(self) -> dict[str, dict[int, float]]:
        return {"elo": dict(self.elo), "mu": dict(self.mu), "sigma": dict(self.sigma),
                "games": {s: float(n) for s, n in self.games.items()}}

    def load_state_dict(self, d: dict[str, dict]) -> None:
        self.elo = {int(s): float(v) for s, v in d["elo"].items()}
        self.mu = {int(s): float(v) for s, v in d["mu"].items()}
        self.sigma = {int(s): float(v) for s, v in d["sigma"].items()}
        self.games = {int(s): int(v) for s, v in d["games"].items()}

